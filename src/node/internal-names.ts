// The names clawpeer reserves inside a shared folder for its own state, never content.
// Kept free of imports: the CLI's light paths and every scanner check them.

/** Name of the per-share hidden directory that holds clawpeer's own state. */
export const INTERNAL_DIR_NAME = '.clawpeer';
/** Prefix of the publisher's temp files in destination directories. */
export const TEMP_FILE_PREFIX = '.clawpeer-tmp-';
/**
 * True for paths that are clawpeer's own bookkeeping, never content: anything under
 * `.clawpeer/` at the share root and the publisher's `.clawpeer-tmp-*` files in any directory.
 * Scanners, the chunk index and the serving side skip them; the publisher refuses to write them.
 */
export function isInternalPath(relPath: string): boolean {
  // Both kinds of name start with INTERNAL_DIR_NAME: most paths are ruled out without a split.
  if (!relPath.includes(INTERNAL_DIR_NAME)) return false;
  const segments = relPath.split('/');
  if (segments[0] === INTERNAL_DIR_NAME) return true;
  return segments.some(isTempFileName);
}

/** True for the name (last segment) of a publisher temp file (tempNameFor). */
export function isTempFileName(name: string): boolean {
  return name.startsWith(TEMP_FILE_PREFIX);
}
