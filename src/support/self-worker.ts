// A module that runs itself as a worker thread of this process (the UDP relay, the bench's
// simulated peer): the same file is the caller's API and the worker's entry point.
//
// The protocol: the worker is started with { marker, options } as workerData; the module's
// top level calls selfWorkerOptions(marker) and, in the worker, starts its service. The
// worker's first message is { type: 'ready', ... } or { type: 'failed', code?, message }.
// Stopping: the caller posts its own stop message and waits for the thread to exit.
import { isMainThread, Worker, workerData } from 'node:worker_threads';
import { ClawpeerError, LOCAL_ERRORS, type LocalErrorCode } from '../errors.js';

/** The first message of a worker that could not start. */
export interface SelfWorkerFailed {
  readonly type: 'failed';
  /** A ClawpeerError code, when the failure was one. */
  readonly code?: string;
  readonly message: string;
}

const isLocalCode = (code: string): code is LocalErrorCode => Object.hasOwn(LOCAL_ERRORS, code);

/**
 * Starts `moduleUrl` as a worker with `options`, and resolves with the worker and its 'ready'
 * message. Rejects (and stops the thread) if it fails, sends 'failed', or is silent for
 * `timeoutMs`; `what` names it in those errors.
 */
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller names its worker's ready message; no types cross the thread
export function startSelfWorker<Ready extends { readonly type: 'ready' }>(
  moduleUrl: string,
  marker: string,
  options: unknown,
  what: string,
  timeoutMs: number,
): Promise<{ worker: Worker; ready: Ready }> {
  // Compiled JS needs no loader: dropping the parent's execArgv (a test runner's TS loader,
  // coverage hooks) makes the worker start in ~0.1 s instead of seconds. Run from .ts source,
  // the worker keeps the parent's loader.
  const compiled = moduleUrl.endsWith('.js');
  const worker = new Worker(new URL(moduleUrl), {
    workerData: { marker, options },
    ...(compiled ? { execArgv: [] } : {}),
  });
  return new Promise((resolve, reject) => {
    const fail = (err: ClawpeerError): void => {
      clearTimeout(timer);
      reject(err);
      void worker.terminate();
    };
    const timer = setTimeout(
      () => fail(new ClawpeerError('TIMEOUT', `${what} did not start within ${timeoutMs} ms`)),
      timeoutMs,
    );
    worker.once('error', (err) =>
      fail(new ClawpeerError('INTERNAL', `${what} failed: ${err.message}`, { cause: err })),
    );
    worker.once('message', (msg: Ready | SelfWorkerFailed | { readonly type: string }) => {
      if (msg.type === 'ready') {
        clearTimeout(timer);
        resolve({ worker, ready: msg as Ready });
        return;
      }
      const failed = msg as Partial<SelfWorkerFailed>;
      const code = failed.code !== undefined && isLocalCode(failed.code) ? failed.code : 'INTERNAL';
      fail(
        new ClawpeerError(
          code,
          msg.type === 'failed' ? (failed.message ?? `${what} failed`) : `${what} sent ${msg.type} before it started`,
        ),
      );
    });
  });
}

/** Posts `stop` once and resolves when the thread has exited (the same promise on every call). */
export function stopperFor(worker: Worker, stop: unknown): () => Promise<void> {
  let stopped: Promise<void> | undefined;
  return () => {
    stopped ??= new Promise<void>((resolve) => {
      worker.once('exit', () => resolve());
      worker.postMessage(stop);
    });
    return stopped;
  };
}

/** In a worker started by startSelfWorker with `marker`: its options; elsewhere undefined. */
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the worker names the options it was started with; no types cross the thread
export function selfWorkerOptions<T>(marker: string): T | undefined {
  const data: unknown = workerData;
  if (isMainThread || typeof data !== 'object' || data === null || (data as { marker?: unknown }).marker !== marker)
    return undefined;
  return (data as { options: T }).options;
}
