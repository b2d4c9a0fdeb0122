// A file revision of given bytes for apply and store tests (mode 0644, live), its root hashed
// with the default chunking: the one builder the sync apply tests share.
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { manifestFromBytes } from '../../src/chunking/manifest.js';
import { revisionEntry, type RevisionEntry } from '../../src/sync/revision.js';
import { vectorFrom } from '../../src/sync/version-vector.js';

export function fileRevision(
  path: string,
  origin: string,
  vector: Record<string, number>,
  bytes: Uint8Array,
  mtimeNs: bigint,
): RevisionEntry {
  return revisionEntry({
    path,
    kind: 'file',
    contentRoot: manifestFromBytes(bytes, DEFAULT_CHUNKING).root,
    size: bytes.length,
    mode: 0o644,
    mtimeNs,
    deleted: false,
    origin,
    vector: vectorFrom(vector),
    linkTarget: '',
  });
}
