// A relay that misbehaves: it flips bytes, replays datagrams, or swaps two sessions. QUIC's
// packet protection (TLS keys end to end) turns each into a dropped packet, a duplicate or a
// connection that fails cleanly: nothing wrong lands. And the relay itself sees no plaintext:
// neither in what it forwards nor in its own log.
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createLogger, silentLogger } from '../../src/logger.js';
import { push } from '../../src/push-pull/transfer-client.js';
import { ClawpeerError } from '../../src/errors.js';
import type { HostPort } from '../../src/transport/types.js';
import { dialThrough, startReachLab, type Dialled, type ReachLab } from './reach-kit.js';

type Tamper = (bytes: Uint8Array, to: HostPort) => { bytes: Uint8Array; to: HostPort }[];
let tamper: Tamper = (bytes, to) => [{ bytes, to }];
const seen: Buffer[] = [];
const logLines: string[] = [];
let tap = false;
const lab: ReachLab = await startReachLab({
  log: createLogger('test', 3, (l) => void logLines.push(l)),
  config: { idleTimeoutMs: 3_000, keepAliveMs: 1_000, connectTimeoutMs: 3_000, handshakeTimeoutMs: 3_000 },
  tamper: (bytes, to) => {
    if (tap) seen.push(Buffer.from(bytes));
    return tamper(bytes, to);
  },
});
t.teardown(() => lab.close());
const work = await mkdtemp(path.join(tmpdir(), 'clawpeer-tamper-'));
t.teardown(() => rm(work, { recursive: true, force: true }));
const relayed = (): Promise<Dialled> => dialThrough(lab, 'traversal', { disable: ['punched'] });
const MARK = 'PLAINTEXT-MARKER-7f3a9c';

/** Pushes `name`; resolves whether it landed, and checks that what landed is exactly what was sent. */
async function pushChecked(t: Test, d: Dialled, name: string, size: number): Promise<'landed' | 'failed'> {
  const bytes = Buffer.concat([Buffer.from(MARK.repeat(64)), randomBytes(size)]);
  await writeFile(path.join(work, name), bytes);
  try {
    await push({
      session: d.session,
      share: 'inbox',
      remotePath: '',
      localPath: path.join(work, name),
      force: true,
      streams: 1,
      window: 8,
      idleTimeoutMs: 3_000,
      log: silentLogger,
      signal: AbortSignal.timeout(20_000),
    });
  } catch (err) {
    t.ok(err instanceof ClawpeerError, `failed cleanly: ${(err as Error).message}`);
    t.notOk(existsSync(path.join(lab.inbox, name)), 'nothing landed under the name');
    return 'failed';
  }
  t.ok(
    Buffer.compare(await readFile(path.join(lab.inbox, name)), bytes) === 0,
    'what landed is byte for byte what was sent',
  );
  return 'landed';
}

t.test('flipped bytes: each such datagram is dropped by QUIC and sent again; the file lands intact', async (t) => {
  const d = await relayed();
  t.teardown(() => d.close());
  let flipped = 0;
  let big = 0;
  // Every 8th large datagram, so a retransmission is not itself flipped (that only backs off).
  tamper = (bytes, to) => {
    if (bytes.length > 1000 && ++big % 8 === 0 && flipped < 20) {
      flipped++;
      const copy = Buffer.from(bytes);
      copy[copy.length - 40] = (copy[copy.length - 40] ?? 0) ^ 0x01;
      return [{ bytes: copy, to }];
    }
    return [{ bytes, to }];
  };
  t.equal(await pushChecked(t, d, 'flip.bin', 512 * 1024), 'landed');
  t.equal(flipped, 20, 'twenty datagrams were altered');
  tamper = (bytes, to) => [{ bytes, to }];
});

t.test('every datagram flipped: the connection fails cleanly, nothing lands', async (t) => {
  const d = await relayed();
  t.teardown(() => d.close());
  tamper = (bytes, to) => {
    const copy = Buffer.from(bytes);
    copy[copy.length - 1] = (copy[copy.length - 1] ?? 0) ^ 0x80;
    return [{ bytes: copy, to }];
  };
  t.equal(await pushChecked(t, d, 'all-flipped.bin', 256 * 1024), 'failed');
  tamper = (bytes, to) => [{ bytes, to }];
});

t.test(
  'replayed datagrams (each sent twice, old ones again later): duplicates are discarded, the file lands intact',
  async (t) => {
    const d = await relayed();
    t.teardown(() => d.close());
    const old: { bytes: Uint8Array; to: HostPort }[] = [];
    let n = 0;
    tamper = (bytes, to) => {
      const out = [
        { bytes, to },
        { bytes: Buffer.from(bytes), to },
      ];
      if (old.length < 50) old.push({ bytes: Buffer.from(bytes), to });
      if (++n % 10 === 0) out.push(...old.splice(0, 5));
      return out;
    };
    t.equal(await pushChecked(t, d, 'replay.bin', 512 * 1024), 'landed');
    tamper = (bytes, to) => [{ bytes, to }];
  },
);

t.test(
  'two sessions swapped by the relay: each connection still ends at its pinned peer or fails; nothing wrong lands',
  async (t) => {
    const d1 = await relayed();
    const d2 = await relayed();
    t.teardown(async () => {
      await d1.close();
      await d2.close();
    });
    const token = (b: Uint8Array): string => Buffer.from(b.subarray(5, 13)).toString('hex');
    // Learn each session's token and the dialer's address from what passes, then cross them over.
    const dialerOf = new Map<string, HostPort>();
    const listenerMux = lab.reach.mux;
    tamper = (bytes, to) => {
      const tk = token(bytes);
      if (to.port !== listenerMux.port) dialerOf.set(tk, to);
      const tokens = [...dialerOf.keys()];
      if (tokens.length < 2) return [{ bytes, to }];
      const other = tokens.find((x) => x !== tk);
      if (other === undefined) return [{ bytes, to }];
      const swapped = Buffer.from(bytes);
      Buffer.from(other, 'hex').copy(swapped, 5);
      return [{ bytes: swapped, to: to.port === listenerMux.port ? to : (dialerOf.get(other) ?? to) }];
    };
    // Warm both so the relay learns both dialers' addresses.
    const results = await Promise.all([
      pushChecked(t, d1, 'swap-1.bin', 256 * 1024),
      pushChecked(t, d2, 'swap-2.bin', 256 * 1024),
    ]);
    t.ok(
      results.every((r) => r === 'landed' || r === 'failed'),
      `outcomes: ${results.join(', ')}`,
    );
    t.equal(d1.session.peerId, lab.listenerId.nodeId, 'session 1 still talks to the pinned listener');
    t.equal(d2.session.peerId, lab.listenerId.nodeId, 'session 2 too');
    tamper = (bytes, to) => [{ bytes, to }];
  },
);

t.test('the relay sees only ciphertext: no plaintext in what it forwards, none in its log', async (t) => {
  const d = await relayed();
  t.teardown(() => d.close());
  seen.length = 0;
  tap = true;
  t.equal(await pushChecked(t, d, 'secret-name-4be1.bin', 64 * 1024), 'landed');
  tap = false;
  t.ok(seen.length > 20, `${seen.length} datagrams relayed`);
  const all = Buffer.concat(seen);
  t.equal(all.indexOf(MARK), -1, "the file's bytes never pass in the clear");
  t.equal(all.indexOf('secret-name-4be1'), -1, 'nor its name');
  t.equal(all.indexOf('inbox'), -1, 'nor the share name');
  const log = logLines.filter((l) => l.includes('rendezvous')).join('');
  t.notMatch(log, /PLAINTEXT-MARKER|secret-name|inbox/, "the relay's log names none of it");
});
