import t from 'tap';
import { filesLabel } from '../../src/cli/progress.js';
import { human } from '../../src/format.js';

t.test('the bar\'s files field: count while the total is unknown, total until the first is done, then done/total', async (t) => {
  t.equal(filesLabel({ files: 37, totalFiles: 0 }), '37', 'a sync scan hashing as it walks: no "37/0"');
  t.equal(filesLabel({ files: 0, totalFiles: 0 }), '0');
  t.equal(filesLabel({ files: 0, totalFiles: 12 }), '12');
  t.equal(filesLabel({ files: 5, totalFiles: 12 }), '5/12');
});

t.test('human sizes', async (t) => {
  t.equal(human(0), '0 B');
  t.equal(human(1536), '1.5 KiB');
  t.equal(human(3 * 1024 ** 3), '3.0 GiB');
});
