// The bench plan: sizes, lists, the run matrix and the combinations it refuses.
import t from 'tap';
import { ClawpeerError } from '../../src/errors.js';
import {
  DEFAULT_LARGE_BYTES,
  DEFAULT_PAGE_BYTES,
  DEFAULT_REVISIONS,
  describeWorkload,
  parseByteSize,
  parseIntList,
  parseLossList,
  parseRttList,
  planBench,
  workloadBytes,
  workloadFiles,
} from '../../src/benchkit/bench-plan.js';

const DEFAULTS = { window: 32, streams: 4 };
const usage = { constructor: ClawpeerError, code: 'USAGE' };

t.test('byte sizes: binary units, decimal units, bare numbers; errors name the flag', async (t) => {
  t.equal(parseByteSize('1GiB', '--size'), 2 ** 30);
  t.equal(parseByteSize('64KiB', '--size'), 65536);
  t.equal(parseByteSize('256k', '--size'), 256 * 1024);
  t.equal(parseByteSize('1.5MiB', '--size'), 1.5 * 2 ** 20);
  t.equal(parseByteSize('500MB', '--size'), 500e6);
  t.equal(parseByteSize('4096', '--size'), 4096);
  t.throws(() => parseByteSize('1 GiBs', '--size'), { ...usage, message: /--size "1 GiBs": expected a size/ });
  t.throws(() => parseByteSize('0', '--file-size'), { ...usage, message: /--file-size "0": must be between/ });
  t.throws(() => parseByteSize('65GiB', '--size'), usage);
});

t.test('lists: integers in range, duplicates dropped, order kept', async (t) => {
  t.same(parseIntList('1,4,16,64', '--window', 1, 4096), [1, 4, 16, 64]);
  t.same(parseIntList(' 8, 1,8 ', '--streams', 1, 64), [8, 1]);
  t.throws(() => parseIntList('1,x', '--window', 1, 4096), {
    ...usage,
    message: /--window "1,x": "x" is not an integer in 1..4096/,
  });
  t.throws(() => parseIntList('0', '--streams', 1, 64), usage);
  t.throws(() => parseIntList('1.5', '--streams', 1, 64), usage);
  t.same(parseRttList('1,5,50ms,0.1s,250us', '--rtt'), [1, 5, 50, 100, 0.25]);
  t.throws(() => parseRttList('fast', '--rtt'), { ...usage, message: /--rtt "fast"/ });
  t.same(parseLossList('0,0.1%,0.5,1', '--loss'), [0, 0.1, 0.5, 1]);
  t.throws(() => parseLossList('101', '--loss'), usage);
  t.throws(() => parseLossList('-1', '--loss'), usage);
});

t.test('the matrix: loss x RTT x connections x streams x window x repeat, links in run order', async (t) => {
  const plan = planBench(
    {
      simulate: 'rtt=50ms,rate=100mbit',
      workload: 'revisions',
      window: '1,4,16',
      streams: '1',
      rtt: '1,5',
      loss: '0,1',
      repeat: 2,
    },
    DEFAULTS,
    'ts1',
  );
  t.equal(plan.settings.length, 2 * 2 * 3 * 2);
  t.same(
    plan.links.map((l) => [l.lossPct, l.rttMs, l.rateBitsPerSec]),
    [
      [0, 1, 100e6],
      [0, 5, 100e6],
      [1, 1, 100e6],
      [1, 5, 100e6],
    ],
  );
  t.same(
    plan.settings.slice(0, 3).map((s) => [s.link, s.window, s.repeat]),
    [
      ['rtt=1ms,rate=100mbit', 1, 0],
      ['rtt=1ms,rate=100mbit', 1, 1],
      ['rtt=1ms,rate=100mbit', 4, 0],
    ],
  );
  t.same(
    plan.settings.map((s) => s.index),
    plan.settings.map((_, i) => i),
  );
  t.equal(plan.settings.at(-1)?.link, 'rtt=5ms,loss=1%,rate=100mbit');
  t.equal(plan.settings.at(-1)?.lossPct, 1);
  t.equal(plan.linkRateBitsPerSec, 100e6);
  t.equal(plan.remoteBase, 'clawpeer-bench/ts1');
  t.same(plan.workload, { kind: 'revisions', revisions: DEFAULT_REVISIONS, pageBytes: DEFAULT_PAGE_BYTES });
});

t.test('defaults: large workload of 64 MiB, the transfer defaults for W and streams, one connection', async (t) => {
  const plan = planBench({ simulate: 'rtt=10ms' }, DEFAULTS, 'ts');
  t.same(plan.workload, { kind: 'large', bytes: DEFAULT_LARGE_BYTES });
  t.same(
    plan.settings.map((s) => [s.transport, s.window, s.streams, s.connections, s.rttMs]),
    [['quic', 32, 4, 1, 10]],
  );
  t.equal(plan.linkRateBitsPerSec, undefined);
  t.equal(plan.warmupBytes, 0, 'cold connections unless asked');
  t.equal(planBench({ simulate: 'rtt=10ms', warmup: '1MiB' }, DEFAULTS, 'ts').warmupBytes, 1 << 20);
  t.throws(() => planBench({ simulate: 'rtt=10ms', warmup: 'lots' }, DEFAULTS, 'ts'), {
    ...usage,
    message: /--warmup "lots"/,
  });
  const small = planBench({ simulate: 'none', files: 10, fileSize: '1KiB' }, DEFAULTS, 'ts');
  t.same(small.workload, { kind: 'small', files: 10, fileBytes: 1024 });
  t.equal(workloadBytes(small.workload), 10240);
  t.equal(workloadFiles(small.workload), 10);
  t.match(describeWorkload(small.workload), /10 files of 1024 bytes/);
});

t.test('a real peer: no spec, no sweeps of the link', async (t) => {
  const plan = planBench({ peer: 'bob', size: '1MiB', streams: '1,2' }, DEFAULTS, 'ts');
  t.same(plan.target, { kind: 'peer', peer: 'bob' });
  t.same(plan.links, []);
  t.same(
    plan.settings.map((s) => [s.link, s.streams, s.rttMs]),
    [
      ['peer', 1, undefined],
      ['peer', 2, undefined],
    ],
  );
  t.throws(() => planBench({ peer: 'bob', rtt: '1,5' }, DEFAULTS, 'ts'), {
    ...usage,
    message: /--rtt and --loss sweep a simulated link/,
  });
});

t.test(
  'the sync workload: files, file size and changed files; simulate only, one session, no W/streams sweep',
  async (t) => {
    const plan = planBench({ simulate: 'rtt=5ms', workload: 'sync', files: 200, changed: 5 }, DEFAULTS, 'ts');
    t.same(plan.workload, { kind: 'sync', folderFiles: 200, fileBytes: 4096, changed: 5 });
    t.equal(workloadBytes(plan.workload), 5 * 4096, 'the payload is what changed');
    t.equal(workloadFiles(plan.workload), 5);
    t.same(
      planBench({ simulate: 'rtt=5ms', workload: 'sync', files: 3 }, DEFAULTS, 'ts').workload,
      { kind: 'sync', folderFiles: 3, fileBytes: 4096, changed: 3 },
      'default changed: 10, at most the files',
    );
    t.equal(
      (planBench({ simulate: 'rtt=5ms', workload: 'sync', changed: 0 }, DEFAULTS, 'ts').workload as { changed: number })
        .changed,
      0,
      'a no-op sync',
    );
    t.throws(() => planBench({ peer: 'bob', workload: 'sync' }, DEFAULTS, 'ts'), {
      ...usage,
      message: /--simulate only/,
    });
    t.throws(() => planBench({ simulate: 'rtt=5ms', workload: 'sync', connections: '1,2' }, DEFAULTS, 'ts'), {
      ...usage,
      message: /a sync is one session/,
    });
    t.throws(() => planBench({ simulate: 'rtt=5ms', workload: 'sync', window: '1,16' }, DEFAULTS, 'ts'), {
      ...usage,
      message: /--window and --streams do not apply/,
    });
    t.throws(() => planBench({ simulate: 'rtt=5ms', workload: 'sync', files: 10, changed: 11 }, DEFAULTS, 'ts'), {
      ...usage,
      message: /--changed must be an integer in 0\.\.10/,
    });
    t.throws(() => planBench({ simulate: 'rtt=5ms', workload: 'small', changed: 1 }, DEFAULTS, 'ts'), {
      ...usage,
      message: /--changed applies to --workload sync only/,
    });
    t.throws(() => planBench({ simulate: 'rtt=5ms', workload: 'sync', size: '1MiB' }, DEFAULTS, 'ts'), {
      ...usage,
      message: /--size does not apply to the sync workload/,
    });
  },
);

t.test('refusals name what is wrong', async (t) => {
  t.throws(() => planBench({}, DEFAULTS, 'ts'), {
    ...usage,
    message: /exactly one link: --peer NAME .* or --simulate SPEC/,
  });
  t.throws(() => planBench({ peer: 'a', simulate: 'rtt=1ms' }, DEFAULTS, 'ts'), usage);
  t.throws(() => planBench({ simulate: 'rtt=fast' }, DEFAULTS, 'ts'), {
    ...usage,
    message: /^--simulate: impairment spec: rtt=fast/,
  });
  t.throws(() => planBench({ simulate: 'rtt=1ms', workload: 'huge' }, DEFAULTS, 'ts'), {
    ...usage,
    message: /--workload "huge": expected one of large, small, revisions, revisions-seq, sync/,
  });
  t.throws(() => planBench({ simulate: 'loss=1%', transport: 'quic,tcp' }, DEFAULTS, 'ts'), {
    ...usage,
    message: /TCP relay cannot model loss/,
  });
  t.throws(() => planBench({ simulate: 'rtt=5ms', loss: '0,1', transport: 'tcp' }, DEFAULTS, 'ts'), usage);
  t.throws(() => planBench({ simulate: 'rtt=1ms', transport: 'udp' }, DEFAULTS, 'ts'), usage);
  t.throws(() => planBench({ simulate: 'rtt=1ms', workload: 'revisions-seq', connections: '1,2' }, DEFAULTS, 'ts'), {
    ...usage,
    message: /cannot stripe the revisions-seq/,
  });
  t.throws(() => planBench({ simulate: 'rtt=1ms', workload: 'revisions-seq', window: '1,16' }, DEFAULTS, 'ts'), {
    ...usage,
    message: /window cannot matter/,
  });
  t.throws(() => planBench({ simulate: 'rtt=1ms', workload: 'revisions', size: '1MiB' }, DEFAULTS, 'ts'), {
    ...usage,
    message: /--size does not apply/,
  });
  t.throws(() => planBench({ simulate: 'rtt=1ms', workload: 'large', files: 3 }, DEFAULTS, 'ts'), usage);
  t.throws(() => planBench({ simulate: 'rtt=1ms', repeat: 0 }, DEFAULTS, 'ts'), {
    ...usage,
    message: /--repeat must be an integer/,
  });
  t.throws(
    () =>
      planBench(
        {
          simulate: 'rtt=1ms',
          window: '1,2,3,4,5,6,7,8,9,10',
          streams: '1,2,3,4,5,6,7,8,9,10',
          connections: '1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21',
        },
        DEFAULTS,
        'ts',
      ),
    { ...usage, message: /more than 2000 runs/ },
  );
  t.throws(() => planBench({ simulate: 'rtt=1ms' }, DEFAULTS, '../x'), TypeError);
});
