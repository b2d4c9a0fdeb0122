import t from 'tap';
import fc from 'fast-check';
import {
  conflictPath,
  conflictTimestamp,
  isConflictPath,
  resolveRevision,
  shortNodeId,
} from '../../src/sync/conflict.js';
import type { Resolution } from '../../src/sync/conflict.js';
import { revisionEntry } from '../../src/sync/revision.js';
import type { Revision, RevisionEntry } from '../../src/sync/revision.js';
import { incrementVector, vectorFrom } from '../../src/sync/version-vector.js';
import type { VersionVector } from '../../src/sync/version-vector.js';
import { normalizeSharePath } from '../../src/transfer/paths.js';

const ALICE = '12D3KooWAbCdEfGhIjKlMnOpQrStUvWxYz1234567890abcdefgh';
const BOB = '12D3KooWZyXwVuTsRqPoNmLkJiHgFeDcBa0987654321zyxwvuts';
// 2023-11-14 22:13:20 UTC
const T0 = 1_700_000_000_000_000_000n;

function root(byte: number): Uint8Array {
  return new Uint8Array(32).fill(byte);
}

function fileRev(
  origin: string,
  vector: VersionVector,
  content: number,
  mtimeNs: bigint,
  path = 'docs/report.txt',
): RevisionEntry {
  const rev: Revision = {
    path,
    kind: 'file',
    contentRoot: root(content),
    size: 10,
    mode: 0o644,
    mtimeNs,
    deleted: false,
    origin,
    vector,
    linkTarget: '',
  };
  return revisionEntry(rev);
}

function tombstone(origin: string, vector: VersionVector, mtimeNs: bigint, path = 'docs/report.txt'): RevisionEntry {
  return revisionEntry({
    path,
    kind: 'file',
    contentRoot: new Uint8Array(0),
    size: 0,
    mode: 0o644,
    mtimeNs,
    deleted: true,
    origin,
    vector,
    linkTarget: '',
  });
}

/** The winner's id as seen from one side, to compare both sides' decisions. */
function winnerId(local: RevisionEntry, remote: RevisionEntry, r: Resolution): string {
  const w =
    r.action === 'conflict' ? (r.winner === 'local' ? local : remote) : r.action === 'keep-local' ? local : remote;
  return Buffer.from(w.id).toString('hex');
}

const base = vectorFrom({ [ALICE]: 1 });
const aliceEdit = incrementVector(base, ALICE);
const bobEdit = incrementVector(base, BOB);

t.test('no local head or a causally newer remote: take it; an older one: keep ours', async (t) => {
  const v1 = fileRev(ALICE, base, 1, T0);
  const v2 = fileRev(ALICE, aliceEdit, 2, T0 + 1n);
  t.match(resolveRevision(undefined, v1), { action: 'take-remote', reason: 'no-local' });
  t.match(resolveRevision(v1, v2), { action: 'take-remote', reason: 'remote-newer', order: 'before' });
  t.match(resolveRevision(v2, v1), { action: 'keep-local', reason: 'local-newer', order: 'after' });
  t.match(resolveRevision(v1, v1), { action: 'keep-local', reason: 'same-revision' });
  // Newer by vector wins even with an older mtime: clocks do not decide causality.
  const v3 = fileRev(BOB, incrementVector(aliceEdit, BOB), 3, T0 - 1_000_000_000n);
  t.match(resolveRevision(v2, v3), { action: 'take-remote', reason: 'remote-newer' });
});

t.test('edit vs edit: later mtime wins, the loser gets a conflict name, both sides agree', async (t) => {
  const mine = fileRev(ALICE, aliceEdit, 2, T0);
  const theirs = fileRev(BOB, bobEdit, 3, T0 + 5_000_000_000n);
  const atAlice = resolveRevision(mine, theirs);
  const atBob = resolveRevision(theirs, mine);
  t.match(atAlice, {
    action: 'conflict',
    winner: 'remote',
    loserPath: `docs/report.sync-conflict-20231114-221320-${ALICE.slice(8, 15)}.txt`,
  });
  t.match(atBob, {
    action: 'conflict',
    winner: 'local',
    loserPath: `docs/report.sync-conflict-20231114-221320-${ALICE.slice(8, 15)}.txt`,
  });
  t.equal(winnerId(mine, theirs, atAlice), winnerId(theirs, mine, atBob));
  if (atAlice.action === 'conflict') t.equal(atAlice.loser.origin, ALICE);
});

t.test('edit vs edit with equal mtimes: the smaller origin id wins', async (t) => {
  const a = fileRev(ALICE, aliceEdit, 2, T0);
  const b = fileRev(BOB, bobEdit, 3, T0);
  t.ok(ALICE < BOB);
  t.match(resolveRevision(b, a), { action: 'conflict', winner: 'remote' });
  t.match(resolveRevision(a, b), { action: 'conflict', winner: 'local', loserPath: /-ZyXwVuT\.txt$/ });
});

t.test('delete vs edit: the edit wins without a conflict copy, on both sides', async (t) => {
  const deleted = tombstone(ALICE, aliceEdit, T0 + 100n * 1_000_000_000n);
  const edited = fileRev(BOB, bobEdit, 4, T0);
  t.match(resolveRevision(deleted, edited), {
    action: 'take-remote',
    reason: 'edit-beats-delete',
    order: 'concurrent',
  });
  t.match(resolveRevision(edited, deleted), { action: 'keep-local', reason: 'edit-beats-delete' });
  // A delete that has seen the edit is a plain newer revision.
  const laterDelete = tombstone(ALICE, incrementVector(bobEdit, ALICE), T0);
  t.match(resolveRevision(edited, laterDelete), { action: 'take-remote', reason: 'remote-newer' });
});

t.test('same content is never a conflict, whatever the vectors', async (t) => {
  const a = fileRev(ALICE, aliceEdit, 7, T0);
  const b = fileRev(BOB, bobEdit, 7, T0 + 1n);
  const atA = resolveRevision(a, b);
  const atB = resolveRevision(b, a);
  t.match(atA, { action: 'take-remote', reason: 'same-content' });
  t.match(atB, { action: 'keep-local', reason: 'same-content' });
  t.equal(winnerId(a, b, atA), winnerId(b, a, atB));
  // Two concurrent deletions: same outcome, no conflict.
  t.match(resolveRevision(tombstone(ALICE, aliceEdit, T0), tombstone(BOB, bobEdit, T0)), {
    action: 'keep-local',
    reason: 'same-content',
  });
});

t.test('equal vectors with different ids are resolved deterministically too', async (t) => {
  const a = fileRev(ALICE, aliceEdit, 1, T0);
  const b = fileRev(ALICE, aliceEdit, 2, T0);
  const ab = resolveRevision(a, b);
  const ba = resolveRevision(b, a);
  t.equal(ab.action, 'conflict');
  t.equal(winnerId(a, b, ab), winnerId(b, a, ba));
});

t.test('both sides always pick the same winner (property)', async (t) => {
  const nodes = [ALICE, BOB, 'carol'];
  const arbEntry = fc
    .record({
      origin: fc.constantFrom(...nodes),
      vec: fc.dictionary(fc.constantFrom(...nodes), fc.integer({ min: 1, max: 3 })),
      content: fc.integer({ min: 0, max: 2 }),
      deleted: fc.boolean(),
      mtime: fc.bigInt({ min: 0n, max: 3n }),
    })
    .map(({ origin, vec, content, deleted, mtime }) => {
      const vector = vectorFrom({ ...vec, [origin]: Math.max(1, vec[origin] ?? 0) });
      return deleted ? tombstone(origin, vector, mtime) : fileRev(origin, vector, content, mtime);
    });
  fc.assert(
    fc.property(arbEntry, arbEntry, (x, y) => {
      const xy = resolveRevision(x, y);
      const yx = resolveRevision(y, x);
      if (winnerId(x, y, xy) !== winnerId(y, x, yx)) return false;
      if ((xy.action === 'conflict') !== (yx.action === 'conflict')) return false;
      if (xy.action === 'conflict' && yx.action === 'conflict' && xy.loserPath !== yx.loserPath) return false;
      // A live revision never loses to a tombstone silently: if one side is live, the winner is live or it is a conflict.
      const w = xy.action === 'conflict' ? undefined : xy.action === 'keep-local' ? x : y;
      if (w !== undefined && w.revision.deleted && !(x.revision.deleted && y.revision.deleted)) {
        return xy.reason === 'local-newer' || xy.reason === 'remote-newer' || xy.reason === 'same-revision';
      }
      return true;
    }),
    { numRuns: 500 },
  );
  t.pass('property held');
});

t.test('conflict names keep the extension and stay valid share paths', async (t) => {
  const ts = '20231114-221320';
  const id = ALICE.slice(8, 15);
  t.equal(shortNodeId(ALICE), 'AbCdEfG');
  t.equal(shortNodeId('carol-node-xyz'), 'carol-n');
  t.equal(shortNodeId('12D3KooW'), '12D3Koo');
  t.equal(conflictPath('report.txt', T0, ALICE), `report.sync-conflict-${ts}-${id}.txt`);
  t.equal(conflictPath('a/b/archive.tar.gz', T0, ALICE), `a/b/archive.tar.sync-conflict-${ts}-${id}.gz`);
  t.equal(conflictPath('Makefile', T0, ALICE), `Makefile.sync-conflict-${ts}-${id}`);
  t.equal(conflictPath('.bashrc', T0, ALICE), `.bashrc.sync-conflict-${ts}-${id}`);
  t.equal(conflictPath('dir/.env.local', T0, ALICE), `dir/.env.sync-conflict-${ts}-${id}.local`);
  t.equal(
    conflictPath('v1.2.3/notes', T0, ALICE),
    `v1.2.3/notes.sync-conflict-${ts}-${id}`,
    'dots in the directory are not an extension',
  );
  const long = 'x'.repeat(250) + '.txt';
  const p = conflictPath(`d/${long}`, T0, ALICE);
  t.ok(Buffer.byteLength(p.split('/')[1]!) <= 255, 'segment fits 255 bytes');
  t.ok(p.endsWith(`-${id}.txt`));
  t.equal(normalizeSharePath(p), p);
  // A multi-byte stem is cut on a code point boundary and trailing dots/spaces dropped.
  const multi = conflictPath('é'.repeat(120) + ' . .txt', T0, ALICE);
  t.equal(normalizeSharePath(multi), multi);
  // A path near the 4,096-byte limit: the copy's path fits it too (it threw in every sync before).
  const deep = `${'d'.repeat(200)}/`.repeat(20) + 'y'.repeat(60) + '.txt'; // 4,084 bytes
  const deepCopy = conflictPath(deep, T0, ALICE);
  t.ok(Buffer.byteLength(deepCopy) <= 4096, `the copy's path fits 4,096 bytes (${Buffer.byteLength(deepCopy)})`);
  t.equal(normalizeSharePath(deepCopy), deepCopy);
  t.ok(deepCopy.endsWith(`-${id}.txt`) && deepCopy.startsWith(deep.slice(0, deep.lastIndexOf('/') + 1)));
  t.equal(conflictPath(`d/${long}`, T0, ALICE), p, 'a name that fitted before is unchanged');
  t.ok(isConflictPath(p) && isConflictPath(`Makefile.sync-conflict-${ts}-${id}`));
  t.notOk(isConflictPath('report.txt'));
});

t.test('conflict timestamps are the UTC second of the mtime', async (t) => {
  t.equal(conflictTimestamp(0n), '19700101-000000');
  t.equal(conflictTimestamp(T0 + 999_999_999n), '20231114-221320');
  t.equal(conflictTimestamp(-1n), '19691231-235959');
  t.equal(conflictTimestamp((1n << 63n) - 1n), '22620411-234716', 'largest i64 mtime');
  t.equal(conflictTimestamp(-(1n << 63n)), '16770921-001243', 'smallest i64 mtime');
  t.equal(conflictTimestamp(1n << 80n), '99991231-235959', 'beyond year 9999: clamped');
  t.equal(conflictTimestamp(-(1n << 80n)), '00000101-000000', 'before year 0: clamped');
});
