// The revision store's consistency check (RevisionStore.checkInvariants): O(N) over every
// database, for tests and `doctor`, never on the hot path. Reads only.
import { BLAKE3_OUT_BYTES, bytesEqual, toHex } from '../../chunking/blake3.js';
import { MerkleIdSet } from '../../sync/merkle-root.js';
import { decodeRevision, revisionIdOf, type Revision, type RevisionEntry } from '../../sync/revision.js';
import { counterOf } from '../../sync/version-vector.js';
import { WARM_VALUE_BYTES, pathKey, warmKey, type Dbs } from '../revlog-format.js';

/** What the check reads from an open store. */
export interface RevlogCheckView {
  readonly db: Dbs;
  readonly nodeId: string;
  /** The in-memory Merkle set of ids, which must match the stored ones. */
  readonly ids: MerkleIdSet;
  get(id: Uint8Array): RevisionEntry | undefined;
  liveHeadCount(): number;
  localCounter(): number;
}

/** What is wrong with the store (empty when consistent); RevisionStore.checkInvariants lists the rules. */
export function revlogProblems(v: RevlogCheckView): string[] {
  const problems: string[] = [];
  const refs = new Map<string, number>();
  const revPathKey = new Map<string, string>();
  let maxOwn = 0;
  const packed: Uint8Array[] = [];
  for (const { key, value } of v.db.revs.getRange({ snapshot: true })) {
    const idHex = toHex(key);
    packed.push(key);
    if (!bytesEqual(revisionIdOf(value), key)) problems.push(`revision ${idHex} does not hash to its id`);
    let rev: Revision;
    try {
      rev = decodeRevision(value);
    } catch (err) {
      problems.push(`revision ${idHex} does not decode: ${err instanceof Error ? err.message : String(err)}`);
      continue;
    }
    revPathKey.set(idHex, toHex(pathKey(rev.path)));
    if (rev.contentRoot.length > 0) refs.set(toHex(rev.contentRoot), (refs.get(toHex(rev.contentRoot)) ?? 0) + 1);
    if (rev.origin === v.nodeId) maxOwn = Math.max(maxOwn, counterOf(rev.vector, v.nodeId));
  }
  const inHistory = new Map<string, number>();
  for (const { key, value } of v.db.history.getRange({ snapshot: true })) {
    const idHex = toHex(value);
    inHistory.set(idHex, (inHistory.get(idHex) ?? 0) + 1);
    const pk = revPathKey.get(idHex);
    if (pk === undefined) problems.push(`history entry names missing revision ${idHex}`);
    else if (pk !== toHex(key.subarray(0, BLAKE3_OUT_BYTES)))
      problems.push(`history entry of revision ${idHex} is under another path`);
  }
  for (const idHex of revPathKey.keys()) {
    const n = inHistory.get(idHex) ?? 0;
    if (n !== 1) problems.push(`revision ${idHex} appears ${n} times in history`);
  }
  // The writer takes a path without a vector for one with no revision and no head at all.
  for (const pkHex of new Set(revPathKey.values()))
    if (!v.db.pathVectors.doesExist(Buffer.from(pkHex, 'hex')))
      problems.push(`path ${pkHex} has revisions but no vector`);
  let live = 0;
  // A warm entry's mode is not checked against its head's: a file that could not take the head's
  // mode is certified with the one it kept (folder-sync/head-metadata.ts).
  const warmable = new Map<string, Uint8Array>(); // warm key (hex) -> the head id of its live file
  for (const { key, value } of v.db.heads.getRange({ snapshot: true })) {
    const pk = revPathKey.get(toHex(value));
    if (pk === undefined) problems.push(`head ${toHex(value)} is not a stored revision`);
    else if (pk !== toHex(key)) problems.push(`head ${toHex(value)} is stored under another path`);
    const head = pk === undefined ? undefined : v.get(value)?.revision;
    if (head === undefined || head.deleted) continue;
    live++;
    if (head.kind === 'file') warmable.set(toHex(warmKey(head.path)), value);
  }
  if (live !== v.liveHeadCount()) problems.push(`${live} live heads, count says ${v.liveHeadCount()}`);
  for (const { key, value } of v.db.warm.getRange({ snapshot: true })) {
    const headId = warmable.get(toHex(key));
    if (headId === undefined) problems.push(`warm entry ${toHex(key)} is not under a live file head`);
    else if (value.length !== WARM_VALUE_BYTES || !bytesEqual(value.subarray(0, BLAKE3_OUT_BYTES), headId)) {
      problems.push(`warm entry ${toHex(key)} is not certified for its head`);
    }
  }
  const storedRefs = new Map<string, number>();
  for (const { key, value } of v.db.roots.getRange({ snapshot: true }))
    storedRefs.set(toHex(key), value.readUInt32BE(0));
  for (const [root, n] of refs)
    if (storedRefs.get(root) !== n)
      problems.push(`content root ${root}: ${n} references, count says ${storedRefs.get(root) ?? 0}`);
  for (const [root, n] of storedRefs)
    if (!refs.has(root)) problems.push(`content root ${root}: count ${n} but no revision references it`);
  for (const key of v.db.pruned.getKeys({ snapshot: true }))
    if (revPathKey.has(toHex(key))) problems.push(`revision ${toHex(key)} is stored and pruned`);
  if (v.localCounter() < maxOwn)
    problems.push(`local counter ${v.localCounter()} is below this node's stored counter ${maxOwn}`);
  const stored = MerkleIdSet.fromIds(packed);
  if (stored.size !== v.ids.size || !bytesEqual(stored.root(), v.ids.root()))
    problems.push('in-memory Merkle set differs from the stored ids');
  return problems;
}
