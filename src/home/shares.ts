// Shared folders a listener serves: NAME=DIR[:ro|:nodelete][:fsync]. Without --share, a
// read-write `inbox` under the home directory. `:nodelete` takes pushes but refuses push --delete
// (rsync daemons' `refuse options = delete`); a sync still carries deletions, as syncing means.
// `:fsync` refuses a peer's --fsync=none: everything published there is fsynced.
import { readdir, realpath, stat } from 'node:fs/promises';
import path, { resolve } from 'node:path';
import { ClawpeerError } from '../errors.js';
import { isInternalPath } from '../store/internal-names.js';
import { isConfinedRealpath } from '../transfer/paths.js';
import { makeDirs } from '../support/make-dirs.js';

export interface Share {
  readonly name: string;
  /** Real path of the share root (symlinks resolved), so confinement checks compare like with like. */
  readonly dir: string;
  readonly readOnly: boolean;
  /** Pushes may not remove files (push --delete is refused). */
  readonly noDelete?: boolean;
  /** A peer's --fsync=none is refused: what lands here is always fsynced. */
  readonly alwaysFsync?: boolean;
  /** Node ids allowed to use this share; undefined = every paired peer. */
  readonly allow?: readonly string[];
  /** A receive-only shared folder here: peers' syncs that would take its changes are refused (it only takes theirs). */
  readonly receiveOnly?: boolean;
  /** How long a peer's sync waits for another sync of this share, ms (shared folders: short, so two nodes syncing toward each other do not wait each other out). */
  readonly syncLockWaitMs?: number;
  /** A folder this listener's folder service keeps in sync: it syncs its changes to its peers itself (SyncAccept says so). */
  readonly keptFolder?: boolean;
  /**
   * The entries of the share's root a peer may reach (`clawpeer send`: the paths it names, not
   * their siblings); undefined: the whole share. Such a share is pulled and listed only: syncs
   * and watches of it are refused (refusePartialShare).
   */
  readonly only?: readonly string[];
}

export const DEFAULT_SHARE_NAME = 'inbox';
const SHARE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function parseShareSpec(spec: string): {
  name: string;
  dir: string;
  readOnly: boolean;
  noDelete?: boolean;
  alwaysFsync?: boolean;
} {
  const eq = spec.indexOf('=');
  if (eq <= 0)
    throw new ClawpeerError(
      'USAGE',
      `invalid --share ${JSON.stringify(spec)}: expected NAME=DIR, NAME=DIR:ro or NAME=DIR:nodelete (either may end in :fsync)`,
    );
  const name = spec.slice(0, eq);
  let dir = spec.slice(eq + 1);
  let readOnly = false;
  let noDelete = false;
  const alwaysFsync = dir.endsWith(':fsync');
  if (alwaysFsync) dir = dir.slice(0, -':fsync'.length);
  if (dir.endsWith(':ro')) {
    readOnly = true;
    dir = dir.slice(0, -3);
  } else if (dir.endsWith(':nodelete')) {
    noDelete = true;
    dir = dir.slice(0, -':nodelete'.length);
  } else if (dir.endsWith(':rw')) {
    dir = dir.slice(0, -3);
  }
  if (!SHARE_NAME.test(name))
    throw new ClawpeerError(
      'USAGE',
      `invalid share name ${JSON.stringify(name)} in --share ${JSON.stringify(spec)}: use letters, digits, '.', '_' or '-'`,
    );
  if (dir === '') throw new ClawpeerError('USAGE', `--share ${JSON.stringify(spec)} names no directory`);
  return {
    name,
    dir: resolve(dir),
    readOnly,
    ...(noDelete ? { noDelete } : {}),
    ...(alwaysFsync ? { alwaysFsync } : {}),
  };
}

/** Resolves share specs (creating missing read-write dirs); rejects duplicate names. */
export async function resolveShares(specs: readonly string[], inboxDir: string): Promise<Share[]> {
  const parsed =
    specs.length === 0 ? [{ name: DEFAULT_SHARE_NAME, dir: inboxDir, readOnly: false }] : specs.map(parseShareSpec);
  const seen = new Set<string>();
  const shares: Share[] = [];
  for (const s of parsed) {
    if (seen.has(s.name)) throw new ClawpeerError('USAGE', `share ${JSON.stringify(s.name)} is given twice`);
    seen.add(s.name);
    try {
      if (!s.readOnly) await makeDirs(s.dir);
      shares.push({
        name: s.name,
        dir: await realpath(s.dir),
        readOnly: s.readOnly,
        ...(s.noDelete === true ? { noDelete: true } : {}),
        ...(s.alwaysFsync === true ? { alwaysFsync: true } : {}),
      });
    } catch (err) {
      throw new ClawpeerError('USAGE', `share ${s.name}: directory ${s.dir} is not usable: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }
  return shares;
}

/**
 * Applies `--allow SHARE=PEER[,PEER...]` specs (peers by pair name or node id, resolved now:
 * an allow list names keys, not names that could later be re-pointed).
 */
export function applyAllowLists(
  shares: readonly Share[],
  specs: readonly string[],
  resolvePeerId: (nameOrId: string) => string | undefined,
): Share[] {
  const allow = new Map<string, string[]>();
  for (const spec of specs) {
    const eq = spec.indexOf('=');
    const share = spec.slice(0, eq);
    const peers = spec
      .slice(eq + 1)
      .split(',')
      .map((p) => p.trim())
      .filter((p) => p !== '');
    if (eq <= 0 || peers.length === 0)
      throw new ClawpeerError('USAGE', `invalid --allow ${JSON.stringify(spec)}: expected SHARE=PEER[,PEER...]`);
    if (!shares.some((s) => s.name === share))
      throw new ClawpeerError(
        'USAGE',
        `--allow names share ${JSON.stringify(share)}, which is not served (shares: ${shares.map((s) => s.name).join(', ')})`,
      );
    const ids = peers.map((p) => {
      const id = resolvePeerId(p);
      if (id === undefined)
        throw new ClawpeerError('USAGE', `--allow ${share}=...: ${JSON.stringify(p)} is not a paired peer name or id`);
      return id;
    });
    allow.set(share, [...(allow.get(share) ?? []), ...ids]);
  }
  return shares.map((s) => {
    const ids = allow.get(s.name);
    return ids === undefined ? s : { ...s, allow: ids };
  });
}

/** The share a request names ('' is the default share): SHARE_UNKNOWN, or SHARE_FORBIDDEN for a peer off its allow list. */
export function findShare(shares: readonly Share[], name: string, peerId: string): Share {
  const wanted = name === '' ? DEFAULT_SHARE_NAME : name;
  const share = shares.find((s) => s.name === wanted) ?? (name === '' ? shares[0] : undefined);
  if (share === undefined) {
    // The peer is told the names it could list (serveList's): a share or folder on another
    // peer's allow list is none of its business.
    const visible = shares.filter((s) => s.allow === undefined || s.allow.includes(peerId)).map((s) => s.name);
    throw new ClawpeerError(
      'SHARE_UNKNOWN',
      `no share named ${JSON.stringify(wanted)} here (shares: ${visible.join(', ') || 'none'})`,
    );
  }
  if (share.allow !== undefined && !share.allow.includes(peerId)) {
    throw new ClawpeerError('SHARE_FORBIDDEN', `node ${peerId} is not on the allow list of share ${share.name}`);
  }
  return share;
}

/**
 * The local path of `basePath` in `share` (a pull's or a listing's): it must exist inside the
 * share, symlinks on the way included, and in a share of `only` some paths, lead into one of
 * them (its root only for a listing, `o.rootListing`, which shows only those); PATH_INVALID
 * naming it otherwise.
 */
export async function existingSharePath(
  share: Share,
  basePath: string,
  o: { readonly rootListing?: boolean } = {},
): Promise<string> {
  if (isInternalPath(basePath))
    throw new ClawpeerError('PATH_INVALID', `${share.name}/${basePath} is clawpeer's own state`);
  let local = path.join(share.dir, ...onDiskSegments(share, basePath));
  let real: string;
  try {
    real = await realpath(local).catch(async (err: unknown) => {
      // A name on the way that is not NFC on disk (the peer asks in NFC): found by its NFC form.
      // Only a path with a character outside ASCII can have one (no directory read for the rest).
      if (!/[\u0080-\uffff]/.test(basePath)) throw err;
      local = (await nfcNamedOnDisk(share.dir, onDiskSegments(share, basePath))) ?? local;
      return realpath(local).catch(() => Promise.reject(err as Error));
    });
    await stat(real);
  } catch {
    throw new ClawpeerError('PATH_INVALID', `${share.name}/${basePath} does not exist`);
  }
  if (!isConfinedRealpath(share.dir, real))
    throw new ClawpeerError('PATH_INVALID', `${share.name}/${basePath} leads outside the share`);
  // Checked on the real path: a symlink inside a named directory must not lead to a sibling.
  if (share.only !== undefined) {
    const top = path.relative(share.dir, real).split(path.sep)[0] ?? '';
    if (top === '' ? !o.rootListing : !share.only.includes(top))
      throw new ClawpeerError('PATH_INVALID', `${share.name}/${basePath} is not one of the paths sent`);
  }
  // A symlink in the share (`x -> .clawpeer`) must not lead a pull or listing into the state either.
  if (isInternalPath(path.relative(share.dir, real).split(path.sep).join('/')))
    throw new ClawpeerError('PATH_INVALID', `${share.name}/${basePath} leads into clawpeer's own state`);
  return local;
}

/**
 * `basePath`'s segments, the first as it is on disk in a share of some paths: a peer names paths
 * in NFC (transfer/paths.ts normalises what it asks for), while a name sent may be NFD on disk
 * (Linux keeps a name's bytes as they are, and macOS hands out NFD names): the sent name whose
 * NFC form it is. Names on disk are never renamed; the rest of the path is the scan's to find.
 */
export function onDiskSegments(share: Pick<Share, 'only'>, basePath: string): string[] {
  const segments = basePath.split('/').filter((s) => s !== '');
  const [top] = segments;
  if (share.only === undefined || top === undefined || share.only.includes(top)) return segments;
  const sent = share.only.find((n) => n.normalize('NFC') === top);
  return sent === undefined ? segments : [sent, ...segments.slice(1)];
}

/**
 * `dir` joined with `segments` (NFC, as a peer names paths), each found on disk as it is or, when
 * not there so, as the one name in its directory whose NFC form it is; undefined when none is.
 */
async function nfcNamedOnDisk(dir: string, segments: readonly string[]): Promise<string | undefined> {
  let at = dir;
  for (const segment of segments) {
    const names = await readdir(at).catch(() => [] as string[]);
    const name = names.includes(segment) ? segment : names.find((n) => n.normalize('NFC') === segment);
    if (name === undefined) return undefined;
    at = path.join(at, name);
  }
  return at;
}

/** A peer's --fsync=none into a share served with :fsync is refused (SHARE_FORBIDDEN). */
export function refuseUnsyncedInto(share: Share, noFsync: boolean | undefined): void {
  if (noFsync === true && share.alwaysFsync === true) {
    throw new ClawpeerError(
      'SHARE_FORBIDDEN',
      `share ${share.name} refuses --fsync=none (it is served with :fsync): leave --fsync at batch`,
    );
  }
}

/**
 * A pull or a listing of a receive-only shared folder is refused (SHARE_FORBIDDEN): its files
 * may be local changes, which such a folder never gives its peers (its syncs refuse the same).
 */
export function refuseReadingReceiveOnly(share: Share, what: string): void {
  if (share.receiveOnly === true)
    throw new ClawpeerError(
      'SHARE_FORBIDDEN',
      `folder ${share.name} is receive-only here: its files are not given to peers (${what} refused)`,
    );
}

/** A sync or a watch of a share that serves only some paths (`send`) is refused: it would reach the rest (SHARE_FORBIDDEN). */
export function refusePartialShare(share: Share, what: string): void {
  if (share.only !== undefined)
    throw new ClawpeerError(
      'SHARE_FORBIDDEN',
      `share ${share.name} serves only the paths sent (${share.only.join(', ')}): ${what} refused, pull them instead`,
    );
}
