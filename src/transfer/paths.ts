// Paths received from a peer, normalised and confined to a share.
//
// Goals: turn a peer-supplied relative path into one canonical relative POSIX path that is
// safe to join under a share root on Linux, macOS and Windows alike, or refuse it with
// PATH_INVALID naming the path. Pure string logic, so it is exhaustively testable.
// Non-goals: symlink escapes (they need the file system: the driver realpaths the candidate's
// parent and asks `isConfinedRealpath`), case-folding collisions (`a` vs `A` on a
// case-insensitive volume are the publisher's concern), and Windows' reserved punctuation
// (`<>:"|?*`), which is legal on POSIX and refused only by a Windows driver.
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

function refuse(raw: string, why: string): never {
  // JSON.stringify shows control characters and surrogates escaped, so the message is printable.
  throw new ClawpeerError(
    'PATH_INVALID',
    `path ${JSON.stringify(raw.length > 300 ? raw.slice(0, 300) + '…' : raw)} refused: ${why}`,
  );
}

// Names made only of these need no Unicode checks or normalisation (the common case, fast).
const PLAIN_NAME = /^\.?[A-Za-z0-9_+,=@%~#-][A-Za-z0-9_+,=@%~#. -]*$/; // a dotfile too, never . or ..

/** Refuses a single name that may not be a path segment (the rules of normalizeSharePath). */
function checkSegment(raw: string, segment: string): void {
  if (segment === '') refuse(raw, 'empty path segment ("//" or trailing "/")');
  if (segment === '..') refuse(raw, 'contains a ".." segment');
  if (Buffer.byteLength(segment, 'utf8') > MAX_PATH_SEGMENT_BYTES) {
    refuse(raw, `a segment is longer than ${MAX_PATH_SEGMENT_BYTES} bytes`);
  }
  // Windows strips trailing dots and spaces, so "a." and "a" would be the same file there.
  if (/[. ]$/.test(segment)) refuse(raw, `segment ${JSON.stringify(segment)} ends with a dot or space`);
  const stem = segment.split('.', 1)[0] ?? segment;
  if (WINDOWS_DEVICE_NAME.test(stem.trimEnd())) {
    refuse(raw, `segment ${JSON.stringify(segment)} is a Windows device name`);
  }
}

/**
 * `normalizeSharePath(parent + '/' + name)` for a `parent` that is already canonical (or null for
 * the top level) and one directory entry's `name`: checks only the new name, which makes a tree
 * walk linear in the number of entries rather than in the total path length.
 */
export function joinSharePath(parent: string | null, name: string): string {
  const joined = parent === null ? name : `${parent}/${name}`;
  if (!PLAIN_NAME.test(name)) return normalizeSharePath(joined);
  // A plain name has no ':' (drive letters), controls, surrogates or non-NFC characters.
  checkSegment(joined, name);
  if (Buffer.byteLength(joined, 'utf8') > MAX_PATH_BYTES) refuse(joined, `longer than ${MAX_PATH_BYTES} bytes`);
  return joined;
}

/**
 * Normalises a path received from a peer into a canonical relative POSIX path inside a share,
 * or throws ClawpeerError PATH_INVALID whose message names the path and the reason.
 * The result never contains `..`, `.`, empty segments or a leading `/`, so
 * `path.posix.join(root, result)` stays strictly below `root`.
 */
export function normalizeSharePath(raw: string): string {
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
    checkSegment(raw, segment);
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
