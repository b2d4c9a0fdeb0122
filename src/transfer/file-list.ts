// The list `push --files-from FILE BASE` sends: paths relative to BASE, as rsync reads them.
//
// rsync's rules: one name per line (per NUL with --from0); blank entries and whole-entry
// comments (`#` or `;` first) are skipped; leading slashes are dropped; no `..` may climb
// above BASE. Each name is then checked as a share path (normalizeSharePath), since it lands
// under the destination as it is written here. Pure string logic.
import path from 'node:path';
import { ClawpeerError } from '../errors.js';
import { LOCAL_NAME_RULES, normalizeSharePath } from './paths.js';

export interface FileListOptions {
  /** Entries end with NUL, not newline (rsync --from0; what `find -print0` writes). */
  readonly from0?: boolean;
  /** How errors name the list (default "--files-from"). */
  readonly name?: string;
}

/**
 * The canonical relative paths a file list names, in order, each once; a path below another
 * listed one is dropped (a listed directory is sent whole). USAGE naming the entry for a path
 * that climbs out of the base, names the base itself, or is not a valid share path.
 */
export function parseFileList(text: string, options: FileListOptions = {}): string[] {
  const name = options.name ?? '--files-from';
  const raw =
    options.from0 === true ? text.split('\0') : text.split('\n').map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l));
  const listed: string[] = [];
  const seen = new Set<string>();
  raw.forEach((entry, i) => {
    if (entry === '' || entry.startsWith('#') || entry.startsWith(';')) return;
    const where = `${name} entry ${i + 1} (${JSON.stringify(entry.length > 200 ? entry.slice(0, 200) + '…' : entry)})`;
    const cleaned = path.posix.normalize(entry.replace(/^\/+/, '')).replace(/\/+$/, '');
    if (cleaned === '..' || cleaned.startsWith('../'))
      throw new ClawpeerError('USAGE', `${where} climbs above the base directory`);
    if (cleaned === '.' || cleaned === '')
      throw new ClawpeerError('USAGE', `${where} names the base directory itself: push the directory instead`);
    let rel: string;
    try {
      rel = normalizeSharePath(cleaned, LOCAL_NAME_RULES); // read or written here
    } catch (err) {
      throw new ClawpeerError('USAGE', `${where}: ${(err as Error).message}`, { cause: err });
    }
    if (seen.has(rel)) return;
    seen.add(rel);
    listed.push(rel);
  });
  return listed.filter((rel) => !ancestorsOf(rel).some((a) => seen.has(a)));
}

/** `a/b/c` -> [`a`, `a/b`]: the directories a listed path lies in, outermost first. */
export function ancestorsOf(rel: string): string[] {
  const segments = rel.split('/');
  return segments.slice(1).map((_, i) => segments.slice(0, i + 1).join('/'));
}
