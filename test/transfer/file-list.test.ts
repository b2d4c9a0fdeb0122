// parseFileList: what `push --files-from` reads, by rsync's rules, checked as share paths.
import t from 'tap';
import { ancestorsOf, parseFileList } from '../../src/transfer/file-list.js';

t.test(
  'one path per line: blank entries and # or ; comments skipped, leading slashes and ./ dropped, CRLF read',
  async (t) => {
    t.same(parseFileList('# generated\n/etc-like/a.txt\r\n\n./docs/readme.md\n;note\nsrc//lib/x.ts\nbuild/\n'), [
      'etc-like/a.txt',
      'docs/readme.md',
      'src/lib/x.ts',
      'build',
    ]);
    t.same(parseFileList(''), []);
    t.same(parseFileList('\n\n# only comments\n'), []);
  },
);

t.test(
  '--from0: NUL-separated; a newline is then part of a name (and refused there, as a control character)',
  async (t) => {
    t.same(parseFileList('a b.txt\0dir/x\0\0', { from0: true }), ['a b.txt', 'dir/x']);
    t.throws(() => parseFileList('ok\0line\nbreak.txt\0', { from0: true }), {
      code: 'USAGE',
      message: /--files-from entry 2 .*control character/,
    });
    t.same(parseFileList('a\nb\n'), ['a', 'b'], 'without --from0 the newline separates');
  },
);

t.test('each path once; a path below a listed directory goes with it', async (t) => {
  t.same(parseFileList('a/b/c.txt\nd\na/b/c.txt\na\nd/e\n'), ['d', 'a']);
  t.same(parseFileList('a\nab/c\n'), ['a', 'ab/c'], 'ab is not below a');
});

t.test(
  '.. inside the base is resolved; climbing out of it, or naming the base itself, is a usage error naming the entry',
  async (t) => {
    t.same(parseFileList('a/b/../c.txt\n'), ['a/c.txt']);
    t.throws(() => parseFileList('ok\n../etc/passwd\n'), {
      code: 'USAGE',
      message: /--files-from entry 2 \("\.\.\/etc\/passwd"\) climbs above the base directory/,
    });
    t.throws(() => parseFileList('a/../../x\n'), { code: 'USAGE', message: /climbs above/ });
    t.throws(() => parseFileList('./\n'), { code: 'USAGE', message: /names the base directory itself/ });
    t.throws(() => parseFileList('/\n'), { code: 'USAGE', message: /names the base directory itself/ });
    t.throws(() => parseFileList('a\\b\n', { name: 'list.txt' }), {
      code: 'USAGE',
      message: /list\.txt entry 1 .*backslash/,
    });
  },
);

t.test('ancestorsOf: the directories a path lies in, outermost first', async (t) => {
  t.same(ancestorsOf('a/b/c'), ['a', 'a/b']);
  t.same(ancestorsOf('top'), []);
});
