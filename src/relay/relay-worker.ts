// Runs a UDP relay on its own thread.
//
// Why: the relay's release precision is its event loop's promptness. In the process under test
// the loop also runs the endpoints' JavaScript (hashing, sealing, file I/O callbacks, the probe's
// pacing), and every millisecond of that is a millisecond of delay added to packets that are
// due. A worker thread gives the relay its own loop (measured here: at 100 Mbit/s with the
// probe in the same loop the delivered rate fell to ~78%; on its own thread it holds).
// Non-goals: isolation from a crashing process (use `clawpeer relay` in another process).
//
// The same module is the worker's entry point (support/self-worker.ts): in the worker it starts the
// relay and serves stats/close requests over the message port.
import { parentPort } from 'node:worker_threads';
import type { EventLoopUtilization } from 'node:perf_hooks';
import { ClawpeerError } from '../errors.js';
import { selfWorkerOptions, startSelfWorker, stopperFor, type SelfWorkerFailed } from '../support/self-worker.js';
import type { HostPort } from '../transport/types.js';
import { formatImpairSpec } from './impair-spec.js';
import type { UdpRelay, UdpRelayOptions, UdpRelayStats } from './udp-relay.js';
import { startUdpRelay } from './udp-relay.js';

const WORKER_MARKER = 'clawpeer-udp-relay-worker';
/** How long start() waits for the worker to bind, ms. */
const WORKER_START_TIMEOUT_MS = 10_000;

export type UdpRelayWorkerOptions = Omit<UdpRelayOptions, 'logger' | 'signal' | 'spec'> & {
  /** Spec text or parsed spec (sent to the worker as text). */
  readonly spec: UdpRelayOptions['spec'];
};

export interface UdpRelayWorkerStats extends UdpRelayStats {
  /** The relay thread's event-loop utilisation since start: active ms is its CPU time, near enough. */
  readonly eventLoop: { readonly activeMs: number; readonly idleMs: number; readonly utilization: number };
}

export interface UdpRelayWorker {
  readonly address: HostPort;
  stats(): Promise<UdpRelayWorkerStats>;
  close(): Promise<void>;
}

type ToWorker = { readonly type: 'stats'; readonly id: number } | { readonly type: 'close' };
type FromWorker =
  | { readonly type: 'ready'; readonly address: HostPort }
  | SelfWorkerFailed
  | { readonly type: 'stats'; readonly id: number; readonly stats: UdpRelayStats; readonly elu: EventLoopUtilization }
  | { readonly type: 'closed' };

/** Starts a relay on a worker thread; resolves once it listens. */
export async function startUdpRelayWorker(options: UdpRelayWorkerOptions): Promise<UdpRelayWorker> {
  const { spec, ...rest } = options;
  const workerOptions = { ...rest, spec: typeof spec === 'string' ? spec : formatImpairSpec(spec) };
  const { worker, ready } = await startSelfWorker<Extract<FromWorker, { type: 'ready' }>>(
    import.meta.url,
    WORKER_MARKER,
    workerOptions,
    'relay worker',
    WORKER_START_TIMEOUT_MS,
  );
  let nextId = 1;
  const pending = new Map<number, (s: UdpRelayWorkerStats) => void>();
  worker.on('message', (msg: FromWorker) => {
    if (msg.type !== 'stats') return;
    const res = pending.get(msg.id);
    pending.delete(msg.id);
    res?.({
      ...msg.stats,
      eventLoop: { activeMs: msg.elu.active, idleMs: msg.elu.idle, utilization: msg.elu.utilization },
    });
  });
  return {
    address: ready.address,
    stats: () =>
      new Promise<UdpRelayWorkerStats>((res) => {
        const id = nextId++;
        pending.set(id, res);
        worker.postMessage({ type: 'stats', id } satisfies ToWorker);
      }),
    close: stopperFor(worker, { type: 'close' } satisfies ToWorker),
  };
}

async function runWorker(port: NonNullable<typeof parentPort>, options: UdpRelayOptions): Promise<void> {
  const { performance } = await import('node:perf_hooks');
  const elu0 = performance.eventLoopUtilization();
  let relay: UdpRelay;
  try {
    relay = await startUdpRelay(options);
  } catch (err) {
    const code = err instanceof ClawpeerError ? err.code : undefined;
    port.postMessage({
      type: 'failed',
      ...(code === undefined ? {} : { code }),
      message: err instanceof Error ? err.message : String(err),
    } satisfies FromWorker);
    port.close();
    return;
  }
  port.on('message', (msg: ToWorker) => {
    if (msg.type === 'stats') {
      port.postMessage({
        type: 'stats',
        id: msg.id,
        stats: relay.stats(),
        elu: performance.eventLoopUtilization(elu0),
      } satisfies FromWorker);
    } else {
      void relay.close().then(() => {
        port.postMessage({ type: 'closed' } satisfies FromWorker);
        port.close();
      });
    }
  });
  port.postMessage({ type: 'ready', address: relay.address } satisfies FromWorker);
}

const workerOptions = selfWorkerOptions<UdpRelayOptions>(WORKER_MARKER);
if (workerOptions !== undefined && parentPort !== null) void runWorker(parentPort, workerOptions);
