// How `clawpeer ls` prints what a peer sent: ls-style modes, and names that cannot drive a terminal.
import t from 'tap';
import { modeString, printableName } from '../../src/cli/commands/list.js';

t.test('modes read as ls shows them, special bits included', async (t) => {
  t.equal(modeString('file', 0o644), '-rw-r--r--');
  t.equal(modeString('dir', 0o755), 'drwxr-xr-x');
  t.equal(modeString('symlink', 0o777), 'lrwxrwxrwx');
  t.equal(modeString('file', 0o4755), '-rwsr-xr-x');
  t.equal(modeString('file', 0o2644), '-rw-r-Sr--');
  t.equal(modeString('dir', 0o1777), 'drwxrwxrwt');
  t.equal(modeString('dir', 0o1770), 'drwxrwx--T');
});

t.test('control characters and backslashes in a name are escaped as rsync does', async (t) => {
  t.equal(printableName('plain name.txt'), 'plain name.txt');
  t.equal(printableName('bold\x1b[1m'), 'bold\\#033[1m');
  t.equal(printableName('a\nb\\c'), 'a\\#012b\\#134c');
  t.equal(printableName('été'), 'été', 'non-ASCII letters stay');
});

t.test('bidi characters and C1 controls in a name are escaped too: a name cannot disguise itself', async (t) => {
  t.equal(printableName('invoice\u202efdp.exe'), 'invoice\\u202efdp.exe');
  t.equal(printableName('a\u2066b\u2028c\x9b'), 'a\\u2066b\\u2028c\\#233');
  t.equal(printableName('a\\u202e'), 'a\\#134u202e', 'a typed escape reads apart from a real one');
});
