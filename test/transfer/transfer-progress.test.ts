// Progress of several transfers reported as one (pull A B LOCAL): counts go on from where the
// transfer before left them.
import t from 'tap';
import { SequentialProgress, type TransferProgress } from '../../src/transfer/transfer-progress.js';

t.test('each transfer counts on top of those before it', async (t) => {
  const seen: TransferProgress[] = [];
  const all = new SequentialProgress((p) => seen.push(p));
  const first = all.next();
  first({ phase: 'receiving', bytes: 100, totalBytes: 0, files: 0, totalFiles: 2 });
  first({ phase: 'receiving', bytes: 300, totalBytes: 0, files: 2, totalFiles: 2 });
  const second = all.next();
  second({ phase: 'receiving', bytes: 50, totalBytes: 0, files: 0, totalFiles: 1 });
  second({ phase: 'publishing', bytes: 80, totalBytes: 80, files: 1, totalFiles: 1 });
  t.same(seen, [
    { phase: 'receiving', bytes: 100, totalBytes: 0, files: 0, totalFiles: 2 },
    { phase: 'receiving', bytes: 300, totalBytes: 0, files: 2, totalFiles: 2 },
    // The second's byte total is not known yet: still 0, not the bytes before it (a bar past 100%).
    { phase: 'receiving', bytes: 350, totalBytes: 0, files: 2, totalFiles: 3 },
    { phase: 'publishing', bytes: 380, totalBytes: 380, files: 3, totalFiles: 3 },
  ]);
});

t.test('a finished transfer counts all it announced, and a silent one nothing', async (t) => {
  const seen: TransferProgress[] = [];
  const all = new SequentialProgress((p) => seen.push(p));
  all.next()({ phase: 'sending', bytes: 10, totalBytes: 40, files: 1, totalFiles: 4 });
  all.next(); // an empty remote path: no report at all
  all.next()({ phase: 'sending', bytes: 5, totalBytes: 5, files: 1, totalFiles: 1 });
  t.same(seen.at(-1), { phase: 'sending', bytes: 45, totalBytes: 45, files: 5, totalFiles: 5 });
});
