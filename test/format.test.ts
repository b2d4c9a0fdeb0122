// How byte counts and durations read in messages, status and progress.
import t from 'tap';
import { count, duration, escapeToShow, human, parseSize } from '../src/format.js';

t.test('human: binary units, one decimal', async (t) => {
  t.equal(human(512), '512 B');
  t.equal(human(1536), '1.5 KiB');
  t.equal(human(3 * 2 ** 30), '3.0 GiB');
});

t.test("duration: to a unit's worth", async (t) => {
  t.equal(duration(0), '0 s');
  t.equal(duration(42.9), '42 s');
  t.equal(duration(307), '5m 07s');
  t.equal(duration(2 * 3600 + 3 * 60 + 59), '2h 03m');
  t.equal(duration(3 * 86400 + 4 * 3600), '3d 04h');
  t.equal(duration(-5), '0 s', 'a clock step back reads as none');
});

t.test('parseSize reads sizes as rsync does: bare K/M/G binary, KB/MB/GB decimal, KiB/MiB/GiB binary', async (t) => {
  t.equal(parseSize('4096'), 4096);
  t.equal(parseSize('64K'), 65536);
  t.equal(parseSize('64kib'), 65536);
  t.equal(parseSize('1.5M'), 1572864);
  t.equal(parseSize('2GB'), 2e9);
  t.equal(parseSize(' 3 GiB '), 3 * 2 ** 30);
  t.equal(parseSize('0'), 0);
  for (const bad of ['', 'lots', '-1K', '1Q', '1e3', '99999999999T'])
    t.equal(parseSize(bad), undefined, `${JSON.stringify(bad)} is not a size`);
});

t.test('count: a number with its noun, singular for one', async (t) => {
  t.equal(count(0, 'file'), '0 files');
  t.equal(count(1, 'file'), '1 file');
  t.equal(count(2, 'round trip'), '2 round trips');
  t.equal(count(1, 'directory', 'directories'), '1 directory');
  t.equal(count(3, 'directory', 'directories'), '3 directories');
});

t.test('escapeToShow: control and bidi characters as \\#ooo and \\uXXXX, the rest as it is', async (t) => {
  t.equal(escapeToShow('plain/été.txt'), 'plain/été.txt');
  t.equal(escapeToShow('invoice\u202efdp.exe'), 'invoice\\u202efdp.exe');
  t.equal(escapeToShow('a\u2066b\u2069c\u2028d\u2029'), 'a\\u2066b\\u2069c\\u2028d\\u2029');
  t.equal(escapeToShow('bold\x1b[1m\n\x7f\x9b'), 'bold\\#033[1m\\#012\\#177\\#233');
  t.equal(escapeToShow('a\\b'), 'a\\b', 'a backslash stays');
  const once = escapeToShow('x\u202e\x1b\\y');
  t.equal(escapeToShow(once), once, 'escaping twice changes nothing');
});
