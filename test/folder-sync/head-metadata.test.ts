// A node that cannot give a file the head's mtime or mode (utimes and chmod EPERM: another
// user's file, here an immutable one) certifies what the file kept for the head, so its next
// scan records nothing: before, it recorded the old time or mode as an edit of its own, undoing
// the peer's touch or chmod, and two such nodes traded revisions for good. A file changed since
// the scan is never certified so: its edit is still found.
// Needs root and chattr (an immutable file refuses utimes and chmod even to root); CI runs as
// root, elsewhere the tests skip saying why.
import t, { type Test } from 'tap';
import { lstatSync } from 'node:fs';
import { mkdtemp, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { scanFolder } from '../../src/folder-sync/folder-scanner.js';
import { warmStatOf } from '../../src/store/revlog-format.js';
import { applyRemote } from '../../src/folder-sync/sync-apply.js';
import { silentLogger } from '../../src/logger.js';
import { RevisionStore } from '../../src/store/revision-store.js';
import { revisionEntry, type RevisionEntry } from '../../src/sync/revision.js';
import { incrementVector } from '../../src/sync/version-vector.js';
import { chattr, immutableUnavailable } from '../support/immutable-files.js';

const ME = '12D3KooWCcccccccccccc';
const PEER = '12D3KooWAaaaaaaaaaaaa';
const BYTES = 'the same bytes on both nodes\n';
/** 2023-11-14 22:13:20 UTC; the peer's touch a minute later. */
const T1_S = 1_700_000_000;
const T2_NS = BigInt(T1_S + 60) * 1_000_000_000n;

const unavailable = await immutableUnavailable();
if (unavailable !== undefined) t.comment(`skipping: ${unavailable}`);

interface Scanned {
  readonly folder: string;
  readonly abs: string;
  readonly store: RevisionStore;
  readonly local: RevisionEntry;
}

/** A folder whose file `f` a scan recorded and certified. */
async function scanned(t: Test): Promise<Scanned> {
  const folder = await mkdtemp(join(tmpdir(), 'clawpeer-head-metadata-'));
  const abs = join(folder, 'f');
  await writeFile(abs, BYTES, { mode: 0o644 });
  await utimes(abs, T1_S, T1_S);
  const store = await RevisionStore.open(folder, { nodeId: ME });
  t.teardown(() => store.close());
  await scanFolder(store, folder, { chunking: DEFAULT_CHUNKING });
  const local = store.head('f');
  if (local === undefined) throw new Error('the scan recorded no head for f');
  t.ok(store.isWarm('f', warmStatOf(lstatSync(abs, { bigint: true }))), 'the scan certified f');
  return { folder, abs, store, local };
}

/** The peer's revision of `f` after this node's: same bytes, another mtime and mode. */
function peerRevision(local: RevisionEntry, change: { mode?: number; mtimeNs?: bigint }): RevisionEntry {
  return revisionEntry({
    ...local.revision,
    mode: change.mode ?? local.revision.mode,
    mtimeNs: change.mtimeNs ?? local.revision.mtimeNs,
    origin: PEER,
    vector: incrementVector(local.revision.vector, PEER),
  });
}

/** Applies `received` to the folder with `f` immutable meanwhile (needs no content: same bytes). */
async function applyImmutable(t: Test, s: Scanned, received: RevisionEntry): Promise<void> {
  chattr('+i', s.abs);
  try {
    const result = await applyRemote([received], {
      store: s.store,
      keepConcurrentLocal: false,
      log: silentLogger,
      folder: s.folder,
      chunking: DEFAULT_CHUNKING,
      fetch: async (requests, beforePublish) => {
        t.same(requests, [], 'no content is asked for');
        await beforePublish([]);
        return { delivered: [], chunksReceived: 0 };
      },
    });
    t.match(result, { applied: 1, skipped: [] });
  } finally {
    chattr('-i', s.abs);
  }
}

const hex = (e: RevisionEntry | undefined): string => Buffer.from(e?.id ?? []).toString('hex');

t.test(
  'a touch the file cannot take: the next scan records nothing, the head stays the peer’s',
  { skip: unavailable ?? false },
  async (t) => {
    const s = await scanned(t);
    const touched = peerRevision(s.local, { mtimeNs: T2_NS });
    await applyImmutable(t, s, touched);
    t.equal(Number(lstatSync(s.abs).mtimeMs), T1_S * 1000, 'the file kept its time (utimes was refused)');
    const scan = await scanFolder(s.store, s.folder, { chunking: DEFAULT_CHUNKING });
    t.match(scan, { added: 0, changed: 0, unchanged: 1, hashedBytes: 0 }, 'nothing recorded, nothing hashed');
    t.equal(hex(s.store.head('f')), hex(touched), 'the peer’s revision is still the head');
    t.same(s.store.checkInvariants(), []);

    await writeFile(s.abs, 'an edit after the sync\n');
    const edit = await scanFolder(s.store, s.folder, { chunking: DEFAULT_CHUNKING });
    t.match(edit, { changed: 1 }, 'a later edit is still found');
  },
);

t.test(
  'a chmod and touch the file cannot take: its mode and time are certified for the head',
  { skip: unavailable ?? false },
  async (t) => {
    const s = await scanned(t);
    const changed = peerRevision(s.local, { mode: 0o600, mtimeNs: T2_NS });
    await applyImmutable(t, s, changed);
    t.equal(lstatSync(s.abs).mode & 0o777, 0o644, 'the file kept its mode (chmod was refused)');
    const scan = await scanFolder(s.store, s.folder, { chunking: DEFAULT_CHUNKING });
    t.match(scan, { changed: 0, unchanged: 1 }, 'nothing recorded');
    t.equal(hex(s.store.head('f')), hex(changed), 'the peer’s revision is still the head');
    t.same(s.store.checkInvariants(), [], 'a warm entry with the mode kept is consistent');
  },
);

t.test(
  'a file saved since the scan is not certified: the save is recorded',
  { skip: unavailable ?? false },
  async (t) => {
    const s = await scanned(t);
    // Same size, another time: not the stat the scan certified, so the apply certifies nothing.
    await writeFile(s.abs, BYTES.toUpperCase());
    await utimes(s.abs, T1_S + 1, T1_S + 1);
    await applyImmutable(t, s, peerRevision(s.local, { mtimeNs: T2_NS }));
    const scan = await scanFolder(s.store, s.folder, { chunking: DEFAULT_CHUNKING });
    t.match(scan, { changed: 1 }, 'the save is a revision of its own');
    t.equal(s.store.head('f')?.revision.origin, ME, 'recorded as this node’s edit');
  },
);
