// shareOfOpenFileLimit: the one rule by which the commit batches and the staged files' pool take
// their part of the open-file limit, and the one guess where the limit cannot be read.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { shareOfOpenFileLimit, UNKNOWN_OPEN_FILE_LIMIT } from '../../src/support/open-file-limit.js';

const quarter = { divideBy: 4, min: 8, max: 256 };

t.test('a share is the limit divided, rounded down, held to its bounds', async (t) => {
  t.equal(
    shareOfOpenFileLimit(quarter, () => 130),
    32,
    '130 / 4, rounded down',
  );
  t.equal(
    shareOfOpenFileLimit(quarter, () => 20),
    8,
    'never below min',
  );
  t.equal(
    shareOfOpenFileLimit(quarter, () => 1_048_576),
    256,
    'never above max',
  );
});

t.test('an unknown limit counts as 1,024 for every caller', async (t) => {
  t.equal(UNKNOWN_OPEN_FILE_LIMIT, 1024);
  t.equal(
    shareOfOpenFileLimit(quarter, () => undefined),
    256,
    'commit batches: as before',
  );
  t.equal(
    shareOfOpenFileLimit({ divideBy: 8, min: 4, max: 1024 }, () => undefined),
    128,
    'staged files: 4,096 / 8 before',
  );
});

t.test("the callers' shares follow the limit the process runs under", async (t) => {
  const url = (rel: string): string => new URL(rel, import.meta.url).href;
  const script = `
    const { commitBatchFiles } = await import(${JSON.stringify(url('../../src/exchange/commit-queue.js'))});
    const { stagingHandleCap } = await import(${JSON.stringify(url('../../src/support/reopenable-file.js'))});
    const { openFileLimit } = await import(${JSON.stringify(url('../../src/support/open-file-limit.js'))});
    process.stdout.write(JSON.stringify([openFileLimit(), commitBatchFiles(), stagingHandleCap()]));`;
  let out: string;
  try {
    out = execFileSync(
      'sh',
      ['-c', 'ulimit -n 100 && exec "$@"', 'sh', process.execPath, '--input-type=module', '-e', script],
      { encoding: 'utf8' },
    );
  } catch (err) {
    t.comment(`cannot run a child under ulimit -n 100 here: ${(err as Error).message}`);
    return;
  }
  const [limit, batch, cap] = JSON.parse(out) as [number | null, number, number];
  if (limit === null) {
    t.same([batch, cap], [256, 128], 'no /proc/self/limits: both from 1,024');
    return;
  }
  t.equal(limit, 100, 'the limit read is the one set');
  t.equal(batch, 25, 'commit batches: a quarter');
  t.equal(cap, 12, 'staged files: an eighth');
});
