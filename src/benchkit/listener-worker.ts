// The simulated peer of `clawpeer bench --simulate`: a listener on its own thread.
//
// Why: two machines run their sender and receiver side by side. With the listener in the
// bench's own thread, every chunk's receive work (open, verify, stage, ack, commit) queued
// behind the sender's (read, hash, seal) on one event loop, so a per-chunk-bound workload such
// as 100 x 4 KiB revisions measured the sum of both sides: at 5 ms RTT and W=16 the data phase
// spent ~0.7 ms per chunk there. On its own thread the receiver works in parallel, as a real
// peer does (it still shares this machine's cores; the report says so).
// Non-goals: isolation from a crash (a real `clawpeer listen` in another process is that).
//
// The same module is the worker's entry point (support/self-worker.ts): in the worker it starts the
// listener and serves one close request.
import { parentPort } from 'node:worker_threads';
import { generateIdentity } from '../crypto/identity.js';
import { silentLogger } from '../logger.js';
import { resolveConfig } from '../home/config.js';
import { PeerStore } from '../home/peer-store.js';
import type { Share } from '../home/shares.js';
import { Listener } from '../listener/listener.js';
import { selfWorkerOptions, startSelfWorker, stopperFor, type SelfWorkerFailed } from '../support/self-worker.js';

const WORKER_MARKER = 'clawpeer-bench-listener-worker';
/** How long start waits for the worker to listen, ms. */
const WORKER_START_TIMEOUT_MS = 15_000;

export interface ListenerWorkerOptions {
  /** Where the listener keeps its peer list. */
  readonly home: string;
  /** Shares it serves (directories created by the caller). */
  readonly shares: readonly Share[];
  /** The one client key it pins. */
  readonly clientNodeId: string;
  readonly transport: 'quic' | 'auto';
}

export interface ListenerWorker {
  readonly port: number;
  /** The listener's identity, for the client to pin. */
  readonly nodeId: string;
  readonly publicKey: Uint8Array;
  close(): Promise<void>;
}

type FromWorker =
  | { readonly type: 'ready'; readonly port: number; readonly nodeId: string; readonly publicKey: Uint8Array }
  | SelfWorkerFailed
  | { readonly type: 'closed' };

/** Starts the listener on a worker thread; resolves once it accepts connections. */
export async function startListenerWorker(options: ListenerWorkerOptions): Promise<ListenerWorker> {
  const { worker, ready } = await startSelfWorker<Extract<FromWorker, { type: 'ready' }>>(
    import.meta.url,
    WORKER_MARKER,
    options,
    'bench listener thread',
    WORKER_START_TIMEOUT_MS,
  );
  return { port: ready.port, nodeId: ready.nodeId, publicKey: ready.publicKey, close: stopperFor(worker, 'close') };
}

async function runWorker(port: NonNullable<typeof parentPort>, options: ListenerWorkerOptions): Promise<void> {
  let listener: Listener;
  const identity = generateIdentity();
  try {
    const peers = new PeerStore(`${options.home}/peers.json`);
    await peers.add(options.clientNodeId, 'bench-client');
    // As `clawpeer listen`: chunk indexes kept in memory between pushes, synced folders'
    // watchers and logs kept between syncs (the sync workload records revisions under its id).
    listener = await Listener.start({
      identity,
      peers,
      shares: [...options.shares],
      host: '127.0.0.1',
      port: 0,
      config: resolveConfig({ transport: options.transport }),
      log: silentLogger,
    });
  } catch (err) {
    port.postMessage({
      type: 'failed',
      message: err instanceof Error ? err.message : String(err),
    } satisfies FromWorker);
    port.close();
    return;
  }
  port.once('message', () => {
    void listener.close().finally(() => {
      port.postMessage({ type: 'closed' } satisfies FromWorker);
      port.close();
    });
  });
  port.postMessage({
    type: 'ready',
    port: listener.port,
    nodeId: identity.nodeId,
    publicKey: identity.publicKey,
  } satisfies FromWorker);
}

const workerOptions = selfWorkerOptions<ListenerWorkerOptions>(WORKER_MARKER);
if (workerOptions !== undefined && parentPort !== null) void runWorker(parentPort, workerOptions);
