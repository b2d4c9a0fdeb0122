// What the schedule makes of a completed sync that did not end in sync (sync-outcome-text.ts
// completedOutcome): a named cause (an entry here unreadable, a path left as is on either side)
// is a failure, shown as `error` and retried with backoff; no cause at all means changes came in
// while it ran, and the pair stays `syncing` and runs again at once. Before, both were `error`:
// a node's own status flapped to error under steady edit churn.
import t from 'tap';
import type { SyncFolderResult } from '../../src/folder-sync/sync-client.js';
import { completedOutcome, UNSETTLED_TEXT } from '../../src/folders/sync-outcome-text.js';
import { FolderSchedule } from '../../src/sync/folder-schedule.js';

const result = (o: Partial<SyncFolderResult>): SyncFolderResult => ({
  inSync: false,
  roundTrips: 1,
  reconcileBytes: 0,
  revisionsSent: 1,
  revisionsReceived: 0,
  chunksSent: 0,
  wireBytes: 0,
  conflicts: 0,
  seconds: 0,
  scanned: true,
  skipped: [],
  localOnly: [],
  unreadable: [],
  ...o,
});

t.test('files that did not fit on the disk: the failure says so, with the numbers', async (t) => {
  const noSpace = {
    paths: ['big.bin', 'video.mp4', 'x.iso'],
    files: 3,
    needBytes: 12 << 20,
    freeBytes: 8 << 20,
    keepBytes: 1 << 20,
  };
  t.same(completedOutcome(result({ skipped: ['big.bin', 'video.mp4', 'x.iso'], noSpace })), {
    kind: 'failed',
    error:
      'not enough disk space here for 3 files (12.0 MiB needed, 8.0 MiB free, of which 1.0 MiB stay free): big.bin, video.mp4, ...; retried',
  });
});

t.test("files that did not fit on the peer's disk: named as the peer's", async (t) => {
  const peerNoSpace = { paths: ['big.bin'], files: 1, needBytes: 12 << 20, freeBytes: 8 << 20, keepBytes: 1 << 20 };
  t.same(completedOutcome(result({ peerSkipped: ['big.bin'], peerNoSpace })), {
    kind: 'failed',
    error:
      'not enough disk space on the peer for 1 file (12.0 MiB needed, 8.0 MiB free, of which 1.0 MiB stay free): big.bin; retried',
  });
});

t.test('in sync: done', async (t) => {
  t.same(completedOutcome(result({ inSync: true })), { kind: 'done' });
});

t.test('a named cause is a failure that says it', async (t) => {
  t.same(completedOutcome(result({ skipped: ['a.txt'] })), {
    kind: 'failed',
    error: '1 path left as is here (a.txt); retried',
  });
  t.same(completedOutcome(result({ peerSkipped: ['a.txt', 'b.txt'] })), {
    kind: 'failed',
    error: '2 paths left as is by the peer (a.txt, ...); retried',
  });
  t.same(
    completedOutcome(result({ unreadable: [{ path: 'x', error: 'EACCES', reason: 'permission denied' }] })).kind,
    'failed',
  );
});

t.test('no cause: unsettled, and the pair reads syncing, due again at once', async (t) => {
  const outcome = completedOutcome(result({}));
  t.same(outcome, { kind: 'unsettled', error: UNSETTLED_TEXT });
  const s = new FolderSchedule({ random: () => 0.5 });
  s.configure([{ folder: 'docs', peer: 'a', intervalMs: 60_000, paused: false }], 1000);
  s.take(1000);
  s.finish('docs', 'a', 1010, outcome);
  const [p] = s.snapshot();
  t.equal(p?.state, 'syncing', 'not error');
  t.equal(p?.failures, 0, 'not a failure');
  t.same(s.take(1010), [{ folder: 'docs', peer: 'a' }], 'run again at once');
});
