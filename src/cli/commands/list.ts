// `clawpeer ls PEER[:SHARE[/PATH]] [-r]`: what a paired peer's listener offers, as rsync's
// --list-only shows it: without a share, the shares this node may use; with one, the entries of
// that directory (everything below with -r). Names come from the peer: control characters are
// escaped on a terminal (rsync's \#ooo), bidi characters as \u202e, so a name can neither drive
// the terminal nor disguise itself. --json keeps them exact: a program needs the real name.
import type { Argv } from 'yargs';
import { escapeToShow } from '../../format.js';
import { resolveConfig } from '../../home/facade.js';
import { listFromPeer, type ListEntry, type ShareInfo } from '../../push-pull/transfer-with-peer.js';
import type { CommandContext, Runner } from '../context.js';
import { parseRemote, TRANSPORT_OPTION } from '../args.js';

const TYPE_CHAR: Record<ListEntry['kind'], string> = { file: '-', dir: 'd', symlink: 'l' };

/** `drwxr-sr-t`: the kind, then rwx per class with setuid, setgid and sticky as ls shows them. */
export function modeString(kind: ListEntry['kind'], mode: number): string {
  const bit = (mask: number, ch: string): string => ((mode & mask) !== 0 ? ch : '-');
  const exec = (x: number, special: number, on: string, off: string): string =>
    (mode & special) !== 0 ? ((mode & x) !== 0 ? on : off) : bit(x, 'x');
  return (
    TYPE_CHAR[kind] +
    bit(0o400, 'r') +
    bit(0o200, 'w') +
    exec(0o100, 0o4000, 's', 'S') +
    bit(0o040, 'r') +
    bit(0o020, 'w') +
    exec(0o010, 0o2000, 's', 'S') +
    bit(0o004, 'r') +
    bit(0o002, 'w') +
    exec(0o001, 0o1000, 't', 'T')
  );
}

/**
 * A name from the peer, safe to print: control characters (C1 too) and backslashes as rsync's
 * \#ooo, bidi characters and U+2028/U+2029 as \u202e (escapeToShow, as push and pull show paths).
 */
export function printableName(name: string): string {
  // The backslash first, so an escape escapeToShow writes is not escaped again.
  return escapeToShow(name.replace(/\\/g, '\\#134'));
}

/** `2026/12/02 04:45:04`, local time, as rsync --list-only. */
function listTime(ms: number): string {
  const d = new Date(ms);
  const two = (n: number): string => String(n).padStart(2, '0');
  return `${d.getFullYear()}/${two(d.getMonth() + 1)}/${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

function emitEntry(ctx: CommandContext, e: ListEntry): void {
  const link = e.kind === 'symlink' ? ` -> ${printableName(e.linkTarget)}` : '';
  ctx.out.emit(
    {
      event: 'entry',
      path: e.path,
      kind: e.kind,
      size: e.size,
      mode: e.mode,
      mtimeMs: e.mtimeMs,
      ...(e.kind === 'symlink' ? { target: e.linkTarget } : {}),
    },
    `${modeString(e.kind, e.mode)} ${e.size.toLocaleString('en-US').padStart(14)} ${listTime(e.mtimeMs)} ${printableName(e.path)}${link}`,
  );
}

function emitShare(ctx: CommandContext, s: ShareInfo): void {
  ctx.out.emit(
    { event: 'share', name: s.name, readOnly: s.readOnly, noDelete: s.noDelete },
    `${printableName(s.name).padEnd(16)} ${s.readOnly ? 'read-only' : s.noDelete ? 'read-write, no push --delete' : 'read-write'}`,
  );
}

/** `clawpeer ls REMOTE` (also run without yargs: plain-fast-path.ts). */
export async function listRemote(ctx: CommandContext, args: Record<string, unknown>): Promise<void> {
  const remote = parseRemote(String(args['remote']), false);
  const config = resolveConfig({ transport: args['transport'] });
  let entries = 0;
  let shares = 0;
  for await (const batch of listFromPeer({
    home: ctx.home,
    reach: () => ctx.reach(),
    peerName: remote.peer,
    addr: args['addr'] as string | undefined,
    config,
    log: ctx.log,
    signal: ctx.signal,
    place: remote,
    recursive: args['recursive'] === true,
  })) {
    for (const s of batch.shares) emitShare(ctx, s);
    for (const e of batch.entries) emitEntry(ctx, e);
    entries += batch.entries.length;
    shares += batch.shares.length;
  }
  if (ctx.out.json) ctx.out.emit(remote.share === '' ? { event: 'done', shares } : { event: 'done', entries }, '');
}

export function registerListCommands(cli: Argv, run: Runner): Argv {
  return cli.command(
    'ls <remote>',
    'list what a peer offers: REMOTE is PEER (its shares) or PEER:SHARE[/PATH] (that directory; -r: everything below)',
    (y) =>
      y
        .positional('remote', { type: 'string' })
        .option('recursive', {
          alias: 'r',
          type: 'boolean',
          default: false,
          describe: 'list everything below the directory, not only its entries',
        })
        .option('addr', { type: 'string', describe: "HOST:PORT (default: the pair entry's address)" })
        .option('transport', TRANSPORT_OPTION),
    run(listRemote),
  );
}
