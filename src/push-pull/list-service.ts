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
import { MAX_LIST_ENTRIES_PER_MESSAGE, type ListEntry, type ListRequestMessage } from '../protocol/messages.js';
import { normalizeSharePath } from '../transfer/paths.js';
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
  const basePath = req.path === '' ? '' : normalizeSharePath(req.path);
  if (isInternalPath(basePath))
    throw new ClawpeerError('PATH_INVALID', `${share.name}/${basePath} is clawpeer's own state`);
  const local = await existingSharePath(share, basePath, { rootListing: true });
  const isDir = (await lstat(local)).isDirectory();
  const limit = Math.floor(session.caps.maxFrameBytes / 2);
  let batch: ListEntry[] = [];
  let bytes = 0;
  for await (const entries of scanTreeBatches(local, {
    ...(isDir ? { rootName: null } : {}),
    onIssue: () => undefined,
    // `.clawpeer` only at the share's root; temp files are left out below.
    skipDir: (rel) =>
      basePath === '' && (isInternalDirName(rel) || (share.only !== undefined && !share.only.includes(rel))),
    ...(req.recursive ? {} : { descend: () => false }),
    signal,
  })) {
    for (const e of entries) {
      if (isTempFileName(e.relPath.slice(e.relPath.lastIndexOf('/') + 1))) continue;
      // A share of some paths (`send`) lists only those at its root.
      if (share.only !== undefined && basePath === '' && !share.only.includes(e.relPath.split('/')[0] ?? '')) continue;
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
