// `clawpeer sync` asks a running listener of the same home to run the sync, and `clawpeer status`
// asks it what it does (resident-protocol.ts).
// Loads nothing heavy: when the listener takes the sync, the CLI never loads the sync modules.
import { createConnection } from 'node:net';
import { ClawpeerError, LOCAL_ERRORS, type LocalErrorCode } from '../errors.js';
// The control socket's protocol only (a path and types): a sync handed to the listener loads little.
import { controlSocketPath } from '../folder-sync/resident-protocol.js';
import type {
  ListenerStatus,
  ResidentSyncReply,
  ResidentSyncRequest,
  RevertReport,
  RevertRequest,
  OverrideReport,
  OverrideRequest,
  StatusRequest,
  SyncFolderResult,
  SyncModeName,
  TransferProgress,
} from '../folder-sync/facade.js';
import type { CompressionChoice } from '../home/facade.js';
import type { RemoteSpec } from './args.js';

/** How long connecting to the local socket may take before the CLI syncs by itself, ms. */
const CONNECT_TIMEOUT_MS = 2_000;

/** What the CLI asks the listener to run; progress lines are asked for when there is someone to show them to (syncViaListener). */
export type ResidentSyncAsk = Omit<ResidentSyncRequest, 'progress'>;

/** The control request for a sync of `dir` (its real path) with `remote`. */
export function residentRequest(o: {
  dir: string;
  remote: RemoteSpec;
  mode: SyncModeName;
  compression: CompressionChoice;
  addr: string | undefined;
  transport: string | undefined;
  bwlimit?: number | undefined;
}): ResidentSyncAsk {
  return {
    op: 'sync',
    dir: o.dir,
    peer: o.remote.peer,
    share: o.remote.share,
    mode: o.mode,
    compression: o.compression,
    ...(o.addr === undefined ? {} : { addr: o.addr }),
    ...(o.transport === undefined ? {} : { transport: o.transport }),
    ...(o.bwlimit === undefined ? {} : { bwlimit: o.bwlimit }),
  };
}

export type ResidentOutcome =
  | { readonly kind: 'done'; readonly result: SyncFolderResult }
  | { readonly kind: 'not-served'; readonly reason: string };

/**
 * Runs the sync in the listener of `homeDir`. Resolves `not-served` when there is no listener
 * (no socket, or nobody behind it) or it does not serve the folder; throws the listener's error.
 */
export function syncViaListener(
  homeDir: string,
  ask: ResidentSyncAsk,
  onProgress: ((p: TransferProgress) => void) | undefined,
  signal: AbortSignal,
): Promise<ResidentOutcome> {
  const req: ResidentSyncRequest = { ...ask, progress: onProgress !== undefined };
  return askListener<ResidentOutcome>(
    homeDir,
    req,
    signal,
    (reason) => ({ kind: 'not-served', reason }),
    (reply) => {
      switch (reply.type) {
        case 'progress': {
          const { type: _type, ...p } = reply;
          onProgress?.(p);
          return 'continue';
        }
        case 'result':
          return { kind: 'done', result: reply.result };
        case 'not-served':
          return { kind: 'not-served', reason: reply.reason };
        default:
          throw new ClawpeerError('IO', `the listener answered the sync with ${reply.type}`);
      }
    },
  );
}

/** `clawpeer status`: the state of the listener of `homeDir`, or why there is none to ask (a string). */
export function listenerStatus(homeDir: string, signal: AbortSignal): Promise<ListenerStatus | string> {
  const req: StatusRequest = { op: 'status' };
  return askListener<ListenerStatus | string>(
    homeDir,
    req,
    signal,
    (reason) => reason,
    (reply) => {
      if (reply.type === 'status') return reply.status;
      throw new ClawpeerError('IO', `the listener answered the status request with ${reply.type}`);
    },
  );
}

/** `clawpeer folder revert`: run by the listener of `homeDir`; why there is none to ask (a string) when it is not running. */
export function revertViaListener(
  homeDir: string,
  folder: string,
  dryRun: boolean,
  signal: AbortSignal,
): Promise<RevertReport | string> {
  const req: RevertRequest = { op: 'revert', folder, dryRun };
  return askListener<RevertReport | string>(
    homeDir,
    req,
    signal,
    (reason) => reason,
    (reply) => {
      if (reply.type === 'reverted') return reply.report;
      throw new ClawpeerError('IO', `the listener answered the revert request with ${reply.type}`);
    },
  );
}

/** `clawpeer folder override`: run by the listener of `homeDir`; why there is none to ask (a string) when it is not running. */
export function overrideViaListener(
  homeDir: string,
  folder: string,
  dryRun: boolean,
  signal: AbortSignal,
): Promise<OverrideReport | string> {
  const req: OverrideRequest = { op: 'override', folder, dryRun };
  return askListener<OverrideReport | string>(
    homeDir,
    req,
    signal,
    (reason) => reason,
    (reply) => {
      if (reply.type === 'overridden') return reply.report;
      throw new ClawpeerError('IO', `the listener answered the override request with ${reply.type}`);
    },
  );
}

/**
 * One request to the listener of `homeDir` over its control socket: `onReply` sees each reply
 * line until it returns the outcome (or throws); an `error` reply rejects as its ClawpeerError.
 * Resolves `absent(reason)` when no listener takes the connection.
 */
function askListener<T>(
  homeDir: string,
  request: ResidentSyncRequest | StatusRequest | RevertRequest | OverrideRequest,
  signal: AbortSignal,
  absent: (reason: string) => T,
  onReply: (reply: ResidentSyncReply) => T | 'continue',
): Promise<T> {
  const socketPath = controlSocketPath(homeDir);
  if (socketPath === undefined) return Promise.resolve(absent('no control socket for this home'));
  return new Promise((resolve, reject) => {
    const socket = createConnection(socketPath);
    let connected = false;
    let settled = false;
    let buffered = '';
    const finish = (f: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      socket.destroy();
      f();
    };
    const timer = setTimeout(
      () => finish(() => resolve(absent('the control socket did not answer'))),
      CONNECT_TIMEOUT_MS,
    );
    const onAbort = (): void => finish(() => reject(new ClawpeerError('ABORTED', 'interrupted')));
    signal.addEventListener('abort', onAbort, { once: true });
    socket.setEncoding('utf8');
    socket.once('connect', () => {
      connected = true;
      clearTimeout(timer);
      socket.write(JSON.stringify(request) + '\n');
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (!connected) finish(() => resolve(absent(`no listener on ${socketPath} (${err.code ?? err.message})`)));
      else
        finish(() =>
          reject(new ClawpeerError('IO', `the listener's control socket failed mid-request: ${err.message}`)),
        );
    });
    socket.on('close', () => {
      if (connected)
        finish(() => reject(new ClawpeerError('IO', 'the listener closed the control socket before it answered')));
    });
    socket.on('data', (piece: string) => {
      buffered += piece;
      for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        let reply: ResidentSyncReply;
        try {
          reply = JSON.parse(line) as ResidentSyncReply;
        } catch {
          finish(() => reject(new ClawpeerError('IO', 'the listener sent a control reply that is not JSON')));
          return;
        }
        if (reply.type === 'error') {
          const code = (Object.hasOwn(LOCAL_ERRORS, reply.code) ? reply.code : 'INTERNAL') as LocalErrorCode;
          finish(() => reject(new ClawpeerError(code, reply.message)));
          return;
        }
        let outcome: T | 'continue';
        try {
          outcome = onReply(reply);
        } catch (err) {
          finish(() => reject(err));
          return;
        }
        if (outcome !== 'continue') {
          finish(() => resolve(outcome));
          return;
        }
      }
    });
  });
}
