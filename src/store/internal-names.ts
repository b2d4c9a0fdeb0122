// The names clawpeer reserves inside a shared folder for its own state, never content.
// Kept free of imports: the CLI's light paths and every scanner check them.
//
// Compared folded, on every platform: a case-insensitive volume (macOS, Windows) opens
// `.CLAWPEER/index` as `.clawpeer/index`, and one that ignores Unicode normalisation (APFS) does
// the same for a decomposed spelling, so a peer naming either could read or write clawpeer's
// state. Folding is NFKC, then case (upper then lower, which maps 'ſ' and the Kelvin sign too),
// then the trailing dots and spaces Windows drops: stricter than any file system, on purpose.

/** Name of the per-share hidden directory that holds clawpeer's own state. */
export const INTERNAL_DIR_NAME = '.clawpeer';
/** Prefix of the publisher's temp files in destination directories. */
export const TEMP_FILE_PREFIX = '.clawpeer-tmp-';

/** `name` as the strictest file system could see it: compatibility-normalised, case-folded, no trailing dots or spaces. */
export function foldName(name: string): string {
  return name
    .normalize('NFKC')
    .toUpperCase()
    .toLowerCase()
    .normalize('NFKC')
    .replace(/[. ]+$/, '');
}

// Only names with a non-ASCII character need the full fold; plain ASCII folds with toLowerCase.
// eslint-disable-next-line no-control-regex -- the range starts at NUL on purpose
const NON_ASCII = /[^\x00-\x7f]/;
/** Any spelling of "clawpeer", ASCII only: most paths are ruled out by this one test. */
const MAYBE_INTERNAL_ASCII = /clawpeer/i;

function folded(name: string): string {
  return NON_ASCII.test(name) ? foldName(name) : name.toLowerCase().replace(/[. ]+$/, '');
}

/** True for a name (one path segment) that is, or could be taken for, the `.clawpeer` directory. */
export function isInternalDirName(name: string): boolean {
  return folded(name) === INTERNAL_DIR_NAME;
}

/**
 * True for paths that are clawpeer's own bookkeeping, never content: anything under
 * `.clawpeer/` at the share root and the publisher's `.clawpeer-tmp-*` files in any directory,
 * in any case or Unicode spelling (see above). Scanners, the chunk index and the serving side
 * skip them; the publisher refuses to write them.
 */
export function isInternalPath(relPath: string): boolean {
  if (!NON_ASCII.test(relPath) && !MAYBE_INTERNAL_ASCII.test(relPath)) return false;
  const segments = relPath.split('/');
  if (isInternalDirName(segments[0] ?? '')) return true;
  return segments.some(isTempFileName);
}

/** True for the name (last segment) of a publisher temp file (tempNameFor), in any case or Unicode spelling. */
export function isTempFileName(name: string): boolean {
  if (name.startsWith(TEMP_FILE_PREFIX)) return true; // the common case, without folding
  if (!NON_ASCII.test(name) && !MAYBE_INTERNAL_ASCII.test(name)) return false;
  return folded(name).startsWith(TEMP_FILE_PREFIX);
}
