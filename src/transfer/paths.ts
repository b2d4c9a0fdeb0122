// Paths received from a peer, normalised and confined to a share.
//
// Goals: turn a peer-supplied relative path into one canonical relative POSIX path that is
// safe to join under a share root on Linux, macOS and Windows alike (Windows with the default
// rules), or refuse it with PATH_INVALID naming the path. Pure string logic, so it is
// exhaustively testable.
// Non-goals: symlink escapes (they need the file system: the driver realpaths the candidate's
// parent and asks `isConfinedRealpath`), case-folding collisions (`a` vs `A` on a
// case-insensitive volume are the publisher's concern), and Windows' reserved punctuation
// (`<>:"|?*`), which is legal on POSIX and refused only by a Windows driver.
//
// Windows' own name rules (device names such as `aux.c`, a trailing dot or space) are on by
// default: a synced folder's names must be portable, since any of its devices may be Windows.
// One-shot transfers (push, pull, send, ls) turn them off for names a peer sends
// (`{ windowsNames: false }`) and apply them only where files are created or read here
// (LOCAL_NAME_RULES): as rsync, a Linux node sends and takes `aux.c`; a Windows receiver refuses
// such a path alone, by WINDOWS_NAME_REFUSAL.
//
// Policy: the wire form is canonical, so anything that would need more than trivial repair is
// refused rather than guessed at. The only repairs are dropping `.` segments and Unicode NFC
// normalisation (macOS hands out NFD names; NFC makes the same name compare equal everywhere,
// as Syncthing does).
import path from 'node:path';
import { ClawpeerError } from '../errors.js';
import { LONE_SURROGATE } from '../protocol/wire-limits.js';

export { LONE_SURROGATE };

/** Longest single name, in UTF-8 bytes (NAME_MAX on Linux/macOS; NTFS allows 255 UTF-16 units). */
export const MAX_PATH_SEGMENT_BYTES = 255;
/** Longest relative path, in UTF-8 bytes (PATH_MAX on Linux). */
export const MAX_PATH_BYTES = 4096;

// Windows device names: reserved in every directory, with or without an extension, in any
// case. Windows also treats the superscript digits ¹²³ as digits for COM/LPT.
const WINDOWS_DEVICE_NAME = /^(con|prn|aux|nul|conin\$|conout\$|(com|lpt)[1-9\u00b9\u00b2\u00b3])$/i;
// C0 controls, DEL and C1 controls: invisible in listings, some illegal on Windows, NUL
// truncates C strings.
// eslint-disable-next-line no-control-regex
const CONTROL_CHAR = /[\u0000-\u001f\u007f-\u009f]/;

/** Which rules a path is checked by; every rule but `windowsNames` always applies. */
export interface SharePathRules {
  /** Refuse Windows device names and names ending with a dot or space. Default true (portable names). */
  readonly windowsNames?: boolean;
}

/** Whether files created or read on `platform` need Windows' name rules. */
export function needsWindowsNames(platform: NodeJS.Platform = process.platform): boolean {
  return platform === 'win32';
}

/** The rules for names a one-shot transfer creates or reads on this machine. */
export const LOCAL_NAME_RULES: SharePathRules = { windowsNames: needsWindowsNames() };
/** The rules for names a one-shot transfer takes from a peer: the local ones apply where they land. */
export const PEER_NAME_RULES: SharePathRules = { windowsNames: false };

/**
 * The errno-style code of a path refused by Windows' name rules alone: a receiver that takes
 * refusals per path (support/path-refusal.ts) leaves it out and reports this as the reason.
 */
export const WINDOWS_NAME_REFUSAL = 'EWINDOWSNAME';

function refusal(raw: string, why: string): string {
  // JSON.stringify shows control characters and surrogates escaped, so the message is printable.
  return `path ${JSON.stringify(raw.length > 300 ? raw.slice(0, 300) + '…' : raw)} refused: ${why}`;
}

function refuse(raw: string, why: string): never {
  throw new ClawpeerError('PATH_INVALID', refusal(raw, why));
}

/** PATH_INVALID by Windows' name rules alone (isWindowsNameRefusal). */
class WindowsNameRefusal extends ClawpeerError {}

function refuseOnWindows(raw: string, why: string): never {
  throw new WindowsNameRefusal('PATH_INVALID', refusal(raw, why));
}

/** Whether `err`, or an error it wraps, refuses a path by Windows' name rules alone. */
export function isWindowsNameRefusal(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 4; depth++, e = e.cause)
    if (e instanceof WindowsNameRefusal) return true;
  return false;
}

// Names made only of these need no Unicode checks or normalisation (the common case, fast).
const PLAIN_NAME = /^\.?[A-Za-z0-9_+,=@%~#-][A-Za-z0-9_+,=@%~#. -]*$/; // a dotfile too, never . or ..

/** Refuses a single name that may not be a path segment (the rules of normalizeSharePath). */
function checkSegment(raw: string, segment: string, rules: SharePathRules): void {
  if (segment === '') refuse(raw, 'empty path segment ("//" or trailing "/")');
  if (segment === '..') refuse(raw, 'contains a ".." segment');
  if (Buffer.byteLength(segment, 'utf8') > MAX_PATH_SEGMENT_BYTES) {
    refuse(raw, `a segment is longer than ${MAX_PATH_SEGMENT_BYTES} bytes`);
  }
  // Windows reads "..." or ". ." as "." or "..": refused everywhere, so no relaxed path is one
  // that could climb on a Windows machine.
  if (/^[. ]+$/.test(segment)) refuse(raw, `segment ${JSON.stringify(segment)} is only dots and spaces`);
  if (rules.windowsNames === false) return;
  // Windows strips trailing dots and spaces, so "a." and "a" would be the same file there.
  if (/[. ]$/.test(segment)) refuseOnWindows(raw, `segment ${JSON.stringify(segment)} ends with a dot or space`);
  const stem = segment.split('.', 1)[0] ?? segment;
  if (WINDOWS_DEVICE_NAME.test(stem.trimEnd())) {
    refuseOnWindows(raw, `segment ${JSON.stringify(segment)} is a Windows device name`);
  }
}

/**
 * `normalizeSharePath(parent + '/' + name)` for a `parent` that is already canonical (or null for
 * the top level) and one directory entry's `name`: checks only the new name, which makes a tree
 * walk linear in the number of entries rather than in the total path length.
 */
export function joinSharePath(parent: string | null, name: string, rules: SharePathRules = {}): string {
  const joined = parent === null ? name : `${parent}/${name}`;
  if (!PLAIN_NAME.test(name)) return normalizeSharePath(joined, rules);
  // A plain name has no ':' (drive letters), controls, surrogates or non-NFC characters.
  checkSegment(joined, name, rules);
  if (Buffer.byteLength(joined, 'utf8') > MAX_PATH_BYTES) refuse(joined, `longer than ${MAX_PATH_BYTES} bytes`);
  return joined;
}

/**
 * Normalises a path received from a peer into a canonical relative POSIX path inside a share,
 * or throws ClawpeerError PATH_INVALID whose message names the path and the reason.
 * The result never contains `..`, `.`, empty segments or a leading `/`, so
 * `path.posix.join(root, result)` stays strictly below `root`. `rules` may leave out Windows'
 * name rules (SharePathRules); clawpeer's own names are the caller's check (isInternalPath).
 */
export function normalizeSharePath(raw: string, rules: SharePathRules = {}): string {
  if (typeof raw !== 'string') throw new TypeError('path must be a string');
  if (raw.length === 0) refuse(raw, 'empty path');
  if (LONE_SURROGATE.test(raw)) refuse(raw, 'not valid Unicode (unpaired surrogate)');
  if (CONTROL_CHAR.test(raw)) refuse(raw, 'contains a NUL or control character');
  if (raw.includes('\\')) refuse(raw, 'contains a backslash (separators are "/")');
  if (raw.startsWith('/')) refuse(raw, 'absolute path');

  const nfc = raw.normalize('NFC');
  const segments: string[] = [];
  for (const segment of nfc.split('/')) {
    if (segment === '.') continue;
    checkSegment(raw, segment, rules);
    segments.push(segment);
  }
  if (segments.length === 0) refuse(raw, 'names the share root itself');
  // "C:x" would be drive-relative on Windows (checked after "./" segments are dropped).
  if (/^[a-zA-Z]:/.test(segments[0] ?? '')) refuse(raw, 'starts with a drive letter');
  const result = segments.join('/');
  if (Buffer.byteLength(result, 'utf8') > MAX_PATH_BYTES) refuse(raw, `longer than ${MAX_PATH_BYTES} bytes`);
  return result;
}

/**
 * True when `candidateRealpath` is the share root or lies below it. Both arguments must be
 * absolute, already-resolved paths (fs.realpath output) in the platform's own syntax: the
 * driver resolves symlinks, this only compares. Comparison is by path segment, so
 * `/share-evil` is not inside `/share`.
 */
export function isConfinedRealpath(
  shareRootRealpath: string,
  candidateRealpath: string,
  pathApi: path.PlatformPath = path,
): boolean {
  if (!pathApi.isAbsolute(shareRootRealpath) || !pathApi.isAbsolute(candidateRealpath)) {
    throw new TypeError('isConfinedRealpath needs two absolute paths');
  }
  const rel = pathApi.relative(shareRootRealpath, candidateRealpath);
  if (rel === '') return true;
  if (pathApi.isAbsolute(rel)) return false; // another drive on Windows
  const first = rel.split(pathApi.sep, 1)[0];
  return first !== '..';
}
