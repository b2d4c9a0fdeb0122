// Which failures to change one path of a synced folder leave that path for the next sync rather
// than fail the whole sync: the path may not be changed here (permissions, an immutable file or
// directory, a name too long for this file system), not a failing or full disk, nor a bug. As
// Syncthing's failed items: everything else lands, the path's records are not stored (so every
// sync tries it again), and the sync is reported not in sync. Before, one directory a node could
// not write failed every sync of the folder, and nothing else it received was recorded. Push
// and pull leave such paths out the same way (exit 23), and so does a Windows receiver of a
// name Windows reserves (transfer/paths.ts WINDOWS_NAME_REFUSAL). Also here: which errors say
// an entry vanished since it was listed (a scan skips it, counted nowhere).
import { isWindowsNameRefusal, WINDOWS_NAME_REFUSAL } from '../transfer/paths.js';

const PATH_REFUSALS = new Set(['EACCES', 'EPERM', 'ENAMETOOLONG']);

/** The errno code when `err` (or an error it wraps) is a refusal of one path, else undefined. */
export function pathRefusal(err: unknown): string | undefined {
  return errnoAmong(err, PATH_REFUSALS) ?? (isWindowsNameRefusal(err) ? WINDOWS_NAME_REFUSAL : undefined);
}

const VANISHED: ReadonlySet<string> = new Set(['ENOENT', 'ENOTDIR']);

/** Whether `err` says an entry is gone (deleted or moved since it was listed): a race the next scan settles, no refusal. */
export function hasVanished(err: unknown): boolean {
  return errnoAmong(err, VANISHED) !== undefined;
}

/** The first errno code of `err` or an error it wraps (ClawpeerError keeps the system's as its cause) that is in `codes`. */
export function errnoAmong(err: unknown, codes: ReadonlySet<string>): string | undefined {
  return systemErrorIn(err, (code) => codes.has(code))?.code;
}

/** `err` or the first error it wraps (up to 4 deep) whose errno code `accept`s. */
export function systemErrorIn(
  err: unknown,
  accept: (code: string) => boolean,
): (NodeJS.ErrnoException & { code: string }) | undefined {
  let e: unknown = err;
  for (let depth = 0; e instanceof Error && depth < 4; depth++, e = e.cause) {
    const code = (e as NodeJS.ErrnoException).code;
    if (typeof code === 'string' && accept(code)) return e as NodeJS.ErrnoException & { code: string };
  }
  return undefined;
}
