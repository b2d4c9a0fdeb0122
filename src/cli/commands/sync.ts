// `sync`: revision sync of a folder with a peer's share (its history: history.ts). Light imports:
// when a listener runs the sync (resident-client.ts), this process loads little else.
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import type { Argv } from 'yargs';
import { ClawpeerError } from '../../errors.js';
import { resolveConfig } from '../../home/facade.js';
import type { PeerTarget } from '../../reach/dial-paths.js';
import {
  loadSyncIgnore,
  syncWhileWatching,
  syncWithPeer,
  WATCH_INTERVAL_MS,
  type ResidentFolders,
  type SyncFolderResult,
  type SyncModeName,
  type TransferProgress,
} from '../../folder-sync/facade.js';
import {
  BWLIMIT_OPTION,
  bwlimitOption,
  COMPRESS_OPTION,
  CONNECTIONS_OPTION,
  connectionsOption,
  compressionFrom,
  FSYNC_OPTION,
  fsyncOption,
  intOption,
  parseRemote,
  TRANSPORT_OPTION,
} from '../args.js';
import { busyWaitMs, untilNotBusy, waitingEvent, waitingText } from '../busy-wait.js';
import type { CommandContext, Runner } from '../context.js';
import { createProgress } from '../progress.js';
import { residentRequest, syncViaListener } from '../resident-client.js';
import { reportSync } from '../sync-report.js';

/** --interval bounds, seconds: every sync costs the peer a session and a reconciliation (a rescan when its share changed), so not below 1 s; at most a day. */
const WATCH_INTERVAL_MIN_S = 1;
const WATCH_INTERVAL_MAX_S = 86_400;
function parseMode(value: unknown): SyncModeName {
  if (value === 'two-way' || value === 'send-only' || value === 'receive-only') return value;
  throw new ClawpeerError('USAGE', `--mode must be two-way, send-only or receive-only, got ${JSON.stringify(value)}`);
}

/** `sync` with the arguments yargs parsed (or plain-fast-path.ts, the same object). */
export async function runSync(ctx: CommandContext, args: Record<string, unknown>): Promise<void> {
  const dir = path.resolve(String(args['dir']));
  const remote = parseRemote(String(args['remote']), true);
  if (remote.path !== '')
    throw new ClawpeerError(
      'USAGE',
      `sync works on whole shares: use PEER:SHARE, not ${JSON.stringify(String(args['remote']))}`,
    );
  const mode = parseMode(args['mode']);
  if (args['interval'] !== undefined && args['watch'] !== true)
    throw new ClawpeerError('USAGE', '--interval applies to --watch only');
  const dryRun = args['dry-run'] === true;
  if (dryRun && args['watch'] === true)
    throw new ClawpeerError('USAGE', '--dry-run plans one sync: it cannot be combined with --watch');
  const intervalMs =
    args['interval'] === undefined
      ? WATCH_INTERVAL_MS
      : intOption(args['interval'], '--interval', WATCH_INTERVAL_MIN_S, WATCH_INTERVAL_MAX_S) * 1000;
  const config = resolveConfig({ transport: args['transport'], compression: compressionFrom(args) });
  const bwlimit = bwlimitOption(args['bwlimit']);
  const fsync = fsyncOption(args['fsync']);
  const connections = connectionsOption(args['connections']);
  // A malformed .clawpeerignore is named before anything connects (each sync reads it again).
  await loadSyncIgnore(dir);
  const log = ctx.log.child('sync');
  // A listener of this home that serves `dir` runs the sync itself: it watches its shares, so
  // an unchanged folder is not scanned again (folder-sync/folder-watcher.ts). Otherwise this process
  // syncs (folder-sync/sync-with-peer.ts loads the sync modules while it dials).
  const selfAndPeer = async (): Promise<PeerTarget> => {
    const { peerTarget } = await import('../../reach/dial-paths.js');
    return peerTarget({
      home: ctx.home,
      reach: () => ctx.reach(),
      peerName: remote.peer,
      addr: args['addr'] as string | undefined,
      log: ctx.log,
    });
  };
  // --watch hands each sync its watched folder (folder-sync/sync-watch.ts): a sync then skips the
  // scan when nothing changed, or looks at just the changed files (synced-folder.ts).
  const inProcess = async (
    onProgress: ((p: TransferProgress) => void) | undefined,
    watchFolders: ResidentFolders | undefined,
  ): Promise<SyncFolderResult> => {
    const { identity, peer, paths } = await selfAndPeer();
    return syncWithPeer({
      identity,
      peer,
      paths,
      config,
      dir,
      share: remote.share,
      mode,
      home: ctx.home.dir,
      log,
      signal: ctx.signal,
      dryRun,
      ...(fsync === 'none' ? { fsync } : {}),
      connections,
      ...(onProgress === undefined ? {} : { onProgress }),
      ...(bwlimit === undefined ? {} : { bwlimit }),
      ...(watchFolders === undefined ? {} : { resident: watchFolders }),
    });
  };
  const once = async (watchFolders?: ResidentFolders): Promise<void> => {
    const progress = createProgress(ctx.out);
    const onProgress = progress.active ? (p: TransferProgress) => progress.update(p) : undefined;
    let result: SyncFolderResult;
    let resident = false;
    try {
      // A dry run is planned here: a listener of this home runs real syncs only, and fsyncs them.
      const realDir = dryRun || fsync === 'none' ? undefined : await realpath(dir).catch(() => undefined); // per run: --watch may have made it
      const outcome =
        realDir === undefined
          ? undefined
          : await syncViaListener(
              ctx.home.dir,
              residentRequest({
                dir: realDir,
                remote,
                mode,
                compression: config.compression,
                addr: args['addr'] as string | undefined,
                transport: args['transport'] as string | undefined,
                bwlimit,
              }),
              onProgress,
              ctx.signal,
            );
      if (outcome?.kind === 'done') {
        result = outcome.result;
        resident = true;
      } else {
        if (outcome !== undefined) log.debug('syncing in this process', { why: outcome.reason });
        result = await inProcess(onProgress, watchFolders);
      }
    } finally {
      progress.stop();
    }
    reportSync(ctx.out, result, resident);
  };
  if (args['watch'] !== true) {
    // A folder another sync holds, here or there, is waited for (busy-wait.ts); --watch retries
    // at its next change or interval instead.
    const boundMs = busyWaitMs();
    await untilNotBusy(() => once(), {
      signal: ctx.signal,
      boundMs,
      onWait: (err) => ctx.out.notice(waitingEvent(err, boundMs), waitingText(err, boundMs)),
    });
    return;
  }

  // --watch: sync now, then on every change here or there and every interval (sync-watch.ts).
  await syncWhileWatching({
    dir,
    share: remote.share,
    mode,
    config,
    intervalMs,
    log: ctx.log,
    peerLog: log,
    signal: ctx.signal,
    selfAndPeer,
    syncOnce: once,
  });
}

export function registerSyncCommands(cli: Argv, run: Runner): Argv {
  return cli.command(
    'sync <dir> <remote>',
    "sync a local folder with a peer's share: REMOTE is PEER:SHARE",
    (y) =>
      y
        .positional('dir', { type: 'string' })
        .positional('remote', { type: 'string' })
        .option('mode', {
          type: 'string',
          choices: ['two-way', 'send-only', 'receive-only'],
          default: 'two-way',
          describe: 'which directions changes travel (of this side)',
        })
        .option('watch', { type: 'boolean', default: false, describe: 'keep syncing as files change, until SIGINT' })
        .option('dry-run', {
          alias: 'n',
          type: 'boolean',
          default: false,
          describe: 'show what would change on each side (and conflicts), without changing or sending any file',
        })
        .option('interval', {
          type: 'number',
          describe: `with --watch: seconds between syncs when nothing changed here and the peer told of no change (its listener tells at once; an older peer's changes wait this long) (default ${WATCH_INTERVAL_MS / 1000})`,
        })
        .option('addr', { type: 'string', describe: "HOST:PORT (default: the pair entry's address)" })
        .option('transport', TRANSPORT_OPTION)
        .option('fsync', FSYNC_OPTION)
        .option('connections', CONNECTIONS_OPTION)
        .option('bwlimit', {
          ...BWLIMIT_OPTION,
          describe:
            'cap the rate this side sends at, and ask the peer to cap its sending the same, e.g. 500 (KiB/s, as rsync), 2MiB, 10MB/s or 100mbit',
        })
        .option('compress', COMPRESS_OPTION)
        .example(
          '$0 sync ~/docs alice:docs',
          'both ways, once: new, changed and deleted files, conflicts kept as copies',
        )
        .example('$0 sync -n ~/docs alice:docs', 'show what would change on each side, change nothing')
        .example('$0 sync --watch ~/docs alice:docs', 'keep syncing as files change here or there, until Ctrl-C')
        .example('$0 sync --mode receive-only ~/mirror alice:docs', "take alice's changes, never send local ones"),
    run(runSync),
  );
}
