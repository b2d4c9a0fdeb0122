// Benchmark for issue 5's window goal (100 revisions of 4 KiB, W16/W1 >= 13x at 5 ms): how much
// of that ratio the transport itself allows on this machine, measured beside clawpeer in one run.
//
// For each RTT (a UDP impairment relay on its own thread, as `bench --simulate` runs it):
//   raw       a raw quinn stream, the binding clawpeer uses: 100 messages of 4 KiB, the receiver
//             answering each with an 8-byte ack, the sender keeping up to W unacknowledged. No
//             files, manifest, AEAD frames or publishing: the floor under any protocol on top.
//   clawpeer  `clawpeer bench`'s revisions workload through the same kind of relay: 100 files of
//             one 4 KiB chunk in one push, W unacknowledged chunks on one stream, each published.
// Each on cold connections (a new connection per run, in slow start, as a `clawpeer push` is)
// and warm ones (1 MiB moved on the connection first). Reported: median seconds per run, W16/W1
// (and W4/W1) for each, and clawpeer's ratio as a fraction of the raw stream's.
// Data: random bytes (clawpeer: fresh for every run; the raw stream's content is irrelevant).
// Run: node .build-x/bench/window-floor.js  (writes bench/results/window-floor.json);
// main({ smoke: true }) runs RTT 1 ms, W 1 and 4, 10 messages, once each, and writes nothing.
import { performance } from 'node:perf_hooks';
import { planBench } from '../src/benchkit/bench-plan.js';
import { runBench } from '../src/benchkit/runner.js';
import { generateIdentity, type Identity } from '../src/crypto/identity.js';
import { silentLogger } from '../src/logger.js';
import { startUdpRelayWorker } from '../src/relay/relay-worker.js';
import { backendByName } from '../src/transport/backends.js';
import type { Connection, DuplexStream, Listener, TransportBackend } from '../src/transport/types.js';
import {
  runAsScript,
  KiB,
  machineConditions,
  median,
  MiB,
  ratio,
  round,
  writeResult,
  type BenchConditions,
} from './common.js';

export interface WindowFloorOptions {
  readonly smoke?: boolean;
  readonly verbose?: boolean;
}

type Mode = 'cold' | 'warm';
type Impl = 'raw' | 'clawpeer';

export interface WindowFloorRow {
  readonly rttMs: number;
  readonly impl: Impl;
  readonly mode: Mode;
  readonly window: number;
  readonly secondsMedian: number;
  readonly secondsAll: number[];
}

export interface WindowFloorRatio {
  readonly rttMs: number;
  readonly mode: Mode;
  /** W-max / W1 of the raw stream and of clawpeer, and clawpeer's as a fraction of raw's. */
  readonly raw: number;
  readonly clawpeer: number;
  readonly clawpeerOfRaw: number;
}

export interface WindowFloorResult {
  readonly bench: 'window-floor';
  readonly smoke: boolean;
  readonly conditions: BenchConditions;
  readonly settings: {
    readonly rttsMs: number[];
    readonly windows: number[];
    readonly messages: number;
    readonly messageBytes: number;
    readonly repeat: number;
    readonly warmupBytes: number;
  };
  readonly method: string[];
  readonly rows: WindowFloorRow[];
  readonly ratios: WindowFloorRatio[];
}

const MESSAGE_BYTES = 4 * KiB;
const ACK_BYTES = 8;
const WARMUP_BYTES = 1 * MiB;

/** The receiving end of the raw stream: one 8-byte ack per 4 KiB received, on every stream of every connection. */
function serveAcks(listener: Listener): void {
  const serveStream = async (s: DuplexStream): Promise<void> => {
    let pending = 0;
    for (;;) {
      const data = await s.read(1 << 20);
      if (data === null) break;
      pending += data.length;
      const n = Math.floor(pending / MESSAGE_BYTES);
      pending -= n * MESSAGE_BYTES;
      if (n > 0) await s.write(new Uint8Array(n * ACK_BYTES));
    }
    await s.finish();
  };
  const serveConnection = async (conn: Connection): Promise<void> => {
    for (;;) {
      const s = await conn.acceptStream();
      if (s === null) return;
      serveStream(s).catch(() => undefined); // the client closing mid-stream ends it
    }
  };
  void (async () => {
    for (;;) {
      const conn = await listener.accept().catch(() => null);
      if (conn === null) return;
      serveConnection(conn).catch(() => undefined);
    }
  })();
}

/** Sends `count` messages on a new stream of `conn` keeping up to `window` unacknowledged; seconds from the first write to the last ack. */
async function windowedRun(conn: Connection, count: number, window: number): Promise<number> {
  const s = await conn.openStream();
  const message = new Uint8Array(MESSAGE_BYTES);
  let acked = 0;
  let wake: (() => void) | undefined;
  const ackLoop = (async () => {
    let bytes = 0;
    while (acked < count) {
      const data = await s.read();
      if (data === null) throw new Error(`ack stream ended after ${acked} of ${count} acks`);
      bytes += data.length;
      acked = Math.floor(bytes / ACK_BYTES);
      wake?.();
    }
  })();
  const ackedAtLeast = (n: number): Promise<void> =>
    acked >= n ? Promise.resolve() : new Promise<void>((resolve) => (wake = () => acked >= n && resolve()));
  const t0 = performance.now();
  for (let sent = 0; sent < count; sent++) {
    await ackedAtLeast(sent + 1 - window);
    void s.write(message); // writes queue in order; the window, not the write, paces the sender
  }
  await ackLoop;
  const seconds = (performance.now() - t0) / 1000;
  await s.finish().catch(() => undefined);
  return seconds;
}

async function rawRuns(
  quic: TransportBackend,
  relayPort: number,
  identity: Identity,
  mode: Mode,
  windows: readonly number[],
  count: number,
  repeat: number,
): Promise<Map<number, number[]>> {
  const connect = (): Promise<Connection> => quic.connect({ host: '127.0.0.1', port: relayPort, identity });
  const out = new Map<number, number[]>(windows.map((w) => [w, []]));
  const warm = mode === 'warm' ? await connect() : undefined;
  try {
    if (warm !== undefined) await windowedRun(warm, WARMUP_BYTES / MESSAGE_BYTES, 64);
    for (let r = 0; r < repeat; r++) {
      for (const w of windows) {
        const conn = warm ?? (await connect());
        try {
          out.get(w)?.push(await windowedRun(conn, count, w));
        } finally {
          if (warm === undefined) await conn.close('done', { linger: false });
        }
      }
    }
  } finally {
    await warm?.close('done', { linger: false });
  }
  return out;
}

async function clawpeerRuns(
  rttMs: number,
  mode: Mode,
  windows: readonly number[],
  count: number,
  repeat: number,
  signal: AbortSignal,
): Promise<Map<number, number[]>> {
  const plan = planBench(
    {
      simulate: `rtt=${rttMs}ms`,
      workload: 'revisions',
      files: count,
      window: windows.join(','),
      streams: '1',
      repeat,
      ...(mode === 'warm' ? { warmup: '1MiB' } : {}),
    },
    { window: 1, streams: 1 },
    new Date().toISOString().replace(/[:.]/g, '-'),
  );
  const report = await runBench(plan, { log: silentLogger, signal, skipRelayCheck: true });
  const out = new Map<number, number[]>(windows.map((w) => [w, []]));
  for (const run of report.runs) {
    if (!run.ok) throw new Error(`clawpeer run at rtt ${rttMs} ms, W=${run.window} failed: ${String(run.error)}`);
    out.get(run.window)?.push(run.seconds);
  }
  return out;
}

export async function main(options: WindowFloorOptions = {}): Promise<WindowFloorResult> {
  const smoke = options.smoke === true;
  const rttsMs = smoke ? [1] : [1, 5, 50];
  const windows = smoke ? [1, 4] : [1, 4, 16];
  const count = smoke ? 10 : 100;
  const repeat = smoke ? 1 : 3;
  const quic = await backendByName('quic');
  const server = generateIdentity();
  const client = generateIdentity();
  const listener = await quic.listen({ host: '127.0.0.1', port: 0, identity: server });
  serveAcks(listener);
  const signal = new AbortController().signal;
  const rows: WindowFloorRow[] = [];
  const ratios: WindowFloorRatio[] = [];
  const wMax = windows[windows.length - 1] ?? 1;
  try {
    for (const rttMs of rttsMs) {
      const relay = await startUdpRelayWorker({
        listen: { host: '127.0.0.1', port: 0 },
        target: listener.address,
        spec: `rtt=${rttMs}ms`,
      });
      try {
        for (const mode of ['cold', 'warm'] as const) {
          const byImpl: Record<Impl, Map<number, number[]>> = {
            raw: await rawRuns(quic, relay.address.port, client, mode, windows, count, repeat),
            clawpeer: await clawpeerRuns(rttMs, mode, windows, count, repeat, signal),
          };
          const medianOf = (impl: Impl, w: number): number => median(byImpl[impl].get(w) ?? []);
          for (const impl of ['raw', 'clawpeer'] as const) {
            for (const w of windows) {
              const all = byImpl[impl].get(w) ?? [];
              rows.push({
                rttMs,
                impl,
                mode,
                window: w,
                secondsMedian: round(median(all), 4),
                secondsAll: all.map((x) => round(x, 4)),
              });
            }
          }
          const raw = ratio(medianOf('raw', 1), medianOf('raw', wMax));
          const claw = ratio(medianOf('clawpeer', 1), medianOf('clawpeer', wMax));
          ratios.push({ rttMs, mode, raw, clawpeer: claw, clawpeerOfRaw: ratio(claw, raw) });
          if (options.verbose === true)
            console.error(`rtt ${rttMs} ms ${mode}: W${wMax}/W1 raw ${raw}x, clawpeer ${claw}x`);
        }
      } finally {
        await relay.close();
      }
    }
  } finally {
    await listener.close();
  }
  const result: WindowFloorResult = {
    bench: 'window-floor',
    smoke,
    conditions: machineConditions(),
    settings: { rttsMs, windows, messages: count, messageBytes: MESSAGE_BYTES, repeat, warmupBytes: WARMUP_BYTES },
    method: [
      'raw: one quinn connection (@chainsafe/libp2p-quic, the binding clawpeer uses) through a UDP relay thread delaying by the RTT; one stream per run; 4 KiB messages, the receiver writes an 8-byte ack per message received, the sender keeps up to W unacknowledged; seconds from the first write to the last ack',
      "clawpeer: the revisions workload of `clawpeer bench --simulate` (one push of N files of one 4 KiB chunk, streams 1, window W; the listener on its own thread; relay self-check skipped); seconds as the push reports them (manifest to the listener's done, publishing included)",
      `cold: a new connection per run; warm: ${WARMUP_BYTES / MiB} MiB moved on the connection first (raw: on the same connection; clawpeer: its --warmup)`,
      "random payload; both share this machine's cores with the relay thread and their peer",
    ],
    rows,
    ratios,
  };
  if (!smoke) await writeResult('window-floor', result);
  return result;
}

runAsScript(import.meta.url, async () => (await main({ verbose: true })).ratios);
