// `clawpeer status`: what the listener of this home serves and is doing, asked over its control
// socket (resident-protocol.ts): address and shares, the paired peers connected now, and each
// push, pull and sync it serves with how far it got. No listener is exit 1, saying so.
import type { Argv } from 'yargs';
import { ClawpeerError } from '../../errors.js';
import { count, duration, escapeToShow, human } from '../../format.js';
import { PeerStore } from '../../home/facade.js';
import type { ListenerStatus } from '../../folder-sync/facade.js';
import type { CommandContext, Runner } from '../context.js';

/** One line per activity: `push from bob into docs/photos: 12.0 MiB of 40.0 MiB, 3 of 10 files, for 20 s (614.4 KiB/s on average)`. */
export function activityLine(a: ListenerStatus['activity'][number], peerName: string, nowMs: number): string {
  // The share and path a peer asked for: its bidi characters are shown escaped, as push and pull show paths.
  const where = escapeToShow(a.path === '' ? a.share : `${a.share}/${a.path}`);
  const what =
    a.kind === 'push'
      ? `push from ${peerName} into ${where}`
      : a.kind === 'pull'
        ? `pull by ${peerName} of ${where}`
        : `sync with ${peerName} of ${where}`;
  const bytes = a.totalBytes > 0 ? `${human(a.bytes)} of ${human(a.totalBytes)}` : human(a.bytes);
  const files = a.totalFiles > 0 ? `, ${a.files} of ${a.totalFiles} files` : '';
  const seconds = (nowMs - a.startedAt) / 1000;
  const rate = seconds > 0 && a.bytes > 0 ? ` (${human(a.bytes / seconds)}/s on average)` : '';
  return `  ${what}: ${bytes}${files}, for ${duration(seconds)}${rate}`;
}

/** `3 pushes (1.2 MiB, 1 failed)`: how many of a kind ended, their bytes, and how many of them failed. */
function endedLine(kind: 'push' | 'pull' | 'sync', e: ListenerStatus['ended']['push']): string {
  const failed = e.failed > 0 ? `, ${e.failed} failed` : '';
  return `${count(e.count, kind, kind === 'push' ? 'pushes' : `${kind}s`)} (${human(e.bytes)}${failed})`;
}

/** A shared folder and each of its peers: `docs (two-way) /home/me/docs` then `  alice: in-sync, last sync 3 s ago`. */
export function folderLines(
  f: NonNullable<ListenerStatus['folders']>[number],
  nameOf: ReadonlyMap<string, string>,
  nowMs: number,
): string[] {
  const ago = (ms: number): string => `${duration(Math.max(0, nowMs - ms) / 1000)} ago`;
  return [
    `folder ${f.id} (${f.mode}${f.paused ? ', paused' : ''}) ${f.path}${f.problem === undefined ? '' : `: ${escapeToShow(f.problem)}`}`,
    ...unsyncableLines(f),
    ...localChangesLines(f),
    ...peerChangesLines(f),
    ...f.peers.map((p) => {
      const who = p.name ?? nameOf.get(p.peer) ?? p.peer;
      const left =
        p.bytesLeft === undefined && p.filesLeft === undefined
          ? ''
          : ` (${p.bytesLeft === undefined ? '' : `${human(p.bytesLeft)} `}${p.filesLeft === undefined ? '' : `${p.filesLeft} files `}left)`;
      const state =
        p.state === 'waiting'
          ? `waiting for the peer since ${ago(p.since)}`
          : p.state === 'syncing'
            ? `syncing${left}`
            : p.state === 'peer-paused'
              ? 'paused by the peer'
              : p.state;
      const last = p.lastSyncAt === undefined ? 'never synced' : `last sync ${ago(p.lastSyncAt)}`;
      const next = p.nextAt === undefined ? '' : `, next try in ${duration(Math.max(0, p.nextAt - nowMs) / 1000)}`;
      return `  ${who}: ${state}, ${last}${next}${p.error === undefined ? '' : ` (${escapeToShow(p.error)})`}${p.mode === f.mode ? '' : `, ${p.mode} with this peer`}`;
    }),
  ];
}

/**
 * A receive-only folder's local changes (folders/local-changes.ts): `  local changes kept: 3
 * (a.txt, b.txt, c.txt): receive-only, not sent` and how to take the peers' versions (`folder revert`). None: no line.
 */
function localChangesLines(f: NonNullable<ListenerStatus['folders']>[number]): string[] {
  const n = f.localChanges ?? 0;
  if (n === 0) return [];
  const shown = f.localChangePaths ?? [];
  const more = n > shown.length ? `${shown.length > 0 ? ', ' : ''}... ${n - shown.length} more` : '';
  return [
    `  local changes kept: ${n} (${shown.map(escapeToShow).join(', ')}${more}): receive-only, not sent`,
    `    clawpeer folder revert ${f.id} takes the peers' versions back (the local ones move to .clawpeer/reverted/)`,
  ];
}

/**
 * A send-only folder's paths changed by peers (folders/peer-changes.ts; Syncthing's "Out of Sync
 * Items"): `  2 paths changed by peers, not taken (send-only): a.txt, b.txt` and how to make this
 * copy's versions win (`folder override`). None: no line.
 */
function peerChangesLines(f: NonNullable<ListenerStatus['folders']>[number]): string[] {
  const n = f.peerChanges ?? 0;
  if (n === 0) return [];
  const shown = f.peerChangePaths ?? [];
  const more = n > shown.length ? `${shown.length > 0 ? ', ' : ''}... ${n - shown.length} more` : '';
  return [
    `  ${n === 1 ? '1 path' : `${n} paths`} changed by peers, not taken (send-only): ${shown.map(escapeToShow).join(', ')}${more}`,
    `    clawpeer folder override ${f.id} makes this copy's versions the newest on every peer`,
  ];
}

/**
 * What the folder's last scan could not record, a line per reason, as Syncthing lists failed
 * items: `  2 paths cannot be synced: name has a control character (a\#012b, b\#033c)`. None: no line.
 */
function unsyncableLines(f: NonNullable<ListenerStatus['folders']>[number]): string[] {
  const groups = f.unsyncable ?? [];
  if (groups.length === 0) return [];
  return [
    ...groups.map((g) => {
      const more =
        g.count > g.paths.length ? `${g.paths.length > 0 ? ', ' : ''}... ${g.count - g.paths.length} more` : '';
      return `  ${count(g.count, 'path')} cannot be synced: ${g.reason} (${g.paths.map(escapeToShow).join(', ')}${more})`;
    }),
    '    left out of every sync of the folder until renamed (or made readable)',
  ];
}

/**
 * Folders paired peers offer that this home has not added (folders/folder-offers.ts), as
 * Syncthing's "bob wants to share folder docs": `folder offers:` then `  bob offers folder docs
 * (since 2 min ago): clawpeer folder add DIR --id docs --with bob`. None: no line.
 */
export function offerLines(offers: NonNullable<ListenerStatus['offers']>, nowMs: number): string[] {
  if (offers.length === 0) return [];
  return [
    'folder offers:',
    ...offers.map((o) => {
      const who = o.name ?? o.peer;
      const since = duration(Math.max(0, nowMs - o.firstSeen) / 1000);
      return escapeToShow(
        `  ${who} offers folder ${o.folder} (since ${since} ago): clawpeer folder add DIR --id ${o.folder} --with ${who}`,
      );
    }),
  ];
}

/** `pairNames`: this home's pair names by id, for a peer not connected now (a sync the listener runs toward it). */
function report(ctx: CommandContext, s: ListenerStatus, pairNames: ReadonlyMap<string, string>): void {
  const now = Date.now();
  const nameOf = new Map([...pairNames, ...s.peers.map((p): [string, string] => [p.id, p.name ?? p.id])]);
  const lines = [
    `listener ${s.id} (pid ${s.pid}) on ${s.host}:${s.port} (${s.transports.join(', ')}), up ${duration((now - s.startedAt) / 1000)}`,
    `shares: ${s.shares.map((sh) => `${sh.name} (${sh.readOnly ? 'read-only' : sh.noDelete === true ? 'no push --delete' : 'read-write'}) ${sh.dir}`).join(', ')}`,
    `${count(new Set(s.peers.map((p) => p.id)).size, 'peer')} connected${s.peers.length === 0 ? '' : ':'}`,
    ...s.peers.map(
      (p) =>
        `  ${p.name === undefined ? p.id : `${p.name} (${p.id})`} ${p.dialed === true ? 'to' : 'from'} ${p.addr} over ${p.transport}${p.path === undefined ? '' : `, path ${p.path}`}${p.rttMs === undefined ? '' : `, rtt ${p.rttMs.toFixed(1)} ms`}, for ${duration((now - p.since) / 1000)}`,
    ),
    `${s.activity.length} transfer${s.activity.length === 1 ? '' : 's'} running${s.activity.length === 0 ? '' : ':'}`,
    ...s.activity.map((a) => activityLine(a, nameOf.get(a.peer) ?? a.peer, now)),
    `since it started: ${(['push', 'pull', 'sync'] as const).map((k) => endedLine(k, s.ended[k])).join(', ')}`,
    ...(s.folders ?? []).flatMap((f) => folderLines(f, nameOf, now)),
    ...offerLines(s.offers ?? [], now),
  ];
  ctx.out.emit({ event: 'status', ...s, uptimeSeconds: Math.round((now - s.startedAt) / 1000) }, lines.join('\n'));
}

/** `clawpeer status` (also run without yargs: plain-fast-path.ts). */
export async function showStatus(ctx: CommandContext): Promise<void> {
  const { listenerStatus } = await import('../resident-client.js');
  const status = await listenerStatus(ctx.home.dir, ctx.signal);
  if (typeof status === 'string')
    throw new ClawpeerError(
      'IO',
      `no listener is running for the home ${ctx.home.dir}: ${status} (start one with \`clawpeer listen\`)`,
    );
  const pairs = await new PeerStore(ctx.home.peersFile).list().catch(() => []);
  report(ctx, status, new Map(pairs.map((p) => [p.id, p.name])));
}

export function registerStatusCommands(cli: Argv, run: Runner): Argv {
  return cli.command(
    'status',
    'what the listener of this home serves and is doing: its address and shares, the peers connected, the transfers and syncs running',
    (y) => y,
    run(showStatus),
  );
}
