// A conflict copy's claim withdrawn after its path was queued (convergence seed 17158): the peer
// sent revisions of a conflict-copy path A before those of the path p whose copy A is. A's own
// conflict claimed a copy path C (queued); then p's conflict claimed A, which withdrew what A's
// first decision had claimed, C included. C, still queued, had no incoming revision left, and
// planning threw "nothing comes in for C": every sync of that pair failed from then on.
import t from 'tap';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { plannedChanges } from '../../src/folder-sync/sync-apply.js';
import { silentLogger } from '../../src/logger.js';
import { RevisionStore } from '../../src/store/revision-store.js';
import { pickHead } from '../../src/sync/conflict.js';
import { revisionEntry, type RevisionEntry } from '../../src/sync/revision.js';
import { vectorFrom } from '../../src/sync/version-vector.js';

const N0 = '12D3KooWAaaaaaaaaaaaa';
const N1 = '12D3KooWBbbbbbbbbbbbb';
const ME = '12D3KooWCcccccccccccc';
const T0 = 1_700_000_000_000_000_000n;

function rev(path: string, origin: string, second: number, body: string): RevisionEntry {
  return revisionEntry({
    path,
    kind: 'file',
    contentRoot: new Uint8Array(32).fill(body.charCodeAt(0)),
    size: body.length,
    mode: 0o644,
    mtimeNs: T0 + BigInt(second) * 1_000_000_000n,
    deleted: false,
    origin,
    vector: vectorFrom({ [origin]: 1 }),
    linkTarget: '',
  });
}

t.test('a copy path whose claim was withdrawn is planned once claimed again, in either order', async (t) => {
  const store = await RevisionStore.open(await mkdtemp(join(tmpdir(), 'clawpeer-withdrawn-')), { nodeId: ME });
  t.teardown(() => store.close());
  // f2: our head p0 and the peer's concurrent p1; p0 loses, and its copy goes to A.
  const p0 = rev('f2', N0, 1, 'apple');
  const p1 = rev('f2', N1, 2, 'berry');
  const a = pickHead([p0, p1])?.losers[0]?.loserPath;
  if (a === undefined) throw new Error('the two edits of f2 should conflict');
  // A: our head a0 and the peer's concurrent a1; a0 loses, and its copy goes to C.
  const a0 = rev(a, N0, 3, 'cherry');
  const a1 = rev(a, N1, 4, 'damson');
  const c = pickHead([a0, a1])?.losers[0]?.loserPath;
  if (c === undefined) throw new Error(`the two files at ${a} should conflict`);
  store.write((w) => {
    for (const e of [p0, a0]) {
      w.put(e);
      w.setHead(e.id);
    }
  });

  const o = { store, keepConcurrentLocal: false, log: silentLogger };
  const expected = {
    changes: [
      { path: 'f2', change: 'conflict', kind: 'file', bytes: 5, copy: a },
      { path: a, change: 'conflict', kind: 'file', bytes: 6, copy: c },
    ],
    skipped: [],
  };
  t.same(plannedChanges([p1, a1], o), expected, "f2's revisions first: both conflicts, each with its copy");
  // A's first: A is decided (claiming C) before f2 claims A, which withdraws C's claim until A is
  // decided again. This threw "nothing comes in for C".
  t.same(plannedChanges([a1, p1], o), expected, 'the same plan when the copy path comes first');
});
