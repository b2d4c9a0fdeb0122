// Which ways a dial tries: --addr alone; else pinned, last and LAN (loopback only for a peer
// pinned on loopback), and the rendezvous slot (a note when none is named).
import t from 'tap';
import { generateIdentity } from '../../src/crypto/identity.js';
import { DEFAULT_REACH_CONFIG } from '../../src/home/config-file.js';
import { silentLogger } from '../../src/logger.js';
import { pathSourcesFor, type RendezvousSourcesFactory } from '../../src/reach/path-sources.js';
import type { DialCandidate, PathSource } from '../../src/reach/paths.js';

const identity = generateIdentity();
const bob = generateIdentity();
const peer = { id: bob.nodeId, publicKey: bob.publicKey, name: 'bob' };

async function first(source: PathSource): Promise<DialCandidate | Error> {
  try {
    for await (const c of source.find(peer, AbortSignal.timeout(2000))) return c;
    return new Error('nothing');
  } catch (err) {
    return err as Error;
  }
}

t.test('a typed address is the only source', async (t) => {
  const p = pathSourcesFor({
    config: DEFAULT_REACH_CONFIG,
    identity,
    peer: { ...peer, address: { host: '192.0.2.9', port: 1 } },
    typedAddress: { host: '192.0.2.7', port: 7700 },
    log: silentLogger,
  });
  t.same(
    p.sources.map((s) => s.name),
    ['direct'],
  );
  const c = await first(p.sources[0]!);
  t.same(
    [(c as DialCandidate).address, (c as DialCandidate).path(), (c as DialCandidate).describe],
    [{ host: '192.0.2.7', port: 7700 }, 'direct', 'direct 192.0.2.7:7700'],
  );
});

t.test('pinned, last, LAN and a rendezvous note; discovery off and no address says so', async (t) => {
  const p = pathSourcesFor({
    config: DEFAULT_REACH_CONFIG,
    identity,
    peer: { ...peer, address: { host: '192.0.2.7', port: 7700 } },
    lastAddress: { address: { host: '192.0.2.8', port: 7700 }, path: 'lan' },
    log: silentLogger,
  });
  t.same(
    p.sources.map((s) => s.name),
    ['direct', 'last', 'lan', 'rendezvous'],
  );
  t.match(await first(p.sources[3]!), { message: /none configured \(name one with --rendezvous HOST:PORT/ });
  const off = pathSourcesFor({
    config: { ...DEFAULT_REACH_CONFIG, lanDiscovery: false },
    identity,
    peer,
    log: silentLogger,
  });
  t.same(
    off.sources.map((s) => s.name),
    ['lan', 'rendezvous'],
  );
  t.match(await first(off.sources[0]!), { message: /LAN discovery is off/ });
});

t.test('a peer pinned on loopback is looked for on loopback only', async (t) => {
  const p = pathSourcesFor({
    config: {
      ...DEFAULT_REACH_CONFIG,
      lanDiscoveryPort: 40_000 + Math.floor(Math.random() * 20_000),
      lanDiscoveryTimeoutMs: 100,
    },
    identity,
    peer: { ...peer, address: { host: '127.0.0.1', port: 7700 } },
    log: silentLogger,
  });
  t.match(await first(p.sources.find((s) => s.name === 'lan')!), {
    message: /no answer on the LAN \(UDP port \d+, loopback\) within 100 ms/,
  });
});

t.test('a named rendezvous uses the injected client, released with the paths', async (t) => {
  let released = 0;
  const calls: string[] = [];
  const factory: RendezvousSourcesFactory = ({ rendezvous }) => {
    calls.push(`${rendezvous.host}:${rendezvous.port}`);
    const none: PathSource = { name: 'x', async *find() {} };
    return {
      lookup: { ...none, name: 'rendezvous-lookup' },
      traversal: { ...none, name: 'traversal' },
      release: () => {
        released++;
      },
    };
  };
  const p = pathSourcesFor({
    config: { ...DEFAULT_REACH_CONFIG, rendezvous: { host: '203.0.113.5', port: 7800 } },
    identity,
    peer,
    log: silentLogger,
    rendezvousSources: factory,
  });
  t.same(
    p.sources.map((s) => s.name),
    ['lan', 'rendezvous-lookup', 'traversal'],
  );
  t.same(calls, ['203.0.113.5:7800']);
  p.release();
  t.equal(released, 1);
});

t.test("CLAWPEER_REACH_DISABLE is named in the dial's error, with names it ignores", async (t) => {
  const before = process.env['CLAWPEER_REACH_DISABLE'];
  t.teardown(() => {
    if (before === undefined) delete process.env['CLAWPEER_REACH_DISABLE'];
    else process.env['CLAWPEER_REACH_DISABLE'] = before;
  });
  process.env['CLAWPEER_REACH_DISABLE'] = 'direct, relayed,bogus';
  const p = pathSourcesFor({
    config: { ...DEFAULT_REACH_CONFIG, lanDiscovery: false },
    identity,
    peer: { ...peer, address: { host: '192.0.2.7', port: 7700 } },
    log: silentLogger,
  });
  t.same(
    p.sources.map((s) => s.name),
    ['lan', 'CLAWPEER_REACH_DISABLE', 'rendezvous'],
    'no direct source: it is turned off',
  );
  t.match(await first(p.sources[1]!), {
    message:
      'turned off: direct, relayed; not path names, ignored: bogus (paths: lan, direct, mapped, punched, relayed)',
  });
  delete process.env['CLAWPEER_REACH_DISABLE'];
  t.notOk(
    pathSourcesFor({ config: DEFAULT_REACH_CONFIG, identity, peer, log: silentLogger }).sources.some(
      (s) => s.name === 'CLAWPEER_REACH_DISABLE',
    ),
    'unset: no note',
  );
});
