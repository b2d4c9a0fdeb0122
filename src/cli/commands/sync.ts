// `sync`: revision sync of a folder with a peer's share (its history: history.ts). Light imports:
// when a listener runs the sync (resident-client.ts), this process loads little else.
import { realpath } from 'node:fs/promises';
import { makeDirs } from '../../support/make-dirs.js';
import path from 'node:path';
import type { Argv } from 'yargs';
import { ClawpeerError } from '../../errors.js';
import { resolveConfig, type NodeConfig } from '../../home/config.js';
import type { Identity } from '../../crypto/identity.js';
import type { Logger } from '../../logger.js';
import type { ResolvedPeer } from '../../home/peer-resolve.js';
import type { PathSources } from '../../reach/path-sources.js';
import { isTempFileName } from '../../store/internal-names.js';
import { QuietTimer } from '../../support/quiet-timer.js';
import { loadSyncIgnore } from '../../folder-sync/sync-ignore.js';
import type { ResidentFolders } from '../../folder-sync/synced-folder.js';
import type { SyncFolderResult } from '../../folder-sync/sync-client.js';
import type { TransferProgress } from '../../transfer/transfer-progress.js';
import type { SyncModeName } from '../../protocol/messages.js';
import { BWLIMIT_OPTION, bwlimitOption, COMPRESS_OPTION, compressionFrom, FSYNC_OPTION, fsyncOption, intOption, parseRemote, TRANSPORT_OPTION } from '../args.js';
import type { CommandContext, Runner } from '../context.js';
import { createProgress } from '../progress.js';
import { residentRequest, syncViaListener } from '../resident-client.js';
import { reportSync } from '../sync-report.js';

/** Quiet time after the last file-system event before --watch syncs, ms. */
export const WATCH_DEBOUNCE_MS = 500;
/** --watch also syncs this often without local events or the peer's notices (an older peer tells none), ms (default of --interval). */
export const WATCH_INTERVAL_MS = 30_000;
/** After the peer's change notices stop (its listener restarted, the link dropped), --watch asks again this often, ms. */
const PEER_WATCH_RETRY_MS = 10_000;
/** --interval bounds, seconds: every sync costs the peer a session and a reconciliation (a rescan when its share changed), so not below 1 s; at most a day. */
const WATCH_INTERVAL_MIN_S = 1;
const WATCH_INTERVAL_MAX_S = 86_400;
function parseMode(value: unknown): SyncModeName {
  if (value === 'two-way' || value === 'send-only' || value === 'receive-only') return value;
  throw new ClawpeerError('USAGE', `--mode must be two-way, send-only or receive-only, got ${JSON.stringify(value)}`);
}

/** Resolves after `ms`, or at once when `signal` aborts or `wake` is called. */
function waitFor(ms: number, signal: AbortSignal, onWake: (wake: () => void) => void): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    onWake(done);
  });
}

async function runSync(ctx: CommandContext, args: Record<string, unknown>): Promise<void> {
  const dir = path.resolve(String(args['dir']));
  const remote = parseRemote(String(args['remote']), true);
  if (remote.path !== '') throw new ClawpeerError('USAGE', `sync works on whole shares: use PEER:SHARE, not ${JSON.stringify(String(args['remote']))}`);
  const mode = parseMode(args['mode']);
  if (args['interval'] !== undefined && args['watch'] !== true) throw new ClawpeerError('USAGE', '--interval applies to --watch only');
  const dryRun = args['dry-run'] === true;
  if (dryRun && args['watch'] === true) throw new ClawpeerError('USAGE', '--dry-run plans one sync: it cannot be combined with --watch');
  const intervalMs = args['interval'] === undefined ? WATCH_INTERVAL_MS : intOption(args['interval'], '--interval', WATCH_INTERVAL_MIN_S, WATCH_INTERVAL_MAX_S) * 1000;
  const config = resolveConfig({ transport: args['transport'], compression: compressionFrom(args) });
  const bwlimit = bwlimitOption(args['bwlimit']);
  const fsync = fsyncOption(args['fsync']);
  // A malformed .clawpeerignore is named before anything connects (each sync reads it again).
  await loadSyncIgnore(dir);
  const log = ctx.log.child('sync');
  // A listener of this home that serves `dir` runs the sync itself: it watches its shares, so
  // an unchanged folder is not scanned again (folder-sync/folder-watcher.ts). Otherwise this process
  // syncs (folder-sync/sync-with-peer.ts loads the sync modules while it dials).
  const selfAndPeer = async (): Promise<SelfAndPeer> => {
    const [{ loadIdentity }, { PeerStore }, { resolvePeer }, { dialPathsFor }] = await Promise.all([
      import('../../home/identity-store.js'), import('../../home/peer-store.js'), import('../../home/peer-resolve.js'), import('../dial-paths.js'),
    ]);
    const identity = await loadIdentity(ctx.home.identityKeyFile);
    const peer = await resolvePeer(new PeerStore(ctx.home.peersFile), remote.peer, args['addr'] as string | undefined);
    return { identity, peer, paths: await dialPathsFor(ctx, identity, peer) };
  };
  // --watch keeps the folder's watcher and log across its syncs, as a listener does: a sync
  // skips the scan when nothing changed, or looks at just the changed files (synced-folder.ts).
  let watchFolders: ResidentFolders | undefined = undefined; // set below once --watch has its folders
  const inProcess = async (onProgress: ((p: TransferProgress) => void) | undefined): Promise<SyncFolderResult> => {
    const [{ identity, peer, paths }, { syncWithPeer }] = await Promise.all([selfAndPeer(), import('../../folder-sync/sync-with-peer.js')]);
    return syncWithPeer({
      identity, peer, paths, config, dir, share: remote.share, mode, log, signal: ctx.signal, dryRun, ...(fsync === 'none' ? { fsync } : {}),
      ...(onProgress === undefined ? {} : { onProgress }), ...(bwlimit === undefined ? {} : { bwlimit }),
      ...(watchFolders === undefined ? {} : { resident: watchFolders }),
    });
  };
  const once = async (): Promise<void> => {
    const progress = createProgress(ctx.out);
    const onProgress = progress.active ? (p: TransferProgress) => progress.update(p) : undefined;
    let result: SyncFolderResult;
    let resident = false;
    try {
      // A dry run is planned here: a listener of this home runs real syncs only, and fsyncs them.
      const realDir = dryRun || fsync === 'none' ? undefined : await realpath(dir).catch(() => undefined); // per run: --watch may have made it
      const outcome = realDir === undefined ? undefined : await syncViaListener(ctx.home.dir, residentRequest({
        dir: realDir, remote, mode, compression: config.compression, addr: args['addr'] as string | undefined, transport: args['transport'] as string | undefined, bwlimit,
      }), onProgress, ctx.signal);
      if (outcome?.kind === 'done') {
        result = outcome.result;
        resident = true;
      } else {
        if (outcome !== undefined) log.debug('syncing in this process', { why: outcome.reason });
        result = await inProcess(onProgress);
      }
    } finally {
      progress.stop();
    }
    reportSync(ctx.out, result, resident);
  };
  if (args['watch'] !== true) {
    await once();
    return;
  }

  // --watch: sync now, then after every burst of local changes (debounced), whenever the peer
  // says its share changed, and every interval.
  await makeDirs(dir);
  let dirty = false;
  let wake: (() => void) | undefined;
  // A plain debounce: a quiet timer without a longest delay.
  const debounce = new QuietTimer(WATCH_DEBOUNCE_MS, Infinity, () => wake?.());
  const stopWatchingPeer = new AbortController();
  const peerWatch = mode === 'send-only' ? Promise.resolve() : followPeerChanges({
    selfAndPeer, config, share: remote.share, log, signal: AbortSignal.any([ctx.signal, stopWatchingPeer.signal]),
    onChange: () => {
      dirty = true;
      wake?.();
    },
  });
  // One watch per directory (folder-sync/folder-watcher.ts; Node's recursive fs.watch on Linux sets one
  // per file). Publisher temp files are our own sync's, not changes; .clawpeer is not watched.
  const folders = new (await import('../../folder-sync/synced-folder.js')).ResidentFolders({ log: ctx.log });
  watchFolders = folders;
  const stopWatching = folders.watchers.forFolder(await realpath(dir)).subscribe((_dir: string, name: string | null) => {
    if (name !== null && isTempFileName(name)) return;
    dirty = true;
    debounce.poke();
  });
  try {
    while (!ctx.signal.aborted) {
      dirty = false;
      try {
        await once();
      } catch (err) {
        if (ctx.signal.aborted) break;
        if (!(err instanceof ClawpeerError) || !err.retryable) throw err;
        ctx.log.warn('sync failed; retrying at the next change or interval', { error: err.message });
      }
      if (dirty) continue;
      await waitFor(intervalMs, ctx.signal, (w) => (wake = w));
      wake = undefined;
    }
  } finally {
    debounce.cancel();
    stopWatching();
    await folders.close();
    stopWatchingPeer.abort();
    await peerWatch;
  }
}

/**
 * Keeps a watch on the peer's share (folder-sync/share-watch-client.ts) while --watch runs, so its
 * changes start a sync at once; --interval stays the fallback. A watch that ends is asked for
 * again every PEER_WATCH_RETRY_MS, and a renewed one starts a sync (changes in between were not
 * told). A peer whose clawpeer cannot tell changes is asked once. Never throws.
 */
/** Who we are, the peer, and the ways to reach it (fresh for each dial). */
interface SelfAndPeer {
  readonly identity: Identity;
  readonly peer: ResolvedPeer;
  readonly paths: PathSources;
}

async function followPeerChanges(o: {
  selfAndPeer: () => Promise<SelfAndPeer>;
  config: NodeConfig;
  share: string;
  log: Logger;
  signal: AbortSignal;
  onChange: () => void;
}): Promise<void> {
  let lost = false;
  while (!o.signal.aborted) {
    try {
      const [{ identity, peer, paths }, { watchPeerShare }] = await Promise.all([o.selfAndPeer(), import('../../folder-sync/share-watch-client.js')]);
      const outcome = await watchPeerShare({
        identity, peer, paths, config: o.config, share: o.share, log: o.log, signal: o.signal, onChange: o.onChange,
        onWatching: () => {
          if (lost) o.onChange();
          o.log.debug('the peer tells this process when its share changes', { share: o.share });
        },
      });
      if (outcome === 'unsupported') {
        o.log.info('the peer cannot tell when its share changes (an older clawpeer): its changes arrive every --interval');
        return;
      }
    } catch (err) {
      if (o.signal.aborted) return;
      o.log.debug('watching the peer\'s share failed; its changes arrive every --interval until a retry works', { error: (err as Error).message });
    }
    lost = true;
    await waitFor(PEER_WATCH_RETRY_MS, o.signal, () => undefined);
  }
}

export function registerSyncCommands(cli: Argv, run: Runner): Argv {
  return cli
    .command(
      'sync <dir> <remote>',
      'sync a local folder with a peer\'s share: REMOTE is PEER:SHARE',
      (y) =>
        y
          .positional('dir', { type: 'string' })
          .positional('remote', { type: 'string' })
          .option('mode', { type: 'string', choices: ['two-way', 'send-only', 'receive-only'], default: 'two-way', describe: 'which directions changes travel (of this side)' })
          .option('watch', { type: 'boolean', default: false, describe: 'keep syncing as files change, until SIGINT' })
          .option('dry-run', { alias: 'n', type: 'boolean', default: false, describe: 'show what would change on each side (and conflicts), without changing or sending any file' })
          .option('interval', { type: 'number', describe: `with --watch: seconds between syncs when nothing changed here and the peer told of no change (its listener tells at once; an older peer's changes wait this long) (default ${WATCH_INTERVAL_MS / 1000})` })
          .option('addr', { type: 'string', describe: 'HOST:PORT (default: the pair entry\'s address)' })
          .option('transport', TRANSPORT_OPTION)
          .option('fsync', FSYNC_OPTION)
          .option('bwlimit', { ...BWLIMIT_OPTION, describe: 'cap the rate this side sends at, and ask the peer to cap its sending the same, e.g. 500 (KiB/s, as rsync), 2MiB, 10MB/s or 100mbit' })
          .option('compress', COMPRESS_OPTION)
          .example('$0 sync ~/docs alice:docs', 'both ways, once: new, changed and deleted files, conflicts kept as copies')
          .example('$0 sync -n ~/docs alice:docs', 'show what would change on each side, change nothing')
          .example('$0 sync --watch ~/docs alice:docs', 'keep syncing as files change here or there, until Ctrl-C')
          .example('$0 sync --mode receive-only ~/mirror alice:docs', 'take alice\'s changes, never send local ones'),
      run(runSync),
    );
}
