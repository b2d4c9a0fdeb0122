// How byte counts and durations read in messages, status and progress.
import t from 'tap';
import { duration, human } from '../src/format.js';

t.test('human: binary units, one decimal', async (t) => {
  t.equal(human(512), '512 B');
  t.equal(human(1536), '1.5 KiB');
  t.equal(human(3 * 2 ** 30), '3.0 GiB');
});

t.test('duration: to a unit\'s worth', async (t) => {
  t.equal(duration(0), '0 s');
  t.equal(duration(42.9), '42 s');
  t.equal(duration(307), '5m 07s');
  t.equal(duration(2 * 3600 + 3 * 60 + 59), '2h 03m');
  t.equal(duration(3 * 86400 + 4 * 3600), '3d 04h');
  t.equal(duration(-5), '0 s', 'a clock step back reads as none');
});
