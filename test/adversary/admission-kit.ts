// Hostile clients for the admission suites (admission*.test.ts, test/slow/adversary/flood), built
// from the node's own parts so what reaches the listener is the real protocol:
// - a client handshake whose Hello stalls after its first byte until released (a peer holding
//   its handshake open across a `pair remove`);
// - a flood of connections with fresh Ed25519 keys (free to make), each refilled when the
//   listener drops it, holding its connection open and silent (or opening a stream and
//   stalling), and counting what the listener did to them;
// - a paired peer's probe: a fresh connection, its handshake and one ping.
// The flood runs in a child process of its own (floodFromChild): in the test's process its
// connect loop starved the paired peer's handshake of the event loop, which is the test's
// problem, not the listener's.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { generateIdentity, type Identity } from '../../src/crypto/identity.js';
import { clientHandshake, type ControlHandshakeResult } from '../../src/session/control-channel.js';
import { resolveConfig } from '../../src/home/config.js';
import { dialPeer } from '../../src/session/dialer.js';
import { resolvePeer } from '../../src/home/peer-resolve.js';
import type { PeerStore } from '../../src/home/peer-store.js';
import { pingPeer } from '../../src/session/ping.js';
import { PeerSession } from '../../src/session/session.js';
import { withTimeout } from '../../src/support/timeouts.js';
import { silentLogger } from '../../src/logger.js';
import { backendByName } from '../../src/transport/backends.js';
import type { Connection, DuplexStream } from '../../src/transport/types.js';

export type Transport = 'quic' | 'tcp';

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A transport connection of `identity` to 127.0.0.1:`port`; nothing sent on it yet. */
export async function rawConnect(
  transport: Transport,
  port: number,
  identity: Identity,
  idleTimeoutMs = 30_000,
): Promise<Connection> {
  return (await backendByName(transport)).connect({
    host: '127.0.0.1',
    port,
    identity,
    idleTimeoutMs,
    keepAliveMs: Math.min(5_000, idleTimeoutMs / 3),
  });
}

/** `inner` with its first write cut after one byte; the rest (and later writes) wait for release(). */
export function stallingStream(inner: DuplexStream): {
  stream: DuplexStream;
  firstByteSent: Promise<void>;
  release: () => void;
} {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let firstByteSent!: () => void;
  const sent = new Promise<void>((resolve) => (firstByteSent = resolve));
  let first = true;
  const stream: DuplexStream = {
    id: inner.id,
    async write(data) {
      if (first && data.length > 1) {
        first = false;
        await inner.write(data.slice(0, 1));
        firstByteSent();
        await released;
        return inner.write(data.slice(1));
      }
      await released;
      return inner.write(data);
    },
    read: (maxBytes) => inner.read(maxBytes),
    finish: () => inner.finish(),
    reset: () => inner.reset(),
  };
  return { stream, firstByteSent: sent, release };
}

/** A client handshake on `conn` whose Hello stops after one byte until release() is called. */
export async function stalledHandshake(
  conn: Connection,
  identity: Identity,
  listenerKey: Uint8Array,
): Promise<{ firstByteSent: Promise<void>; release(): void; result: Promise<ControlHandshakeResult | Error> }> {
  const control = await withTimeout(conn.openStream(), 10_000, 'opening the control stream');
  const stall = stallingStream(control);
  const result = clientHandshake(stall.stream, { identity, expectedRemoteKey: listenerKey, timeoutMs: 60_000 }).then(
    (r) => r,
    (e: unknown) => (e instanceof Error ? e : new Error(String(e))),
  );
  return { firstByteSent: stall.firstByteSent, release: stall.release, result };
}

/** What a stalled-then-completed handshake can still do: each request's outcome, as text. */
export async function tryRequests(
  conn: Connection,
  handshake: ControlHandshakeResult,
): Promise<{ ping: string; pull: string; push: string }> {
  const session = new PeerSession(conn, handshake);
  const answer = (ms: number): Promise<string> =>
    withTimeout(session.control.receive(), ms, "the listener's answer").then(
      (m) => (m === null ? 'closed' : `answered ${m.type}`),
      (e: unknown) => `refused: ${String(e)}`,
    );
  const ping = await session.control.send({ type: 'ping', seq: 1, sentTimeUs: 1 }).then(
    () => answer(10_000),
    (e: unknown) => `refused: ${String(e)}`,
  );
  const pull = await session.control
    .send({
      type: 'transfer-request',
      transferId: session.allocateTransferId(),
      direction: 'pull',
      share: 'inbox',
      path: '',
      force: false,
      streams: 1,
      window: 4,
    })
    .then(
      () => answer(10_000),
      (e: unknown) => `refused: ${String(e)}`,
    );
  const push = await session.control
    .send({
      type: 'transfer-request',
      transferId: session.allocateTransferId(),
      direction: 'push',
      share: 'inbox',
      path: '',
      force: false,
      streams: 1,
      window: 4,
    })
    .then(
      () => answer(10_000),
      (e: unknown) => `refused: ${String(e)}`,
    );
  return { ping, pull, push };
}

/** A paired peer's probe: a fresh connection (the connection budget is what a flood attacks), one ping. */
export async function probePing(
  identity: Identity,
  peers: PeerStore,
  listenerName: string,
  port: number,
  transport: Transport = 'quic',
): Promise<string> {
  const peer = await resolvePeer(peers, listenerName, `127.0.0.1:${port}`);
  const config = resolveConfig({ transport, connectTimeoutMs: 30_000, handshakeTimeoutMs: 30_000 });
  try {
    const session = await dialPeer({ identity, peer, config, log: silentLogger });
    try {
      for await (const p of pingPeer(session, { count: 1, intervalMs: 0, timeoutMs: 30_000 }))
        if (p.seq === 1) return 'ok';
      return 'no pong';
    } finally {
      await session.close().catch(() => undefined);
    }
  } catch (err) {
    return `failed: ${(err as Error).message}`;
  }
}

export interface FloodStats {
  /** Connections the transport completed (the listener's transport proved each fresh key). */
  connected: number;
  /** Of those, ended by the listener (or lost) while the flood held them. */
  dropped: number;
  /** Connect attempts that failed. */
  failed: number;
  /** Connections open now. */
  open: number;
  /** Highest `open` seen. */
  peakOpen: number;
}

export interface Flood {
  readonly stats: FloodStats;
  /** Stops refilling and closes every flood connection; the final figures. */
  stop(): Promise<FloodStats>;
  /** Why the flood stopped by itself, if it did (its process died). */
  readonly failure?: string | undefined;
}

export interface FloodOptions {
  readonly transport: Transport;
  readonly port: number;
  /** Connections kept open (or being opened) at once. */
  readonly connections: number;
  /**
   * silent: the connection only (never a stream: the old listener held each until its
   * handshake timeout); stall: a control stream and one byte of a frame header, then nothing.
   */
  readonly behaviour?: 'silent' | 'stall';
  /** Pause before refilling a dropped slot, ms (0: at once). */
  readonly refillDelayMs?: number;
}

/** Keeps `connections` unpaired connections with fresh keys against the listener until stopped. */
export function floodUnpaired(o: FloodOptions): Flood {
  const stats: FloodStats = { connected: 0, dropped: 0, failed: 0, open: 0, peakOpen: 0 };
  let stopped = false;
  const stopping = new AbortController();
  const stopSignal = new Promise<void>((resolve) =>
    stopping.signal.addEventListener('abort', () => resolve(), { once: true }),
  );
  const live = new Set<Connection>();
  const slot = async (): Promise<void> => {
    while (!stopped) {
      let conn: Connection;
      try {
        conn = await rawConnect(o.transport, o.port, generateIdentity(), 20_000);
      } catch {
        stats.failed++;
        await sleep(50);
        continue;
      }
      stats.connected++;
      stats.open++;
      stats.peakOpen = Math.max(stats.peakOpen, stats.open);
      live.add(conn);
      if (o.behaviour === 'stall') {
        void conn
          .openStream()
          .then(
            (s) => s.write(Uint8Array.of(1)),
            () => undefined,
          )
          .catch(() => undefined);
      }
      await Promise.race([conn.closed, stopSignal]);
      live.delete(conn);
      stats.open--;
      if (!stopped) stats.dropped++;
      await conn.close('flood over', { linger: false }).catch(() => undefined);
      if ((o.refillDelayMs ?? 0) > 0) await sleep(o.refillDelayMs ?? 0);
    }
  };
  const slots = Array.from({ length: o.connections }, () => slot());
  return {
    stats,
    async stop() {
      stopped = true;
      stopping.abort();
      await Promise.all([...live].map((c) => c.close('flood over', { linger: false }).catch(() => undefined)));
      await Promise.all(slots);
      return { ...stats };
    },
  };
}

/** The environment variable that makes this module, run as a script, a flood process. */
const FLOOD_ENV = 'CLAWPEER_ADMISSION_FLOOD';

/** floodUnpaired in a child process; `stats` is refreshed from it a few times a second. */
/** A flood process that made no connection (none made, none failed) this long after its start is taken for stuck and started again. */
const FLOOD_SILENT_RESTART_MS = 10_000;
const FLOOD_RESTARTS = 2;

export function floodFromChild(o: FloodOptions): Flood {
  const stats: FloodStats = { connected: 0, dropped: 0, failed: 0, open: 0, peakOpen: 0 };
  let final: ((s: FloodStats) => void) | undefined;
  let exitedEarly: string | undefined;
  let restarts = 0;
  // Seen in 2 of ~10 loaded runs: a flood process that never reported (no connection made, no
  // stats, alive). It is the harness that hangs, not the listener: start it again. Seen once
  // more (CI-like load, stop 48): one that reported all along but whose QUIC dials neither
  // connected nor failed for 95 s while the paired peer's pings to the same listener succeeded:
  // reports without progress count as silence too.
  const start = (): { child: ReturnType<typeof fork>; exited: Promise<void> } => {
    const child = fork(fileURLToPath(import.meta.url), [], {
      env: { ...process.env, [FLOOD_ENV]: JSON.stringify(o) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let heard = false;
    const silence = setTimeout(() => {
      if (heard || final !== undefined || restarts >= FLOOD_RESTARTS) return;
      restarts++;
      process.stderr.write(
        `# the flood process made no connection in ${FLOOD_SILENT_RESTART_MS} ms: started again (${restarts})\n`,
      );
      child.removeAllListeners('exit');
      child.kill('SIGKILL');
      current = start();
    }, FLOOD_SILENT_RESTART_MS);
    child.on('message', (m: { stats: FloodStats; final?: boolean }) => {
      if (m.stats.connected + m.stats.failed + m.stats.dropped > 0 || m.final === true) heard = true;
      Object.assign(stats, m.stats);
      if (m.final === true) final?.({ ...m.stats });
    });
    const exited = new Promise<void>((resolve) =>
      child.once('exit', (code, signal) => {
        clearTimeout(silence);
        if (final === undefined) exitedEarly = `the flood process exited early (code ${code}, signal ${signal})`;
        resolve();
      }),
    );
    return { child, exited };
  };
  let current = start();
  return {
    stats,
    get failure() {
      return exitedEarly;
    },
    async stop() {
      if (exitedEarly !== undefined) return { ...stats };
      const { child, exited } = current;
      const done = new Promise<FloodStats>((resolve) => (final = resolve));
      child.send('stop');
      const result = await withTimeout(done, 30_000, 'the flood process stopping').catch(() => ({ ...stats }));
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
      return result;
    },
  };
}

if (
  process.env[FLOOD_ENV] !== undefined &&
  process.send !== undefined &&
  process.argv[1] === fileURLToPath(import.meta.url)
) {
  const flood = floodUnpaired(JSON.parse(process.env[FLOOD_ENV]) as FloodOptions);
  const report = setInterval(() => process.send?.({ stats: flood.stats }), 250);
  const stop = async (): Promise<void> => {
    clearInterval(report);
    const stats = await flood.stop();
    process.send?.({ stats, final: true }, () => process.exit(0));
  };
  process.once('message', () => void stop());
  process.once('disconnect', () => process.exit(0)); // the test went away
}
