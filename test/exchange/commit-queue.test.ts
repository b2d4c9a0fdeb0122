// The receiver's group commit: bounded batches, one at a time, everything published at the end.
import t from 'tap';
import { CommitQueue } from '../../src/exchange/commit-queue.js';
import type { StagedFile } from '../../src/store/staged-file.js';

const file = (name: string, size: number): StagedFile =>
  ({ relPath: name, manifest: { size } }) as unknown as StagedFile;

function queue(o: { batchFiles: number; batchBytes: number }): {
  q: CommitQueue;
  batches: string[][];
  release: () => void;
} {
  const batches: string[][] = [];
  let open: (() => void)[] = [];
  let running = 0;
  const q = new CommitQueue({
    ...o,
    commit: async (batch) => {
      running++;
      if (running > 1) throw new Error('two commits at once');
      batches.push(batch.map((f) => f.relPath));
      await new Promise<void>((resolve) => open.push(resolve));
      running--;
    },
    committed: () => undefined,
    failed: () => false,
    onError: (err) => {
      throw err;
    },
  });
  const release = (): void => {
    const waiting = open;
    open = [];
    for (const r of waiting) r();
  };
  return { q, batches, release };
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

t.test('20,000 files complete at once are committed in batches of the bound, one batch at a time', async (t) => {
  const { q, batches, release } = queue({ batchFiles: 256, batchBytes: 64 << 20 });
  for (let i = 0; i < 20_000; i++) q.add(file(`f${i}`, 8192));
  const all = q.flush(true);
  for (let i = 0; i < 100 && batches.flat().length < 20_000; i++) {
    await tick();
    release();
  }
  await all;
  t.equal(batches.flat().length, 20_000, 'every file committed');
  t.ok(
    batches.every((b) => b.length <= 256),
    `no batch over 256 files (largest ${Math.max(...batches.map((b) => b.length))})`,
  );
  t.equal(new Set(batches.flat()).size, 20_000, 'each once');
});

t.test('a batch stops at the byte bound (one big file still goes alone)', async (t) => {
  const { q, batches, release } = queue({ batchFiles: 256, batchBytes: 100 });
  for (const [n, s] of [
    ['a', 60],
    ['b', 60],
    ['c', 500],
    ['d', 10],
  ] as const)
    q.add(file(n, s));
  const all = q.flush(true);
  for (let i = 0; i < 10; i++) {
    await tick();
    release();
  }
  await all;
  t.same(batches, [['a', 'b'], ['c'], ['d']]);
});

t.test('while a batch commits, fewer than a batch wait; a full batch is handed over behind it', async (t) => {
  const { q, batches, release } = queue({ batchFiles: 4, batchBytes: 1 << 20 });
  q.add(file('first', 1));
  void q.flush(false);
  await tick();
  t.same(batches, [['first']], 'nothing running: committed at once');
  for (const n of ['x1', 'x2', 'x3']) q.add(file(n, 1));
  void q.flush(false);
  t.equal(q.inFlight, 1, 'three queued behind a running batch wait');
  q.add(file('x4', 1));
  void q.flush(false);
  t.equal(q.inFlight, 2, 'a full batch is handed over behind it (the producer waits on two)');
  release();
  await tick();
  release();
  await q.settled;
  t.same(batches, [['first'], ['x1', 'x2', 'x3', 'x4']]);
});
