// The listener's side of `clawpeer ls` (ListRequest, feature 'list'): the entries under a path
// of a share, or the shares a peer may use. Names and metadata only: no file is opened, so a
// listing costs one lstat per entry, not a read of the content (a pull's scan hashes it all).
//
// Goals: the same confinement as a pull (the path must exist inside the share, through
// symlinks too; allow lists apply); clawpeer's own state (`.clawpeer`, temp files) is never
// listed; entries stream in replies under the frame limit, so a huge tree costs the listener a
// batch of memory, not the whole listing. Entries it cannot list (a socket, a name the protocol
// refuses, one that vanished) are left out.
import { lstat } from 'node:fs/promises';
import path from 'node:path';
import { MAX_LIST_ENTRIES_PER_MESSAGE, type ListEntry, type ListRequestMessage } from '../protocol/messages.js';
import { LOCAL_NAME_RULES, normalizeSharePath } from '../transfer/paths.js';
import { isInternalDirName, isInternalPath, isTempFileName } from '../store/internal-names.js';
import type { PeerSession } from '../session/session.js';
import type { Share } from '../home/shares.js';
import { existingSharePath, findShare, refuseReadingReceiveOnly } from '../home/shares.js';
import { scanTreeBatches, type TreeEntry } from '../store/tree-scan.js';
import { ClawpeerError } from '../errors.js';

/** Per-entry bytes on the wire beyond its path and target (tags, kind, size, mode, mtime). */
const ENTRY_OVERHEAD_BYTES = 48;

function listEntryOf(e: TreeEntry): ListEntry {
  return {
    path: e.relPath,
    kind: e.kind,
    size: e.size,
    mode: e.mode,
    mtimeMs: Math.floor(e.mtimeMs),
    linkTarget: e.linkTarget ?? '',
  };
}

export async function serveList(
  session: PeerSession,
  req: ListRequestMessage,
  shares: readonly Share[],
  signal: AbortSignal,
): Promise<void> {
  const reply = (entries: ListEntry[], last: boolean): Promise<void> =>
    session.control.send({ type: 'list-reply', requestId: req.requestId, entries, shares: [], last });
  if (req.share === '') {
    const visible = shares.filter((s) => s.allow === undefined || s.allow.includes(session.peerId));
    await session.control.send({
      type: 'list-reply',
      requestId: req.requestId,
      entries: [],
      shares: visible.map((s) => ({ name: s.name, readOnly: s.readOnly, noDelete: s.noDelete === true })),
      last: true,
    });
    return;
  }
  const share = findShare(shares, req.share, session.peerId);
  refuseReadingReceiveOnly(share, 'a listing');
  const basePath = req.path === '' ? '' : normalizeSharePath(req.path, LOCAL_NAME_RULES);
  if (isInternalPath(basePath))
    throw new ClawpeerError('PATH_INVALID', `${share.name}/${basePath} is clawpeer's own state`);
  const local = await existingSharePath(share, basePath, { rootListing: true });
  const limit = Math.floor(session.caps.maxFrameBytes / 2);
  let batch: ListEntry[] = [];
  let bytes = 0;
  for await (const entries of scanRoots(share, basePath, local, req.recursive, signal)) {
    for (const e of entries) {
      if (isTempFileName(e.relPath.slice(e.relPath.lastIndexOf('/') + 1))) continue;
      const size = Buffer.byteLength(e.relPath) + Buffer.byteLength(e.linkTarget ?? '') + ENTRY_OVERHEAD_BYTES;
      if ((bytes + size > limit && batch.length > 0) || batch.length === MAX_LIST_ENTRIES_PER_MESSAGE) {
        await reply(batch, false);
        batch = [];
        bytes = 0;
      }
      batch.push(listEntryOf(e));
      bytes += size;
    }
  }
  await reply(batch, true);
}

/**
 * The scan a listing of `basePath` (at `local`) makes. The root of a share of some paths (`send`)
 * is those paths alone, each scanned by its name on disk and listed in NFC (a name sent in NFD is
 * one entry, never beside an unsent NFC twin in the same directory), in UTF-8 order as a scan's.
 */
async function* scanRoots(
  share: Share,
  basePath: string,
  local: string,
  recursive: boolean,
  signal: AbortSignal,
): AsyncGenerator<TreeEntry[], void, undefined> {
  const descend = recursive ? {} : { descend: () => false };
  if (share.only === undefined || basePath !== '') {
    const isDir = (await lstat(local)).isDirectory();
    yield* scanTreeBatches(local, {
      ...(isDir ? { rootName: null } : {}),
      onIssue: () => undefined,
      nameRules: LOCAL_NAME_RULES, // as a pull sends them (transfer-source.ts)
      // A synced folder's `.clawpeer/` at any depth, as a pull leaves it out (transfer-source.ts);
      // temp files are left out by the caller.
      skipDir: (rel) => isInternalDirName(path.posix.basename(rel)),
      ...descend,
      signal,
    });
    return;
  }
  const utf8 = (n: string): Buffer => Buffer.from(n.normalize('NFC'));
  for (const name of [...share.only].sort((a, b) => Buffer.compare(utf8(a), utf8(b)))) {
    const at = path.join(share.dir, name);
    if ((await lstat(at).catch(() => undefined)) === undefined) continue; // gone since it was named
    if (!sendableName(name)) continue; // as a scan leaves out a name the protocol refuses
    for await (const batch of scanTreeBatches(at, {
      rootName: name,
      onIssue: () => undefined,
      nameRules: LOCAL_NAME_RULES,
      ...descend,
      signal,
    }))
      // A named directory is always entered (its root is the scan's): without -r, itself alone.
      yield recursive ? batch : batch.filter((e) => !e.relPath.includes('/'));
  }
}

function sendableName(name: string): boolean {
  try {
    normalizeSharePath(name, LOCAL_NAME_RULES);
    return true;
  } catch {
    return false;
  }
}
