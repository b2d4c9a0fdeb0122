// Runs a UDP relay on its own thread.
//
// Why: the relay's release precision is its event loop's promptness. In the process under test
// the loop also runs the endpoints' JavaScript (hashing, sealing, file I/O callbacks, the probe's
// pacing), and every millisecond of that is a millisecond of delay added to packets that are
// due. A worker thread gives the relay its own loop (measured here: at 100 Mbit/s with the
// probe in the same loop the delivered rate fell to ~78%; on its own thread it holds).
// Non-goals: isolation from a crashing process (use `clawpeer relay` in another process).
//
// The same module is the worker's entry point: loaded in a worker with the marker in
// workerData, it starts the relay and serves stats/close requests over the message port.
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import type { EventLoopUtilization } from 'node:perf_hooks';
import { ClawpeerError, LOCAL_ERRORS } from '../errors.js';
import type { LocalErrorCode } from '../errors.js';
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
  | { readonly type: 'failed'; readonly code: string; readonly message: string }
  | { readonly type: 'stats'; readonly id: number; readonly stats: UdpRelayStats; readonly elu: EventLoopUtilization }
  | { readonly type: 'closed' };

const isLocalCode = (code: string): code is LocalErrorCode => Object.hasOwn(LOCAL_ERRORS, code);

/** Starts a relay on a worker thread; resolves once it listens. */
export function startUdpRelayWorker(options: UdpRelayWorkerOptions): Promise<UdpRelayWorker> {
  const { spec, ...rest } = options;
  const data = { marker: WORKER_MARKER, options: { ...rest, spec: typeof spec === 'string' ? spec : formatImpairSpec(spec) } };
  // Compiled JS needs no loader: dropping the parent's execArgv (a test runner's TS loader,
  // coverage hooks) makes the worker start in ~0.1 s instead of seconds. Run from .ts source,
  // the worker keeps the parent's loader.
  const compiled = import.meta.url.endsWith('.js');
  const worker = new Worker(new URL(import.meta.url), { workerData: data, ...(compiled ? { execArgv: [] } : {}) });
  let nextId = 1;
  const pending = new Map<number, (s: UdpRelayWorkerStats) => void>();
  let closed: Promise<void> | undefined;
  return new Promise<UdpRelayWorker>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new ClawpeerError('TIMEOUT', `relay worker did not start within ${WORKER_START_TIMEOUT_MS} ms`));
      void worker.terminate();
    }, WORKER_START_TIMEOUT_MS);
    worker.once('error', (err) => {
      clearTimeout(timer);
      reject(new ClawpeerError('INTERNAL', `relay worker failed: ${err.message}`, { cause: err }));
    });
    worker.on('message', (msg: FromWorker) => {
      switch (msg.type) {
        case 'ready': {
          clearTimeout(timer);
          const address = msg.address;
          resolve({
            address,
            stats: () => new Promise<UdpRelayWorkerStats>((res) => {
              const id = nextId++;
              pending.set(id, res);
              worker.postMessage({ type: 'stats', id } satisfies ToWorker);
            }),
            close: () => {
              closed ??= new Promise<void>((res) => {
                worker.once('exit', () => res());
                worker.postMessage({ type: 'close' } satisfies ToWorker);
              });
              return closed;
            },
          });
          break;
        }
        case 'failed':
          clearTimeout(timer);
          reject(new ClawpeerError(isLocalCode(msg.code) ? msg.code : 'INTERNAL', msg.message));
          break;
        case 'stats': {
          const res = pending.get(msg.id);
          pending.delete(msg.id);
          res?.({ ...msg.stats, eventLoop: { activeMs: msg.elu.active, idleMs: msg.elu.idle, utilization: msg.elu.utilization } });
          break;
        }
        case 'closed':
          break;
        default: {
          const never: never = msg;
          throw new TypeError(`unexpected worker message ${JSON.stringify(never)}`);
        }
      }
    });
  });
}

async function runWorker(port: NonNullable<typeof parentPort>, options: UdpRelayOptions): Promise<void> {
  const { performance } = await import('node:perf_hooks');
  const elu0 = performance.eventLoopUtilization();
  let relay: UdpRelay;
  try {
    relay = await startUdpRelay(options);
  } catch (err) {
    const code = err instanceof ClawpeerError ? err.code : 'INTERNAL';
    port.postMessage({ type: 'failed', code, message: err instanceof Error ? err.message : String(err) } satisfies FromWorker);
    port.close();
    return;
  }
  port.on('message', (msg: ToWorker) => {
    if (msg.type === 'stats') {
      port.postMessage({ type: 'stats', id: msg.id, stats: relay.stats(), elu: performance.eventLoopUtilization(elu0) } satisfies FromWorker);
    } else {
      void relay.close().then(() => {
        port.postMessage({ type: 'closed' } satisfies FromWorker);
        port.close();
      });
    }
  });
  port.postMessage({ type: 'ready', address: relay.address } satisfies FromWorker);
}

const data: unknown = workerData;
if (!isMainThread && parentPort !== null && typeof data === 'object' && data !== null && (data as { marker?: unknown }).marker === WORKER_MARKER) {
  void runWorker(parentPort, (data as { options: UdpRelayOptions }).options);
}
