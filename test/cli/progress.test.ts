import t from 'tap';
import { filesLabel, progressLine, RATE_WINDOW_MS, RateMeter } from '../../src/cli/progress.js';
import { human } from '../../src/format.js';

t.test("the bar's files field: the count while the total is unknown, else done/total", async (t) => {
  t.equal(filesLabel({ files: 37, totalFiles: 0 }), '37', 'a sync scan hashing as it walks: no "37/0"');
  t.equal(filesLabel({ files: 0, totalFiles: 0 }), '0');
  t.equal(filesLabel({ files: 0, totalFiles: 12 }), '0/12', 'none done yet reads as none done, not as 12 done');
  t.equal(filesLabel({ files: 5, totalFiles: 12 }), '5/12');
});

t.test('human sizes', async (t) => {
  t.equal(human(0), '0 B');
  t.equal(human(1536), '1.5 KiB');
  t.equal(human(3 * 1024 ** 3), '3.0 GiB');
});

t.test("the bar's line: a bar, percentage and ETA only with a known total", async (t) => {
  const MiB = 1 << 20;
  const sending = progressLine(
    { phase: 'sending', bytes: 25 * MiB, totalBytes: 100 * MiB, files: 1, totalFiles: 4 },
    5 * MiB,
  );
  t.match(sending, /^sending +\|[\u2588\u2591]{30}\| 25% 25\.0 MiB\/100\.0 MiB 5\.0 MiB\/s ETA 15 s files 1\/4$/);
  t.equal((sending.match(/\u2588/g) ?? []).length, 8, 'a quarter of the 30 cells, rounded');
  // A push's sending total was 0 until the Want: the old bar sat at 100% with ETA 0s.
  const unknown = progressLine({ phase: 'scanning', bytes: 3 * MiB, totalBytes: 0, files: 7, totalFiles: 0 }, MiB);
  t.equal(unknown, 'scanning   3.0 MiB 1.0 MiB/s files 7');
  t.notMatch(unknown, /%|ETA/);
  t.match(
    progressLine({ phase: 'receiving', bytes: 10, totalBytes: 100, files: 0, totalFiles: 2 }, 0),
    /ETA - files 0\/2$/,
    'no rate yet: no ETA',
  );
  t.match(
    progressLine({ phase: 'receiving', bytes: 100, totalBytes: 100, files: 2, totalFiles: 2 }, 50),
    / 100% .* ETA 0 s files 2\/2$/,
  );
  t.match(
    progressLine({ phase: 'sending', bytes: 150, totalBytes: 100, files: 2, totalFiles: 2 }, 50),
    / 100% 150 B\/100 B /,
    'more than the total (early chunks) stays at 100%',
  );
  t.equal(
    progressLine({ phase: 'publishing', bytes: 100, totalBytes: 100, files: 3, totalFiles: 5 }, 1e9),
    'publishing files 3/5',
    "the peer's fsyncs have no byte rate",
  );
});

t.test('the rate looks back RATE_WINDOW_MS, and starts over with nothing to go on', async (t) => {
  const meter = new RateMeter();
  t.equal(meter.bytesPerSecond(), 0);
  meter.add(0, 0);
  t.equal(meter.bytesPerSecond(), 0, 'one sample: no rate');
  for (let ms = 50; ms <= 2000; ms += 50) meter.add(ms, ms * 1000); // 1 MB/s
  t.equal(meter.bytesPerSecond(), 1e6);
  // Then a stall: the window forgets the fast start.
  for (let ms = 2050; ms <= 2000 + RATE_WINDOW_MS + 1000; ms += 50) meter.add(ms, 2e6);
  t.equal(meter.bytesPerSecond(), 0, `nothing moved in the last ${RATE_WINDOW_MS} ms`);
  meter.add(2000 + RATE_WINDOW_MS + 2000, 3e6);
  t.ok(meter.bytesPerSecond() > 0 && meter.bytesPerSecond() < 1e6, 'a restart shows at once, averaged over the window');
});
