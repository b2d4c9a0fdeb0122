// `clawpeer rendezvous` as a user runs it: it prints where it serves, answers a reflection on P
// and P+1 (the NAT-kind probe doctor runs says "none" on loopback), stops cleanly on SIGTERM
// with its counts; a bad flag is a usage error naming it.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import t from 'tap';
import { silentLogger } from '../../src/logger.js';
import { probeNatKind } from '../../src/reach/nat-kind.js';
import { CLI, runCli } from './cli-harness.js';

t.test('serves, reflects on both ports, stops on SIGTERM', async (t) => {
  const child = spawn(
    process.execPath,
    [CLI, '--json', 'rendezvous', '--listen', '127.0.0.1:0', '--relay-rate', '1MiB'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  t.teardown(() => void child.kill('SIGKILL'));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const first = JSON.parse(String((await lines.next()).value)) as Record<string, unknown>;
  t.match(first, {
    event: 'rendezvous',
    host: '127.0.0.1',
    relayBytesPerSecond: 1024 * 1024,
    relaySessionsPerNode: 16,
    requestsPerIpPerSecond: 20,
  });
  t.equal(first['reflectPort'], Number(first['port']) + 1);
  const probe = await probeNatKind({
    rendezvous: { host: '127.0.0.1', port: Number(first['port']) },
    log: silentLogger,
    host: '127.0.0.1',
  });
  t.equal(probe.kind, 'none', 'loopback is no NAT');
  t.same(probe.reflexive[0], probe.local, 'P saw our own address');
  t.same(probe.reflexive[1], probe.local, 'and so did P+1');
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  child.kill('SIGTERM');
  const last = JSON.parse(String((await lines.next()).value)) as Record<string, unknown>;
  t.match(last, { event: 'stopped', counters: { refused: 0 } });
  t.equal(await exited, 0, 'a clean exit, as the relay');
});

t.test('a bad --relay-rate is a usage error naming it', async (t) => {
  const r = await runCli(['rendezvous', '--listen', '127.0.0.1:0', '--relay-rate', 'lots']);
  t.equal(r.code, 2);
  t.match(r.stderr, /--relay-rate "lots"/);
});
