// The head of a path is a function of its set of revisions (sync/conflict.ts pickHead): found by
// the convergence harness (issue 31, seed 1009), where three revisions made the pairwise rule
// cycle and nodes kept different heads of one path from the same revisions.
import t from 'tap';
import fc from 'fast-check';
import { compareConcurrent, maximalRevisions, pickHead, resolveRevision } from '../../src/sync/conflict.js';
import type { HeadPick } from '../../src/sync/conflict.js';
import { revisionEntry } from '../../src/sync/revision.js';
import type { RevisionEntry } from '../../src/sync/revision.js';
import { compareVectors, vectorFrom } from '../../src/sync/version-vector.js';
import type { VersionVector } from '../../src/sync/version-vector.js';

const NODES = ['12D3KooWAaaaaaaaaaaaa', '12D3KooWBbbbbbbbbbbbb', '12D3KooWCcccccccccccc'] as const;
const [N0, N1] = NODES;
const T0 = 1_700_000_000_000_000_000n;
const PATH = 'd1/f1';

function rev(
  origin: string,
  vector: VersionVector,
  opts: { content?: number; mtimeNs: bigint; deleted?: boolean },
): RevisionEntry {
  const deleted = opts.deleted ?? false;
  return revisionEntry({
    path: PATH,
    kind: 'file',
    contentRoot: deleted ? new Uint8Array(0) : new Uint8Array(32).fill(opts.content ?? 0),
    size: deleted ? 0 : 10,
    mode: 0o644,
    mtimeNs: opts.mtimeNs,
    deleted,
    origin,
    vector,
    linkTarget: '',
  });
}

const hex = (e: RevisionEntry): string => Buffer.from(e.id).toString('hex');

/** What a pick leaves on disk, comparable across nodes: the head's id and the conflict copies' names and ids. */
function outcome(p: HeadPick | undefined): string {
  if (p === undefined) return 'none';
  return JSON.stringify({ head: hex(p.head), copies: p.losers.map((l) => [l.loserPath, hex(l.loser)]).sort() });
}

function permutations<T>(xs: readonly T[]): T[][] {
  if (xs.length <= 1) return [[...xs]];
  return xs.flatMap((x, i) => permutations([...xs.slice(0, i), ...xs.slice(i + 1)]).map((rest) => [x, ...rest]));
}

/**
 * A node that receives `arrivals` one by one: after each it picks the head of all it holds, and
 * keeps every conflict copy any pick made (copies are revisions of their own paths and travel).
 */
function node(arrivals: readonly RevisionEntry[]): { head: string; finalCopies: string; everCopied: Set<string> } {
  const held: RevisionEntry[] = [];
  const everCopied = new Set<string>();
  let last: HeadPick | undefined;
  for (const e of arrivals) {
    held.push(e);
    last = pickHead(held);
    for (const l of last?.losers ?? []) everCopied.add(l.loserPath);
  }
  if (last === undefined) throw new Error('no arrivals');
  return { head: hex(last.head), finalCopies: outcome(last), everCopied };
}

// Seed 1009's shape: n0 edits (H), then deletes it having seen H (T); n1 edits concurrently (C2)
// with an earlier mtime than H.
const base = vectorFrom({ [N0]: 1 });
const H = rev(N0, vectorFrom({ [N0]: 2 }), { content: 2, mtimeNs: T0 + 2_000_000_000n });
const T = rev(N0, vectorFrom({ [N0]: 3 }), { mtimeNs: T0 + 3_000_000_000n, deleted: true });
const C2 = rev(N1, vectorFrom({ [N0]: 1, [N1]: 1 }), { content: 3, mtimeNs: T0 + 1_000_000_000n });
const B = rev(N0, base, { content: 1, mtimeNs: T0 });

t.test('the three-revision cycle: the pairwise rule is not transitive', async (t) => {
  t.match(resolveRevision(H, T), { action: 'take-remote', reason: 'remote-newer' }, 'T has seen H');
  t.match(resolveRevision(C2, H), { action: 'conflict', winner: 'remote' }, 'H beats C2 on mtime');
  t.match(resolveRevision(T, C2), { action: 'take-remote', reason: 'edit-beats-delete' }, 'C2 beats T as an edit');
});

t.test('the cycle: every arrival order leaves the same head and the same copies', async (t) => {
  const results = permutations([B, H, T, C2]).map(node);
  const heads = new Set(results.map((r) => r.head));
  t.same([...heads], [hex(C2)], 'C2 is the head everywhere: T beat H, and an edit beats the deletion');
  t.same(new Set(results.map((r) => r.finalCopies)).size, 1, 'the same conflict copies everywhere');
  t.same(pickHead([B, H, T, C2])?.losers, [], 'H is history (T saw it), T a deletion: no copy is due at the end');
  // An order that met H and C2 first made C2's copy on the way: that copy travels as a revision
  // of its own path, so it is no disagreement; every such copy names C2 the same way.
  const copied = new Set(results.flatMap((r) => [...r.everCopied]));
  t.same([...copied], ['d1/f1.sync-conflict-20231114-221321-Bbbbbbb'], 'only C2 was ever a loser, under one name');
});

t.test('maximal revisions: those no other has seen', async (t) => {
  t.same(maximalRevisions([B, H, T, C2, T]).map(hex).sort(), [hex(T), hex(C2)].sort());
  t.same(maximalRevisions([]), []);
});

t.test('concurrent edits of three nodes: one winner, the two losers as copies', async (t) => {
  const e = NODES.map((n, i) =>
    rev(n, vectorFrom({ [N0]: 1, [n]: n === N0 ? 2 : 1 }), {
      content: 10 + i,
      mtimeNs: T0 + BigInt(i) * 1_000_000_000n,
    }),
  );
  const outcomes = new Set(permutations([B, ...e]).map((order) => node(order).finalCopies));
  t.equal(outcomes.size, 1);
  const p = pickHead([B, ...e]);
  t.equal(p?.head, e[2], 'the latest mtime wins');
  t.same(
    p?.losers.map((l) => l.loser),
    [e[1], e[0]],
    'the others are kept, best first',
  );
});

// Random sets of revisions of one path by three nodes: a revision's vector is the merge of some
// earlier ones' with its origin's counter raised (so vectors mean what they do in the store).
const arbRevisions = fc
  .array(
    fc.record({
      origin: fc.constantFrom(...NODES),
      seen: fc.array(fc.nat(), { maxLength: 3 }),
      deleted: fc.boolean(),
      content: fc.integer({ min: 0, max: 3 }),
      mtime: fc.integer({ min: 0, max: 4 }),
    }),
    { minLength: 1, maxLength: 7 },
  )
  .map((specs) => {
    const out: RevisionEntry[] = [];
    for (const s of specs) {
      const v = new Map<string, number>();
      for (const k of s.seen) {
        const parent = out[k % Math.max(1, out.length)];
        if (parent === undefined) continue;
        for (const [n, c] of parent.revision.vector) v.set(n, Math.max(v.get(n) ?? 0, c));
      }
      const own =
        Math.max(
          0,
          ...out.filter((r) => r.revision.origin === s.origin).map((r) => r.revision.vector.get(s.origin) ?? 0),
          v.get(s.origin) ?? 0,
        ) + 1;
      v.set(s.origin, own);
      out.push(
        rev(s.origin, v, { deleted: s.deleted, content: s.content, mtimeNs: T0 + BigInt(s.mtime) * 1_000_000_000n }),
      );
    }
    return out;
  });

t.test('random revision sets: the outcome never depends on arrival order', async (t) => {
  fc.assert(
    fc.property(arbRevisions, fc.array(fc.nat(), { minLength: 7, maxLength: 7 }), (revs, keys) => {
      // A second arrival order: sorted by random keys.
      const shuffled = revs
        .map((r, i) => ({ r, k: keys[i] ?? 0 }))
        .sort((a, b) => a.k - b.k)
        .map((x) => x.r);
      const a = node(revs);
      const b = node(shuffled);
      const reversed = node([...revs].reverse());
      if (a.finalCopies !== b.finalCopies || a.finalCopies !== reversed.finalCopies) return false;
      const p = pickHead(revs);
      if (p === undefined) return false;
      // The head is maximal and beats every other maximal revision; every loser is maximal and live.
      const maximal = maximalRevisions(revs);
      const naive = revs.filter(
        (r, i) =>
          revs.indexOf(r) === i && !revs.some((o) => compareVectors(r.revision.vector, o.revision.vector) === 'before'),
      );
      if (JSON.stringify(naive.map(hex).sort()) !== JSON.stringify(maximal.map(hex).sort())) return false;
      if (!maximal.includes(p.head)) return false;
      if (maximal.some((m) => m !== p.head && compareConcurrent(m, p.head) <= 0)) return false;
      if (revs.some((r) => compareVectors(p.head.revision.vector, r.revision.vector) === 'before')) return false;
      return p.losers.every((l) => maximal.includes(l.loser) && !l.loser.revision.deleted);
    }),
    { numRuns: 300 },
  );
  t.pass('300 random sets');
});

t.test('every permutation of a small random set agrees', async (t) => {
  fc.assert(
    fc.property(
      arbRevisions.filter((r) => r.length <= 5),
      (revs) => new Set(permutations(revs).map((o) => node(o).finalCopies)).size === 1,
    ),
    { numRuns: 60 },
  );
  t.pass('60 sets, all orders');
});
