// The entries below a source a sender could not read (a name not valid UTF-8, a directory it
// cannot list, a file it cannot open or read while hashing): left out while the rest is sent,
// as rsync does, which then exits 23 ("partial transfer"). Before, the first one failed the
// whole push or pull. Those that vanished mid-scan are no part of the tree any more: skipped,
// as a sync's scan does (synced-folder.ts), not counted.
import path from 'node:path';
import { isClawpeerError } from '../errors.js';
import { MAX_LISTED_DELETIONS, type UnreadablePath } from '../protocol/messages.js';
import { systemErrorIn } from '../support/path-refusal.js';
import { escapeToShow } from '../format.js';
import { CappedList } from '../support/capped-list.js';

/** The system error (an errno code) `err` is or wraps, if any. */
const errnoOf = (err: unknown): { code: string; message: string } | undefined =>
  systemErrorIn(err, (code) => /^E[A-Z0-9]+$/.test(code));

/** Whether `err` is a failure to read one entry (I/O with an errno, a name that cannot travel), not an abort or a bug. */
export function isUnreadable(err: unknown): boolean {
  return isClawpeerError(err, 'PATH_INVALID') || (isClawpeerError(err, 'IO') && errnoOf(err) !== undefined);
}

/**
 * Why `localPath` (sent as `relPath`) cannot be read, without the local path: a peer is told it,
 * and a listener never shows its own paths. "EACCES: permission denied" for an errno.
 */
export function unreadableReason(localPath: string, relPath: string, err: Error): string {
  const errno = errnoOf(err);
  let why: string;
  if (errno !== undefined) why = /^E[A-Z0-9]+: [^,]*/.exec(errno.message)?.[0] ?? errno.code;
  else {
    const prefix = `cannot send ${localPath}: `;
    why = err.message.startsWith(prefix) ? err.message.slice(prefix.length) : err.message;
    why = why.split(localPath).join(relPath);
  }
  return why.length <= 200 ? why : `${why.slice(0, 199)}…`; // within MAX_UNREADABLE_ERROR_BYTES
}

/** A refused name's rule (transfer/paths.ts `refuse`'s words) in the words status groups by. */
const NAME_RULES: readonly (readonly [RegExp, string])[] = [
  [/control character/, 'name has a control character'],
  [/unpaired surrogate/, 'name is not valid UTF-8'],
  [/backslash/, 'name has a backslash'],
  [/ends with a dot or space|only dots and spaces/, 'name ends with a dot or space'],
  [/Windows device name/, 'name is a Windows device name'],
  [/drive letter/, 'name starts with a drive letter'],
  [/longer than/, 'path too long'],
];
/** transfer/paths.ts `refuse`'s message: the path as a JSON string, then why. */
const REFUSAL = /^path "(?:[^"\\]|\\.)*" refused: (.*)$/s;
/** What tree-scan.ts says of a name that is not UTF-8, after the name. */
const NOT_UTF8 = ': its name is not valid UTF-8 (names travel as UTF-8; rename it, e.g. with convmv)';

/** The refusal's reason, without the names it quotes (a file may be called "backslash"): `err` or one it wraps. */
function refusalOf(err: unknown): string | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 4; depth++, e = e.cause) {
    const why = REFUSAL.exec(e.message)?.[1];
    if (why !== undefined) return why.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  }
  return undefined;
}

/**
 * Why an entry a sync's scan left out cannot be synced, in a few words that do not name it:
 * what `clawpeer status` groups a folder's such entries by ("name has a control character",
 * "cannot be read: EACCES: permission denied"), as Syncthing lists a folder's failed items.
 */
export function unsyncableReason(err: Error): string {
  if (isClawpeerError(err, 'PATH_INVALID')) {
    if (err.message.endsWith(NOT_UTF8)) return 'name is not valid UTF-8';
    const why = refusalOf(err) ?? '';
    return NAME_RULES.find(([rule]) => rule.test(why))?.[1] ?? 'name cannot be synced';
  }
  const errno = errnoOf(err);
  return errno === undefined
    ? 'cannot be read'
    : `cannot be read: ${/^E[A-Z0-9]+: [^,]*/.exec(errno.message)?.[0] ?? errno.code}`;
}

/** What a scan could not read, as the final Manifest batch and TransferResult list them. */
export class UnreadableEntries extends CappedList<UnreadablePath> {
  /** The first MAX_LISTED_DELETIONS; `count` counts all (`add`: ScanSourceOptions.onUnreadable). */
  constructor() {
    super(MAX_LISTED_DELETIONS);
  }

  /** What a pull's sender told in its last Manifest batch (already checked on decode). */
  told(batch: { readonly unreadable?: readonly UnreadablePath[]; readonly unreadableCount?: number }): void {
    this.listed.push(...(batch.unreadable ?? []));
    this.count += batch.unreadableCount ?? 0;
  }

  /** The fields of the result (and of a pull's final Manifest batch): none when all was read. */
  fields(): { unreadable?: UnreadablePath[]; unreadableCount?: number } {
    return this.count === 0 ? {} : { unreadable: this.listed, unreadableCount: this.count };
  }
}

/**
 * `localPath` relative to `base`, as manifest entries' paths are, with control and bidi
 * characters escaped (`\\#012`, `\\u202e`): a name holding one is what the scan cannot send, and
 * the peer refuses such characters in what it is to print (wire-helpers.ts wirePathToShow).
 */
export const relativeEntryPath = (base: string, localPath: string): string =>
  escapeToShow(path.relative(base, localPath).split(path.sep).join('/'));
