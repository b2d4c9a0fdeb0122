// `clawpeer folder add|edit|list|remove|pause|resume|revert|log`: the shared folders of this
// home's config.json, which its listener keeps in sync by itself (folders/folder-service.ts).
// The commands only edit the file, and a running listener follows it; `revert` asks that
// listener to run it (over the control socket).
import path from 'node:path';
import type { Argv } from 'yargs';
import { ClawpeerError } from '../../errors.js';
import { duration, escapeToShow } from '../../format.js';
import {
  checkFolderId,
  DEFAULT_FOLDER_INTERVAL_S,
  DEFAULT_VERSIONING,
  editFolders,
  findPeer,
  FOLDER_INTERVAL_LIMITS_S,
  FOLDER_MODES,
  folderLogModule,
  makeFolderMarker,
  folderOffersModule,
  loadFolders,
  overlappingFolder,
  PeerStore,
  versioningProblem,
  type FolderConfig,
  type FolderLogEntry,
  type FolderMode,
  type PeerEntry,
} from '../../folders/facade.js';
import type { OverrideReport, RevertReport } from '../../folder-sync/facade.js';
import { intOption } from '../args.js';
import type { CommandContext, Runner } from '../context.js';
import { offerLines } from './status.js';

function folderRecord(f: FolderConfig): Record<string, unknown> {
  return {
    id: f.id,
    path: f.path,
    with: f.with,
    mode: f.mode,
    versioning: f.versioning,
    paused: f.paused,
    intervalS: f.intervalS,
  };
}

function folderLine(f: FolderConfig): string {
  return `${f.id}: ${f.path} with ${f.with.join(', ')} (${f.mode}, versioning ${f.versioning}, every ${f.intervalS} s${f.paused ? ', paused' : ''})`;
}

function findFolder(folders: readonly FolderConfig[], id: string): FolderConfig {
  const f = folders.find((x) => x.id === id);
  if (f === undefined)
    throw new ClawpeerError(
      'USAGE',
      `no folder ${JSON.stringify(id)} in this home (folders: ${folders.map((x) => x.id).join(', ') || 'none'})`,
    );
  return f;
}

async function addFolder(ctx: CommandContext, args: Record<string, unknown>): Promise<void> {
  const id = checkFolderId(String(args['id']), '--id');
  const dir = path.resolve(String(args['path']));
  const mode = String(args['mode']) as FolderMode;
  if (!FOLDER_MODES.includes(mode))
    throw new ClawpeerError(
      'USAGE',
      `--mode must be one of ${FOLDER_MODES.join(', ')}, got ${JSON.stringify(args['mode'])}`,
    );
  const versioning = String(args['versioning']);
  const versioningError = versioningProblem(versioning);
  if (versioningError !== undefined) throw new ClawpeerError('USAGE', `--versioning: ${versioningError}`);
  const intervalS = intOption(args['interval'], '--interval', ...FOLDER_INTERVAL_LIMITS_S);
  const names = peerNames(args['with']);
  if (names.length === 0)
    throw new ClawpeerError('USAGE', '--with names no peer: give PEER[,PEER...] (pair names or node ids)');
  await checkPaired(ctx, names, '--with');
  const folder: FolderConfig = { id, path: dir, with: [...new Set(names)], mode, versioning, paused: false, intervalS };
  await editFolders(ctx.home.dir, (folders) => {
    if (folders.some((f) => f.id === id))
      throw new ClawpeerError(
        'USAGE',
        `a folder ${JSON.stringify(id)} exists already (change it with clawpeer folder edit ${id})`,
      );
    const same = folders.find((f) => f.path === dir);
    if (same !== undefined) throw new ClawpeerError('USAGE', `${dir} is folder ${same.id} already`);
    const overlap = overlappingFolder(folders, dir);
    if (overlap !== undefined)
      throw new ClawpeerError(
        'USAGE',
        `${dir} overlaps folder ${overlap.id} (${overlap.path}): one folder may not hold another`,
      );
    return [...folders, folder];
  });
  // Its marker (the folder made if missing): a listener then takes the folder for one it started,
  // and a folder removed, deleted and added again syncs anew instead of waiting for its disk.
  // Best effort: a path it cannot make is the listener's to report (`status`).
  await makeFolderMarker(dir).catch(() => undefined);
  ctx.out.emit({ event: 'folder-added', ...folderRecord(folder) }, `added ${folderLine(folder)}`);
}

/** The names of a PEER[,PEER...] option, trimmed, empty ones dropped. */
function peerNames(value: unknown): string[] {
  return String(value)
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
}

/** PEER_UNKNOWN for the first of `names` that is neither a pair name nor a paired node id. */
async function checkPaired(ctx: CommandContext, names: readonly string[], option: string): Promise<PeerEntry[]> {
  const pairs = await new PeerStore(ctx.home.peersFile).list();
  for (const n of names) {
    if (findPeer(pairs, n) === undefined)
      throw new ClawpeerError(
        'PEER_UNKNOWN',
        `${option} ${n}: not a paired peer name or id (pair with it first: clawpeer pair add)`,
      );
  }
  return pairs;
}

/**
 * `folder edit`: another peer list (--with, or --add-peer / --remove-peer), mode, versioning or
 * interval for a folder, kept with its files and revision log (as Syncthing's folder settings;
 * before, only remove + add did this). The running listener restarts that folder's syncs.
 */
async function editFolder(ctx: CommandContext, args: Record<string, unknown>): Promise<void> {
  const id = String(args['id']);
  const given = (key: string): boolean => args[key] !== undefined;
  if (!['with', 'add-peer', 'remove-peer', 'mode', 'versioning', 'interval'].some(given))
    throw new ClawpeerError(
      'USAGE',
      'nothing to change: give --with, --add-peer, --remove-peer, --mode, --versioning or --interval',
    );
  if (given('with') && (given('add-peer') || given('remove-peer')))
    throw new ClawpeerError('USAGE', '--with replaces the peer list: give it alone, or --add-peer / --remove-peer');
  const replace = given('with') ? peerNames(args['with']) : undefined;
  const add = given('add-peer') ? peerNames(args['add-peer']) : [];
  const drop = given('remove-peer') ? peerNames(args['remove-peer']) : [];
  const pairs = await checkPaired(ctx, [...(replace ?? []), ...add], given('with') ? '--with' : '--add-peer');
  if (given('versioning')) {
    const problem = versioningProblem(String(args['versioning']));
    if (problem !== undefined) throw new ClawpeerError('USAGE', `--versioning: ${problem}`);
  }
  const intervalS = given('interval')
    ? intOption(args['interval'], '--interval', ...FOLDER_INTERVAL_LIMITS_S)
    : undefined;
  // A peer is named by pair name or node id: both spellings of one peer are the same entry.
  const idOf = (name: string): string => findPeer(pairs, name)?.id ?? name;
  let changed: FolderConfig | undefined;
  await editFolders(ctx.home.dir, (folders) => {
    const f = findFolder(folders, id);
    let peers = replace ?? [...f.with];
    for (const d of drop) {
      const gone = peers.filter((p) => idOf(p) === idOf(d));
      if (gone.length === 0)
        throw new ClawpeerError(
          'USAGE',
          `--remove-peer ${d}: folder ${id} is not shared with it (it is with ${f.with.join(', ')})`,
        );
      peers = peers.filter((p) => !gone.includes(p));
    }
    for (const a of add) if (!peers.some((p) => idOf(p) === idOf(a))) peers.push(a);
    if (peers.length === 0)
      throw new ClawpeerError(
        'USAGE',
        `folder ${id} would be shared with no peer: keep one, or stop sharing it with clawpeer folder remove ${id}`,
      );
    changed = {
      ...f,
      with: [...new Set(peers)],
      ...(given('mode') ? { mode: String(args['mode']) as FolderMode } : {}),
      ...(given('versioning') ? { versioning: String(args['versioning']) } : {}),
      ...(intervalS === undefined ? {} : { intervalS }),
    };
    return folders.map((x) => (x.id === id ? changed! : x));
  });
  if (changed !== undefined)
    ctx.out.emit({ event: 'folder-changed', ...folderRecord(changed) }, `changed ${folderLine(changed)}`);
}

async function setPaused(ctx: CommandContext, id: string, paused: boolean): Promise<void> {
  let changed: FolderConfig | undefined;
  await editFolders(ctx.home.dir, (folders) => {
    findFolder(folders, id);
    return folders.map((f) => (f.id === id ? (changed = { ...f, paused }) : f));
  });
  if (changed === undefined) return;
  ctx.out.emit(
    { event: paused ? 'folder-paused' : 'folder-resumed', ...folderRecord(changed) },
    `${paused ? 'paused' : 'resumed'} ${changed.id}`,
  );
}

/**
 * `clawpeer folder list` (also run without yargs: plain-fast-path.ts): the folders, then the
 * folders paired peers offer that this home has not added, as its listener last kept them
 * (folders/folder-offers.ts; those of folders added or peers unpaired since are left out).
 */
export async function listFolders(ctx: CommandContext): Promise<void> {
  const [folders, pairs, { readFolderOffers, standingOffers }] = await Promise.all([
    loadFolders(ctx.home.dir),
    new PeerStore(ctx.home.peersFile).list().catch(() => []),
    folderOffersModule(),
  ]);
  const now = Date.now();
  const offers = standingOffers(await readFolderOffers(ctx.home.dir), folders, pairs, now);
  if (ctx.out.json) {
    for (const f of folders) ctx.out.emit({ event: 'folder', ...folderRecord(f) }, '');
    for (const o of offers) ctx.out.emit({ event: 'folder-offer', ...o }, '');
    return;
  }
  ctx.out.emit(
    {},
    [
      folders.length === 0 ? 'no shared folders (clawpeer folder add PATH --id ID --with PEER)' : '',
      ...folders.map(folderLine),
      ...offerLines(offers, now),
    ]
      .filter((l) => l !== '')
      .join('\n'),
  );
}

/** `clawpeer folder log ID` (also run without yargs: plain-fast-path.ts). */
export async function showLog(ctx: CommandContext, id: string): Promise<void> {
  findFolder(await loadFolders(ctx.home.dir), id);
  const { readFolderLog } = await folderLogModule();
  const entries = await readFolderLog(ctx.home.dir, id);
  if (ctx.out.json) {
    for (const e of entries)
      ctx.out.emit({ event: e.kind === undefined ? 'folder-sync' : `folder-${e.kind}`, ...e }, '');
    return;
  }
  if (entries.length === 0) {
    ctx.out.emit({}, `no sync of ${id} has changed anything yet`);
    return;
  }
  const now = Date.now();
  ctx.out.emit({}, entries.map((e) => logLines(e, now)).join('\n'));
}

/**
 * `folder revert ID [--dry-run]`: a receive-only folder's local changes are taken back (the
 * listener's folder service runs it: folders/folder-revert.ts). The folder must be in this
 * home's config and receive-only, and its listener running.
 */
async function revertFolder(ctx: CommandContext, id: string, dryRun: boolean): Promise<void> {
  const f = findFolder(await loadFolders(ctx.home.dir), id);
  if (f.mode !== 'receive-only')
    throw new ClawpeerError(
      'USAGE',
      `folder ${id} is ${f.mode}: revert takes back the local changes of a receive-only folder (Syncthing's Revert Local Changes); a ${f.mode} folder sends its changes to its peers`,
    );
  const { revertViaListener } = await import('../resident-client.js');
  const report = await revertViaListener(ctx.home.dir, id, dryRun, ctx.signal);
  if (typeof report === 'string')
    throw new ClawpeerError(
      'IO',
      `no listener is running for the home ${ctx.home.dir}: ${report}; the revert runs in the listener that keeps folder ${id} (start one with \`clawpeer listen\`)`,
    );
  const shown = report.paths.map(revertedLine);
  const head =
    report.paths.length === 0 && report.withdrawn === 0
      ? `folder ${id} has no local changes to revert`
      : `${dryRun ? 'would revert' : 'reverted'} ${report.paths.length} path${report.paths.length === 1 ? '' : 's'} of folder ${id} to the peers' version (${report.withdrawn} local revision${report.withdrawn === 1 ? '' : 's'} ${dryRun ? 'to withdraw' : 'withdrawn'})`;
  const kept = report.keptIn === undefined ? [] : [`the local versions are kept in ${escapeToShow(report.keptIn)}`];
  ctx.out.emit(
    { event: dryRun ? 'folder-revert-plan' : 'folder-reverted', ...report },
    [head, ...shown, ...kept].join('\n'),
  );
}

/**
 * `folder override ID [--dry-run]`: a send-only folder's versions of the paths its peers changed
 * become the newest (the listener's folder service runs it: folders/folder-override.ts), and its
 * syncs take them to every peer. The folder must be in this home's config and send-only, and its
 * listener running.
 */
async function overrideFolder(ctx: CommandContext, id: string, dryRun: boolean): Promise<void> {
  const f = findFolder(await loadFolders(ctx.home.dir), id);
  if (f.mode !== 'send-only')
    throw new ClawpeerError(
      'USAGE',
      `folder ${id} is ${f.mode}: override makes a send-only folder's versions win over its peers' changes (Syncthing's Override Changes); a ${f.mode} folder takes its peers' changes`,
    );
  const { overrideViaListener } = await import('../resident-client.js');
  const report = await overrideViaListener(ctx.home.dir, id, dryRun, ctx.signal);
  if (typeof report === 'string')
    throw new ClawpeerError(
      'IO',
      `no listener is running for the home ${ctx.home.dir}: ${report}; the override runs in the listener that keeps folder ${id} (start one with \`clawpeer listen\`)`,
    );
  const n = report.paths.length;
  const head =
    n === 0
      ? `folder ${id} has no paths changed by peers to override`
      : `${dryRun ? 'would make' : 'made'} this copy's version of ${n} path${n === 1 ? '' : 's'} of folder ${id} the newest${dryRun ? '' : ': its peers take it at their next sync'}`;
  const shown = report.paths.map(
    (p: OverrideReport['paths'][number]) => `  ${escapeToShow(p.path)}: ${REVERT_WORDS[p.here]} here`,
  );
  ctx.out.emit(
    { event: dryRun ? 'folder-override-plan' : 'folder-overridden', ...report },
    [head, ...shown].join('\n'),
  );
}

/** How `folder revert` names what a path held here and what it holds now. */
const REVERT_WORDS = {
  file: 'file',
  dir: 'directory',
  symlink: 'symlink',
  deleted: 'deleted',
  none: 'gone (no peer has it)',
} as const;

/** One path of a revert: `  kept.txt: file here -> file`. */
function revertedLine(p: RevertReport['paths'][number]): string {
  const now = p.bySync === true ? "the peers' current version, with the sync that follows" : REVERT_WORDS[p.peers];
  return `  ${escapeToShow(p.path)}: ${REVERT_WORDS[p.local]} here -> ${now}`;
}

/** How each listed change is marked under its sync's line (as rsync's itemize: + new, . changed, - gone). */
const CHANGE_MARKS = { added: '+', changed: '.', deleted: '-' } as const;

/** One sync, revert or override in `folder log`: its summary line, then the paths it changed, one per line. */
export function logLines(e: FolderLogEntry, now: number): string {
  const ago = `(${duration((now - e.time) / 1000)} ago)`;
  if (e.kind === 'override')
    return [
      `${new Date(e.time).toISOString()} override: this copy's version of ${e.overridden} path${e.overridden === 1 ? '' : 's'} made the newest ${ago}`,
      ...e.paths.map((p) => `  ${escapeToShow(p.path)}: ${REVERT_WORDS[p.here]} here`),
      ...(e.overridden > e.paths.length ? [`  ... and ${e.overridden - e.paths.length} more`] : []),
    ].join('\n');
  if (e.kind === 'revert') {
    const kept = e.keptIn === undefined ? '' : `; the local versions moved to ${escapeToShow(e.keptIn)}`;
    return [
      `${new Date(e.time).toISOString()} revert: ${e.reverted} path${e.reverted === 1 ? '' : 's'} back to the peers' version, ${e.withdrawn} local revision${e.withdrawn === 1 ? '' : 's'} withdrawn${kept} ${ago}`,
      ...e.paths.map(revertedLine),
      ...(e.reverted > e.paths.length ? [`  ... and ${e.reverted - e.paths.length} more`] : []),
    ].join('\n');
  }
  const total = e.added + e.changed + e.deleted;
  const listed = e.paths ?? [];
  return [
    `${new Date(e.time).toISOString()} ${e.by === 'peer' ? 'by' : 'with'} ${e.peerName ?? e.peer}: ${e.added} added, ${e.changed} changed, ${e.deleted} deleted here; ${e.sent} revision${e.sent === 1 ? '' : 's'} sent; ${e.conflicts} conflict${e.conflicts === 1 ? '' : 's'}${e.skipped > 0 ? `, ${e.skipped} skipped` : ''} ${ago}`,
    ...listed.map((c) => `  ${CHANGE_MARKS[c.change]} ${escapeToShow(c.path)}`),
    ...(listed.length > 0 && total > listed.length ? [`  ... and ${total - listed.length} more`] : []),
  ].join('\n');
}

export function registerFolderCommands(cli: Argv, run: Runner): Argv {
  return cli.command(
    'folder',
    "shared folders this home's listener keeps in sync with peers by itself: add, edit, list, remove, pause, resume, revert, log",
    (y) =>
      y
        .command(
          'add <path>',
          'share a folder with paired peers; the listener syncs it from now on',
          (a) =>
            a
              .positional('path', { type: 'string', describe: 'the local folder (made if missing)' })
              .option('id', {
                type: 'string',
                demandOption: true,
                describe: "the folder's id, the same on every device that shares it",
              })
              .option('with', {
                type: 'string',
                demandOption: true,
                describe: 'PEER[,PEER...]: paired peers (pair names or node ids) to keep it in sync with',
              })
              .option('mode', {
                type: 'string',
                choices: FOLDER_MODES,
                default: 'two-way',
                describe: "two-way; send-only (never takes peers' changes); receive-only (never sends local changes)",
              })
              .option('versioning', {
                type: 'string',
                default: DEFAULT_VERSIONING,
                describe: 'what replaced and deleted files are kept as: keep-last:N, trashcan:DAYS or staggered[:DAYS]',
              })
              .option('interval', {
                type: 'number',
                default: DEFAULT_FOLDER_INTERVAL_S,
                describe: 'seconds between syncs with each peer when nothing told of a change (fallback)',
              })
              .example(
                '$0 folder add ~/docs --id docs --with alice,bob',
                'keep ~/docs in sync with alice and bob, both ways',
              ),
          run(addFolder),
        )
        .command(
          'edit <id>',
          "change a folder's peers, mode, versioning or interval (its files and history stay)",
          (a) =>
            a
              .positional('id', { type: 'string' })
              .option('with', { type: 'string', describe: 'PEER[,PEER...]: the whole new list of peers' })
              .option('add-peer', { type: 'string', describe: 'PEER[,PEER...]: share it with these too' })
              .option('remove-peer', { type: 'string', describe: 'PEER[,PEER...]: stop syncing it with these' })
              .option('mode', { type: 'string', choices: FOLDER_MODES, describe: 'two-way, send-only or receive-only' })
              .option('versioning', {
                type: 'string',
                describe: 'keep-last:N, trashcan:DAYS or staggered[:DAYS]',
              })
              .option('interval', { type: 'number', describe: 'seconds between syncs with each peer (fallback)' })
              .example('$0 folder edit docs --add-peer carol', 'keep docs in sync with carol too'),
          run(editFolder),
        )
        .command(
          'list',
          'the shared folders of this home, then the folders paired peers offer to it',
          (a) => a,
          run(listFolders),
        )
        .command(
          'remove <id>',
          'stop sharing a folder (its files stay)',
          (a) => a.positional('id', { type: 'string' }),
          run(async (ctx, args) => {
            const id = String(args['id']);
            await editFolders(ctx.home.dir, (folders) => {
              findFolder(folders, id);
              return folders.filter((f) => f.id !== id);
            });
            ctx.out.emit({ event: 'folder-removed', id }, `removed ${id} (its files stay where they are)`);
          }),
        )
        .command(
          'pause <id>',
          'stop syncing and serving a folder until resumed',
          (a) => a.positional('id', { type: 'string' }),
          run((ctx, args) => setPaused(ctx, String(args['id']), true)),
        )
        .command(
          'resume <id>',
          'sync a paused folder again',
          (a) => a.positional('id', { type: 'string' }),
          run((ctx, args) => setPaused(ctx, String(args['id']), false)),
        )
        .command(
          'revert <id>',
          "take back a receive-only folder's local changes: the peers' versions return, the local ones move to .clawpeer/reverted/",
          (a) =>
            a
              .positional('id', { type: 'string' })
              .option('dry-run', {
                type: 'boolean',
                default: false,
                describe: 'list what would be reverted, change nothing',
              })
              .example('$0 folder revert docs --dry-run', 'list the local changes of docs a revert would take back'),
          run((ctx, args) => revertFolder(ctx, String(args['id']), args['dry-run'] === true)),
        )
        .command(
          'override <id>',
          "make a send-only folder's versions of the paths its peers changed the newest, so every peer takes them back",
          (a) =>
            a
              .positional('id', { type: 'string' })
              .option('dry-run', {
                type: 'boolean',
                default: false,
                describe: 'list what would be overridden, change nothing',
              })
              .example('$0 folder override docs --dry-run', 'list the paths of docs its peers changed'),
          run((ctx, args) => overrideFolder(ctx, String(args['id']), args['dry-run'] === true)),
        )
        .command(
          'log <id>',
          'what each sync of a folder changed (newest last)',
          (a) => a.positional('id', { type: 'string' }),
          run((ctx, args) => showLog(ctx, String(args['id']))),
        )
        .demandCommand(1, 'folder needs a subcommand: add, edit, list, remove, pause, resume, revert, override or log'),
  );
}
