// What `clawpeer status` reads of a listener's running transfers: begin, counters, end.
import t from 'tap';
import { ListenerActivity } from '../../src/session/listener-activity.js';

t.test('activities appear when begun, count as they go, and vanish when ended', async (t) => {
  const all = new ListenerActivity();
  t.same(all.snapshot(), []);
  const push = all.begin({ peer: 'p1', kind: 'push', share: 'docs', path: 'a' }, 1000);
  const sync = all.begin({ peer: 'p2', kind: 'sync', share: 'docs', path: '' }, 2000);
  push.setTotals(300, 3);
  push.addBytes(100);
  push.addBytes(50);
  push.setFiles(1);
  const seen = all.snapshot();
  t.same(seen, [
    {
      peer: 'p1',
      kind: 'push',
      share: 'docs',
      path: 'a',
      startedAt: 1000,
      bytes: 150,
      totalBytes: 300,
      files: 1,
      totalFiles: 3,
    },
    {
      peer: 'p2',
      kind: 'sync',
      share: 'docs',
      path: '',
      startedAt: 2000,
      bytes: 0,
      totalBytes: 0,
      files: 0,
      totalFiles: 0,
    },
  ]);
  push.addBytes(150);
  t.equal(seen[0]?.bytes, 150, 'a snapshot is a copy');
  push.end(true);
  t.same(
    all.snapshot().map((a) => a.peer),
    ['p2'],
  );
  sync.end(false);
  sync.end(true);
  t.same(all.snapshot(), [], 'ending twice is harmless');
  t.same(
    all.totals(),
    {
      push: { count: 1, failed: 0, bytes: 300 },
      pull: { count: 0, failed: 0, bytes: 0 },
      sync: { count: 1, failed: 1, bytes: 0 },
    },
    'ended ones count once each, failures apart',
  );
  const pull = all.begin({ peer: 'p3', kind: 'pull', share: 'docs', path: 'b' });
  pull.addBytes(70);
  pull.end(false);
  t.same(all.totals().pull, { count: 1, failed: 1, bytes: 70 }, 'a failed pull counts the bytes it moved');
});

t.test("report sets every counter from a phase's progress (a sync receives, then sends)", async (t) => {
  const all = new ListenerActivity();
  const sync = all.begin({ peer: 'p', kind: 'sync', share: 's', path: '' }, 5);
  sync.report({ phase: 'receiving', bytes: 10, totalBytes: 100, files: 1, totalFiles: 4 });
  t.match(all.snapshot(), [{ bytes: 10, totalBytes: 100, files: 1, totalFiles: 4 }]);
  sync.report({ phase: 'sending', bytes: 0, totalBytes: 50, files: 0, totalFiles: 2 });
  t.match(all.snapshot(), [{ bytes: 0, totalBytes: 50, files: 0, totalFiles: 2 }]);
});
