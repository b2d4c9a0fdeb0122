// The listener's side of the local control socket (resident-protocol.ts): runs `clawpeer sync`
// of one of its shares for the CLI, with the share's folder watcher, so a sync of an unchanged
// folder skips its scan; and answers `clawpeer status` with what it serves and does.
//
// Goals: a misbehaving local client (bad JSON, an over-long line, a vanished socket) costs its
// own connection only; the CLI leaving aborts its sync; a second listener of the same home
// does not steal a live socket, and a dead one's stale socket file is replaced.
// Non-goals: the sync itself (sync-client.ts), any other command, status from other homes.
import { MAX_RATE_BYTES_PER_SEC, type RateLimiter } from '../transfer/rate-limiter.js';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { chmod, mkdtemp, rename, rm, unlink } from 'node:fs/promises';
import path from 'node:path';
import { ClawpeerError } from '../errors.js';
import type { Identity } from '../crypto/identity.js';
import type { Logger } from '../logger.js';
import type { SyncModeName } from '../protocol/messages.js';
import { resolveConfig } from '../home/config.js';
import { resolvePeer, type ResolvedPeer } from '../home/peer-resolve.js';
import type { PathSources } from '../reach/path-sources.js';
import type { PeerStore } from '../home/peer-store.js';
import {
  controlSocketPath,
  MAX_REQUEST_BYTES,
  type ListenerStatus,
  type ResidentSyncReply,
  type ResidentSyncRequest,
  type OverrideReport,
  type OverrideRequest,
  type RevertReport,
  type RevertRequest,
  type StatusRequest,
} from './resident-protocol.js';
import type { Share } from '../home/shares.js';
import type { ResidentFolders } from './synced-folder.js';
import type { ListenerActivity } from '../session/listener-activity.js';
import type { TransferProgress } from '../transfer/transfer-progress.js';

export interface ResidentSyncContext {
  readonly shares: readonly Share[];
  readonly resident: ResidentFolders;
  readonly identity: Identity;
  readonly peers: PeerStore;
  readonly log: Logger;
  /** listen --bwlimit: the syncs run here send within it too. */
  readonly sendLimiter?: RateLimiter;
  /** The listener's state, for `clawpeer status`. */
  readonly status?: () => Promise<ListenerStatus>;
  /** What runs now (`clawpeer status`): the syncs run here for the CLI count too. */
  readonly activity?: ListenerActivity;
  /** The ways this node reaches a peer (the listener's reach config); default: its address alone. */
  readonly dialPaths?: (peer: ResolvedPeer) => Promise<PathSources>;
  /** `folder revert` of one of the folder service's folders (folders/folder-revert.ts). */
  readonly revert?: (folder: string, dryRun: boolean, signal: AbortSignal) => Promise<RevertReport>;
  /** `folder override` of one of the folder service's send-only folders (folders/folder-override.ts). */
  readonly override?: (folder: string, dryRun: boolean, signal: AbortSignal) => Promise<OverrideReport>;
}

const MODES: readonly SyncModeName[] = ['two-way', 'send-only', 'receive-only'];
/** A connection that has not sent its request line by then is closed, ms. */
const REQUEST_TIMEOUT_MS = 10_000;

/** The request on one line of JSON, checked field by field; a USAGE error names what is wrong. */
export function parseResidentRequest(
  line: string,
): ResidentSyncRequest | StatusRequest | RevertRequest | OverrideRequest {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    throw new ClawpeerError('USAGE', 'control request is not JSON');
  }
  const r = v as Record<string, unknown>;
  const str = (k: string, optional = false): void => {
    if (optional && r[k] === undefined) return;
    if (typeof r[k] !== 'string' || r[k].length > 4096)
      throw new ClawpeerError('USAGE', `control request field ${k} must be a string`);
  };
  if (typeof v !== 'object' || v === null || !['sync', 'status', 'revert', 'override'].includes(r['op'] as string))
    throw new ClawpeerError('USAGE', 'control request op must be "sync", "status", "revert" or "override"');
  if (r['op'] === 'status') return { op: 'status' };
  if (r['op'] === 'revert' || r['op'] === 'override') {
    str('folder');
    if (typeof r['dryRun'] !== 'boolean') throw new ClawpeerError('USAGE', 'control request dryRun must be a boolean');
    return { op: r['op'], folder: r['folder'] as string, dryRun: r['dryRun'] };
  }
  str('dir');
  str('peer');
  str('share');
  str('addr', true);
  str('transport', true);
  if (!MODES.includes(r['mode'] as SyncModeName))
    throw new ClawpeerError('USAGE', `control request mode must be one of ${MODES.join(', ')}`);
  if (r['compression'] !== 'auto' && r['compression'] !== 'none')
    throw new ClawpeerError('USAGE', 'control request compression must be auto or none');
  if (typeof r['progress'] !== 'boolean')
    throw new ClawpeerError('USAGE', 'control request progress must be a boolean');
  const bw = r['bwlimit'];
  if (bw !== undefined && !(Number.isInteger(bw) && (bw as number) >= 1 && (bw as number) <= MAX_RATE_BYTES_PER_SEC))
    throw new ClawpeerError(
      'USAGE',
      `control request bwlimit must be an integer of bytes per second in 1..${MAX_RATE_BYTES_PER_SEC}`,
    );
  return v as ResidentSyncRequest;
}

/**
 * How the listener logs a request of the CLI that failed: what it was (a folder's revert, a
 * sync, a status) and of which folder. Undefined: a request line that does not parse.
 */
export function failureLog(req: ResidentSyncRequest | StatusRequest | RevertRequest | OverrideRequest | undefined): {
  message: string;
  fields: Record<string, unknown>;
} {
  if (req === undefined) return { message: 'control request from the CLI failed', fields: {} };
  if (req.op === 'status') return { message: 'status for the CLI failed', fields: {} };
  if (req.op === 'revert' || req.op === 'override')
    return {
      message: `folder ${req.op}${req.dryRun ? ' --dry-run' : ''} for the CLI failed`,
      fields: { folder: req.folder },
    };
  return { message: 'sync for the CLI failed', fields: { folder: req.dir, share: req.share, peer: req.peer } };
}

/**
 * Binds the control socket so that it is 0600 from its first moment: whoever can connect to it
 * runs syncs as this user, and a chmod after bind left a window (under umask 002 the socket was
 * group-connectable until then). It is bound inside a fresh 0700 directory next to it, chmod'ed
 * there, then renamed into place. (Not a umask around bind: the umask is process-wide and would
 * also narrow whatever the thread pool creates at that moment.) The staging path is shorter than
 * `socketPath`, so it fits wherever that fits.
 */
export async function listenPrivately(server: Server, socketPath: string): Promise<void> {
  const dir = await mkdtemp(path.join(path.dirname(socketPath), '.c-'));
  const staged = path.join(dir, 's');
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(staged, () => {
        server.off('error', reject);
        resolve();
      });
    });
    await chmod(staged, 0o600);
    await rename(staged, socketPath);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export class ResidentSyncServer {
  readonly socketPath: string;
  readonly #homeDir: string;
  readonly #server: Server;
  readonly #ctx: ResidentSyncContext;
  readonly #running = new Set<AbortController>();
  /** Connections that have not sent their request yet (closed at shutdown; running ones end with their sync). */
  readonly #waiting = new Set<Socket>();

  private constructor(homeDir: string, socketPath: string, server: Server, ctx: ResidentSyncContext) {
    this.#homeDir = homeDir;
    this.socketPath = socketPath;
    this.#server = server;
    this.#ctx = ctx;
  }

  /**
   * Listens on the control socket of the home at `homeDir`; undefined (logged) when the home has
   * none (its path is too long for one), another live listener of this home holds it, or it
   * cannot be made.
   */
  static async start(homeDir: string, ctx: ResidentSyncContext): Promise<ResidentSyncServer | undefined> {
    const socketPath = controlSocketPath(homeDir);
    if (socketPath === undefined) {
      ctx.log.warn(
        'no control socket for this home (a Unix socket path of at most 107 bytes is needed): `clawpeer sync` of these shares runs in the CLI, not here',
        { home: homeDir },
      );
      return undefined;
    }
    if (await socketAnswers(socketPath)) {
      ctx.log.warn('another listener of this home holds the control socket: syncs run in the CLI, not here', {
        socket: socketPath,
      });
      return undefined;
    }
    await unlink(socketPath).catch(() => undefined); // a dead listener's socket file
    const server = createServer({ allowHalfOpen: false });
    const resident = new ResidentSyncServer(homeDir, socketPath, server, ctx);
    server.on('connection', (socket) => resident.#serve(socket));
    try {
      await listenPrivately(server, socketPath);
    } catch (err) {
      server.close();
      ctx.log.warn('cannot open the control socket: syncs run in the CLI, not here', {
        socket: socketPath,
        error: (err as Error).message,
      });
      return undefined;
    }
    server.on('error', (err) => ctx.log.warn('control socket error', { error: err.message }));
    return resident;
  }

  async close(): Promise<void> {
    for (const c of this.#running) c.abort(new ClawpeerError('ABORTED', 'the listener is shutting down'));
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const s of this.#waiting) s.destroy();
    await closed;
    await unlink(this.socketPath).catch(() => undefined);
  }

  #serve(socket: Socket): void {
    let buffered = '';
    let started = false;
    const abort = new AbortController();
    const send = (reply: ResidentSyncReply): void => {
      if (!socket.destroyed) socket.write(JSON.stringify(reply) + '\n');
    };
    this.#waiting.add(socket);
    socket.setEncoding('utf8');
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.#waiting.delete(socket);
      abort.abort(new ClawpeerError('ABORTED', 'the sync command went away'));
    });
    const idle = setTimeout(() => {
      if (!started) socket.destroy();
    }, REQUEST_TIMEOUT_MS);
    idle.unref();
    socket.on('data', (piece: string) => {
      if (started) return; // one request per connection
      buffered += piece;
      const nl = buffered.indexOf('\n');
      if (nl < 0) {
        if (buffered.length > MAX_REQUEST_BYTES) {
          send({ type: 'error', code: 'USAGE', message: `control request longer than ${MAX_REQUEST_BYTES} bytes` });
          socket.end();
          started = true;
        }
        return;
      }
      started = true;
      clearTimeout(idle);
      this.#waiting.delete(socket);
      this.#running.add(abort);
      let failed = failureLog(undefined);
      void Promise.resolve()
        .then(() => {
          const req = parseResidentRequest(buffered.slice(0, nl));
          failed = failureLog(req);
          return this.#handle(req, send, abort.signal);
        })
        .catch((err: unknown) => {
          const e = err instanceof ClawpeerError ? err : new ClawpeerError('INTERNAL', (err as Error).message);
          if (!abort.signal.aborted) this.#ctx.log.info(failed.message, { ...failed.fields, error: e.message });
          send({ type: 'error', code: e.code, message: e.message });
        })
        .finally(() => {
          this.#running.delete(abort);
          socket.end();
        });
    });
  }

  async #handle(
    req: ResidentSyncRequest | StatusRequest | RevertRequest | OverrideRequest,
    send: (r: ResidentSyncReply) => void,
    signal: AbortSignal,
  ): Promise<void> {
    if (req.op === 'status') {
      if (this.#ctx.status === undefined) throw new ClawpeerError('USAGE', 'this listener does not tell its status');
      send({ type: 'status', status: await this.#ctx.status() });
      return;
    }
    if (req.op === 'revert') {
      if (this.#ctx.revert === undefined)
        throw new ClawpeerError('USAGE', 'this listener runs no shared folders: nothing to revert');
      send({ type: 'reverted', report: await this.#ctx.revert(req.folder, req.dryRun, signal) });
      return;
    }
    if (req.op === 'override') {
      if (this.#ctx.override === undefined)
        throw new ClawpeerError('USAGE', 'this listener runs no shared folders: nothing to override');
      send({ type: 'overridden', report: await this.#ctx.override(req.folder, req.dryRun, signal) });
      return;
    }
    const share = this.#ctx.shares.find((s) => s.dir === req.dir);
    // A send-only folder's share is read-only to peers; its own syncs only send (syncWithPeer
    // narrows them to the folder's mode), so they run here too. A plain read-only share does not.
    const sendsOnly = req.mode === 'send-only' || share?.keptFolder === true;
    if (share === undefined || (share.readOnly && !sendsOnly)) {
      send({
        type: 'not-served',
        reason:
          share === undefined ? `${req.dir} is not a share of this listener` : `share ${share.name} is read-only here`,
      });
      return;
    }
    const config = resolveConfig({
      ...(req.transport === undefined ? {} : { transport: req.transport }),
      compression: req.compression,
    });
    const peer = await resolvePeer(this.#ctx.peers, req.peer, req.addr);
    const log = this.#ctx.log.child('sync');
    log.info('syncing for the CLI', { share: share.name, peer: peer.name, mode: req.mode });
    const { syncWithPeer } = await import('./sync-with-peer.js');
    const activity = this.#ctx.activity?.begin({ peer: peer.id, kind: 'sync', share: share.name, path: '' });
    let ok = false;
    try {
      const paths = await this.#ctx.dialPaths?.(peer);
      const result = await syncWithPeer({
        identity: this.#ctx.identity,
        peer,
        config,
        ...(paths === undefined ? {} : { paths }),
        dir: share.dir,
        share: req.share,
        mode: req.mode,
        home: this.#homeDir,
        log,
        signal,
        resident: this.#ctx.resident,
        ...(req.bwlimit === undefined ? {} : { bwlimit: req.bwlimit }),
        ...(this.#ctx.sendLimiter === undefined ? {} : { rateLimiters: [this.#ctx.sendLimiter] }),
        ...(req.progress || activity !== undefined
          ? {
              onProgress: (p: TransferProgress) => {
                activity?.report(p);
                if (req.progress) send({ type: 'progress', ...p });
              },
            }
          : {}),
      });
      const { lacking: _lacking, ...shown } = result; // the folder service's, not the CLI's
      send({ type: 'result', result: shown });
      ok = true;
    } finally {
      activity?.end(ok);
    }
  }
}

/** True when something accepts connections on `socketPath`. */
function socketAnswers(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection(socketPath);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}
