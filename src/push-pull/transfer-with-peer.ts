// A whole push or pull with a paired peer: resolve it, dial, run transfer-client.ts, close.
// What `clawpeer push` and `pull` call (the command parses and reports; this runs the session).
// Light to import: the dialer and the transfer modules load only when a transfer starts.
import { ClawpeerError, isInterruption, wireCodeFor } from '../errors.js';
import { settledWithin } from '../support/timeouts.js';
import type { ConnectionsMode } from '../session/session-join.js';
import type { ReachConfig } from '../home/config-file.js';
import type { NodeConfig } from '../home/config.js';
import type { HomeLayout } from '../home/home.js';
import type { pull as Pull, push as Push, TransferOptions, TransferResult } from './transfer-client.js';
import type { combineResults as CombineResults } from './transfer-results.js';
import type { SequentialProgress as SequentialProgressClass } from '../transfer/transfer-progress.js';
import type { ConnectToPeerOptions } from '../session/connect-peer.js';
import type { ListEntry, ShareInfo } from '../protocol/messages.js';
import type { Identity } from '../crypto/identity.js';
import type { ResolvedPeer } from '../home/peer-resolve.js';
import type { PeerSession } from '../session/session.js';
import type { OfferTotals } from './offer-totals.js';

export type { OfferTotals } from './offer-totals.js';

/** One batch of a listing: shares, or the entries of a directory. */
export interface ListBatch {
  readonly entries: readonly ListEntry[];
  readonly shares: readonly ShareInfo[];
}

export type { TransferResult } from './transfer-client.js';
export type { DryRunReport } from '../transfer/dry-run.js';
export type { TransferProgress } from '../transfer/transfer-progress.js';
export type { ListEntry, ShareInfo } from '../protocol/messages.js';

/** A share and a path in it on the peer ('' for the whole share). */
export interface RemotePlace {
  readonly share: string;
  readonly path: string;
}

export interface PeerTransferOptions extends Omit<
  TransferOptions,
  'session' | 'share' | 'remotePath' | 'nodeId' | 'idleTimeoutMs'
> {
  readonly home: HomeLayout;
  /** The home's reach config with the global flags applied (read once the peer is known). */
  readonly reach: () => Promise<ReachConfig>;
  readonly config: NodeConfig;
  /** A pair name or node id; `addr` (HOST:PORT) overrides how it is reached. */
  readonly peerName: string;
  readonly addr?: string | undefined;
  /** The command's logger: the transfer logs under its child `push` or `pull`. */
  readonly log: TransferOptions['log'];
  /** QUIC connections for the session: 'auto' stripes under loss (session/session-join.ts). */
  readonly connections?: ConnectionsMode;
}

/** A transfer's result and how the session reached the peer. */
export interface PeerTransferOutcome {
  readonly result: TransferResult;
  readonly path: string;
  readonly rttMs: number;
}

/** Sends `localPath` (or `sources`) into `to` on the peer. */
export function pushToPeer(o: PeerTransferOptions & { readonly to: RemotePlace }): Promise<PeerTransferOutcome> {
  const { home: _home, reach: _reach, peerName: _peer, addr: _addr, ...rest } = o;
  return withPeerSession('push', rest, dialNamedPeer('push', o), async (options, { push }) =>
    push({ ...options, share: o.to.share, remotePath: o.to.path }),
  );
}

/**
 * Fetches each of `from` into `localPath`, one after another on one session, reported as one
 * (progress counts up once). Stale temp files a killed earlier pull left there are swept first.
 */
export async function pullFromPeer(
  o: PeerTransferOptions & { readonly from: readonly RemotePlace[] },
): Promise<PeerTransferOutcome> {
  if (o.dryRun !== true) for (const r of o.from) await sweepPullDestination(o, o.filesFrom === undefined ? r.path : '');
  const { home: _home, reach: _reach, peerName: _peer, addr: _addr, from: _from, ...rest } = o;
  return withPeerSession('pull', rest, dialNamedPeer('pull', o), (options, m) => pullEach(options, o.from, m));
}

/** Each of `from` pulled in turn on the session, reported as one (progress counts up once). */
async function pullEach(
  options: Omit<TransferOptions, 'share' | 'remotePath'>,
  from: readonly RemotePlace[],
  { pull, combineResults, SequentialProgress }: Modules,
): Promise<TransferResult> {
  const pulled: TransferResult[] = [];
  const { onProgress } = options;
  const sequential = onProgress !== undefined && from.length > 1 ? new SequentialProgress(onProgress) : undefined;
  for (const r of from) {
    pulled.push(
      await pull({
        ...options,
        share: r.share,
        remotePath: r.path,
        ...(sequential === undefined ? {} : { onProgress: sequential.next() }),
      }),
    );
  }
  return combineResults(pulled);
}

/** `receive`: a peer pinned for this transfer alone (not in the home's pairs). */
export interface PinnedPullOptions extends SessionTransferOptions {
  readonly identity: Identity;
  readonly peer: ResolvedPeer;
  /**
   * How to find it beside its address (LAN discovery, the rendezvous: a sender behind NAT was
   * found there); absent, its address alone is dialled (--addr). Nothing is remembered in a home.
   */
  readonly reach?: ReachConfig;
  /**
   * What is offered, counted, before anything is written: rejecting refuses the receive (the
   * disk check, the user's answer), and the error is told to the sender as its parting word.
   */
  readonly onOffer?: (offer: OfferTotals) => Promise<void>;
}

/** How long a receive that refused the offer waits for the sender to read why and hang up, ms. */
const PARTING_WORD_MS = 2_000;

/**
 * `receive`: every entry the peer's shares list at their roots (what its `send` named, and only
 * that), each pulled into `localPath` on one session. Returns the paths pulled too.
 */
export async function pullAllFromPinned(
  o: PinnedPullOptions,
): Promise<PeerTransferOutcome & { readonly paths: readonly string[] }> {
  const { identity, peer, reach, onOffer, ...rest } = o;
  const connect = async (): Promise<{ identity: Identity; session: PeerSession }> => {
    const { dialPeer } = await import('../session/dialer.js');
    const paths =
      reach === undefined
        ? undefined
        : (await import('../reach/path-sources.js')).pathSourcesFor({
            config: reach,
            identity,
            peer,
            log: o.log.child('reach'),
          });
    const session = await dialPeer({
      identity,
      peer,
      config: o.config,
      log: o.log.child('pull'),
      signal: o.signal,
      ...(paths === undefined ? {} : { paths }),
      ...(o.connections === undefined ? {} : { connections: o.connections }),
    });
    return { identity, session };
  };
  let paths: string[] = [];
  const outcome = await withPeerSession(
    'pull',
    rest,
    connect,
    async (options, m) => {
      // Checked before any pull: single names, each once, none of clawpeer's own (offered-paths.ts).
      const { offeredPaths } = await import('./offered-paths.js');
      const from = await offeredPaths(options.session, o.signal);
      if (from.length === 0) throw new ClawpeerError('PATH_INVALID', `peer ${peer.id} offers nothing to receive`);
      paths = from.map((f) => f.path);
      if (onOffer !== undefined) {
        const { offerTotals } = await import('./offer-totals.js');
        await tellRefusal(options.session, async () => onOffer(await offerTotals(options.session, from, o.signal)));
      }
      if (o.dryRun !== true) for (const r of from) await sweepPullDestination(o, r.path);
      return pullEach(options, from, m);
    },
    'the code is used up: ask the sender to run send again, and receive its new code into the same directory for the rest (what is here already is not fetched again)',
  );
  return { ...outcome, paths };
}

/**
 * Runs `decide`; when it refuses the offer (a ClawpeerError of ours: declined, no room), tells
 * the sender why, then waits (briefly) for it to hang up: the sender reads our word before it
 * sees us go, so its `send` can say why nothing came.
 */
async function tellRefusal(session: PeerSession, decide: () => Promise<void>): Promise<void> {
  try {
    await decide();
  } catch (err) {
    // A peer's error or a stop (Ctrl-C: tellPeerIfInterrupted speaks then) is not ours to tell.
    const stopped = err instanceof ClawpeerError && (err.code === 'INTERRUPTED' || err.code === 'TERMINATED');
    if (!(err instanceof ClawpeerError) || err.wire !== undefined || stopped) throw err;
    await session.control.sendError(wireCodeFor(err).name, err.message).catch(() => undefined);
    await settledWithin(session.connection.closed, PARTING_WORD_MS);
    throw err;
  }
}

/** What a transfer runs with, loaded once it starts. */
interface Modules {
  readonly push: typeof Push;
  readonly pull: typeof Pull;
  readonly combineResults: typeof CombineResults;
  readonly SequentialProgress: typeof SequentialProgressClass;
}

/** A transfer's options once the peer is dialled: who it is and how to reach it are spent. */
type SessionTransferOptions = Omit<PeerTransferOptions, 'home' | 'reach' | 'peerName' | 'addr'>;

/** Dials the pair the options name (connect-peer.ts). */
function dialNamedPeer(
  direction: 'push' | 'pull',
  o: PeerTransferOptions,
): () => Promise<{ identity: Identity; session: PeerSession }> {
  return async () => {
    const { connectToPeer } = await import('../session/connect-peer.js');
    return connectToPeer({
      home: o.home,
      reach: o.reach,
      peerName: o.peerName,
      addr: o.addr,
      config: o.config,
      log: o.log,
      signal: o.signal,
      label: direction,
      ...(o.connections === undefined ? {} : { connections: o.connections }),
    });
  };
}

async function withPeerSession(
  direction: 'push' | 'pull',
  o: SessionTransferOptions,
  connect: () => Promise<{ identity: Identity; session: PeerSession }>,
  run: (options: Omit<TransferOptions, 'share' | 'remotePath'>, m: Modules) => Promise<TransferResult>,
  /** What to do for the rest after an interruption (default: run the same command again). */
  rerun = `run the same command again to ${direction === 'push' ? 'send' : 'fetch'} the rest`,
): Promise<PeerTransferOutcome> {
  const { config, connections: _connections, ...rest } = o;
  const log = o.log.child(direction);
  const { identity, session } = await connect();
  const [{ push, pull }, { combineResults }, { SequentialProgress }] = await Promise.all([
    import('./transfer-client.js'),
    import('./transfer-results.js'),
    import('../transfer/transfer-progress.js'),
  ]);
  let delivered = false;
  const untell = session.tellPeerIfInterrupted(o.signal, direction);
  try {
    const result = await run(
      { ...rest, log, session, idleTimeoutMs: config.idleTimeoutMs, nodeId: identity.nodeId },
      { push, pull, combineResults, SequentialProgress },
    );
    // A push ends on the listener's transfer-done: it has everything we sent, so no linger. A
    // pull ends on our own transfer-done, which the linger sees delivered.
    delivered = direction === 'push';
    return { result, path: session.path(), rttMs: Math.round(session.rttMs() * 1000) / 1000 };
  } catch (err) {
    // Stopped by SIGINT/SIGTERM (the peer was told, above): the user hears that a rerun resumes
    // (partials are kept on both sides).
    const stopped: unknown = o.signal.reason;
    if (!o.signal.aborted || !isInterruption(stopped)) throw await session.reasonFor(err);
    const kept = direction === 'push' ? 'what the peer received is kept' : 'what arrived is kept';
    throw new ClawpeerError(stopped.code, `${direction} ${stopped.message}: ${kept}; ${rerun}`, { cause: err });
  } finally {
    untell();
    await session.close('done', { linger: !delivered });
  }
}

/** `ls`: the peer's shares (an empty `share`), or the entries of a directory in one, batch by batch. */
export async function* listFromPeer(
  o: Omit<ConnectToPeerOptions, 'label'> & { readonly place: RemotePlace; readonly recursive: boolean },
): AsyncGenerator<ListBatch, void, undefined> {
  const { connectToPeer } = await import('../session/connect-peer.js');
  const { session } = await connectToPeer({ ...o, label: 'ls' });
  try {
    const { listRemote } = await import('./list-client.js');
    yield* listRemote({ session, share: o.place.share, path: o.place.path, recursive: o.recursive, signal: o.signal });
  } finally {
    await session.close('done');
  }
}

/**
 * Before a pull: removes stale `.clawpeer-tmp-*` files a killed earlier pull left where this one
 * stages (localPath itself, and the tree it lands in: localPath/<last segment of the remote path>,
 * or all of it for a whole share): those of a writer that is no longer running, and any older
 * than store/temp-files.ts STALE_TEMP_AGE_MS; a younger one of a live process may belong to a
 * pull running right now. A failure here is logged, never fatal.
 */
async function sweepPullDestination(
  o: Pick<PeerTransferOptions, 'localPath' | 'log' | 'signal'>,
  remotePath: string,
): Promise<void> {
  const { removeStaleTempFilesAt } = await import('../store/temp-files.js');
  const lands =
    remotePath === ''
      ? ''
      : (remotePath
          .split('/')
          .filter((s) => s !== '')
          .at(-1) ?? '');
  try {
    const removed = await removeStaleTempFilesAt(o.localPath, lands, { nowMs: Date.now(), signal: o.signal });
    if (removed > 0) o.log.info('removed stale temp files left by an earlier pull', { dir: o.localPath, removed });
  } catch (err) {
    o.log.warn('cannot sweep stale temp files', { dir: o.localPath, error: (err as Error).message });
  }
}
