import t, { type Test } from 'tap';
import { compileExcludes, compileFilter, MAX_EXCLUDE_PATTERNS } from '../../src/transfer/exclude.js';

/** [relPath, isDir, excluded?] against one pattern. */
function check(t: Test, pattern: string, cases: readonly [string, boolean, boolean][]): void {
  const rules = compileExcludes([pattern]);
  for (const [rel, isDir, want] of cases)
    t.equal(rules.excludes(rel, isDir), want, `${pattern} ${want ? 'excludes' : 'keeps'} ${rel}${isDir ? '/' : ''}`);
}

t.test('a pattern without a slash matches a name at any depth', async (t) => {
  check(t, '*.log', [
    ['a.log', false, true],
    ['x/y/b.log', false, true],
    ['a.log.txt', false, false],
    ['logs/a.txt', false, false],
    ['dir.log', true, true],
  ]);
  check(t, 'node_modules', [
    ['node_modules', true, true],
    ['pkg/node_modules', true, true],
    ['node_modules_x', true, false],
  ]);
  check(t, 'f?.txt', [
    ['f1.txt', false, true],
    ['f12.txt', false, false],
    ['d/f2.txt', false, true],
  ]);
  check(t, '[ab]*', [
    ['apple', false, true],
    ['banana', false, true],
    ['cherry', false, false],
  ]);
  check(t, '[!ab]*', [
    ['apple', false, false],
    ['cherry', false, true],
  ]);
  check(t, '[a-c].md', [
    ['b.md', false, true],
    ['d.md', false, false],
  ]);
});

t.test('a slash anchors the pattern at the pushed directory', async (t) => {
  check(t, '/build', [
    ['build', true, true],
    ['src/build', true, false],
  ]);
  check(t, 'docs/*.tmp', [
    ['docs/a.tmp', false, true],
    ['x/docs/a.tmp', false, false],
    ['docs/sub/a.tmp', false, false],
  ]);
  check(t, 'docs/**/*.tmp', [
    ['docs/a.tmp', false, true],
    ['docs/sub/deep/a.tmp', false, true],
    ['other/a.tmp', false, false],
  ]);
  check(t, '**/cache', [
    ['cache', true, true],
    ['a/b/cache', true, true],
  ]);
  check(t, 'logs/**', [
    ['logs', true, false],
    ['logs/a', false, true],
    ['logs/a/b.txt', false, true],
    ['other/a', false, false],
  ]);
  check(t, 'a/**/b', [
    ['a/b', true, true],
    ['a/x/y/b', true, true],
    ['a/x/c', true, false],
  ]);
  check(t, 'a**b', [
    ['axxb', false, true],
    ['a/b', false, false],
  ]); // `**` inside a segment is `*`
});

t.test('patterns that make backtracking regexes explode stay linear', async (t) => {
  // As a regex, `^[^/]*a[^/]*a...b$` on 40 a's took 37 s. Here each is a quick miss.
  const rules = compileExcludes(['*a*a*a*a*a*a*a*a*a*a*a*a*b', '**/**/**/**/**/**/**/**/x', '/**/a*a*a*a*a*a*c/**/z']);
  const long = 'a'.repeat(255);
  const deep = Array.from({ length: 200 }, () => 'a'.repeat(20)).join('/');
  t.equal(rules.excludes(long, false), false);
  t.equal(rules.excludes(deep, false), false);
  t.equal(rules.excludes(`${deep}/x`, false), true, 'and still matches what it should');
});

t.test('non-ASCII names: ? and classes take one character', async (t) => {
  check(t, 'caf?.txt', [
    ['café.txt', false, true],
    ['cafe.txt', false, true],
    ['caffe.txt', false, false],
  ]);
  check(t, '[é]*', [
    ['été', false, true],
    ['ete', false, false],
  ]);
  check(t, '?.md', [['😀.md', false, true]]);
});

t.test('a trailing slash matches directories only', async (t) => {
  check(t, 'cache/', [
    ['cache', true, true],
    ['cache', false, false],
    ['x/cache', true, true],
  ]);
});

t.test('escapes and literal regex characters', async (t) => {
  check(t, 'a\\*b', [
    ['a*b', false, true],
    ['axb', false, false],
  ]);
  check(t, 'v1.0(final)+', [
    ['v1.0(final)+', false, true],
    ['v1x0(final)+', false, false],
  ]);
  check(t, '$HOME^', [['$HOME^', false, true]]);
});

t.test('the pushed root itself is never excluded', async (t) => {
  t.equal(compileExcludes(['*']).excludes('', true), false);
  t.equal(compileExcludes(['*']).excludes('anything', false), true);
});

t.test('bad patterns are usage errors naming the pattern', async (t) => {
  t.throws(() => compileExcludes(['']), { code: 'USAGE', message: /--exclude "": is empty/ });
  t.throws(() => compileExcludes(['//']), { code: 'USAGE', message: /matches nothing/ });
  t.throws(() => compileExcludes(['a\\']), { code: 'USAGE', message: /lone backslash/ });
  t.throws(() => compileExcludes(['[abc']), { code: 'USAGE', message: /\[ without its \]/ });
  t.throws(() => compileExcludes(['a\0b']), { code: 'USAGE', message: /NUL/ });
  t.throws(() => compileExcludes(new Array<string>(MAX_EXCLUDE_PATTERNS + 1).fill('x')), {
    code: 'USAGE',
    message: /more than 1024/,
  });
  t.throws(() => compileExcludes(['x'.repeat(1025)]), { code: 'USAGE', message: /longer than 1024 characters/ });
  t.throws(() => compileExcludes(new Array<string>(17).fill('y'.repeat(1000))), {
    code: 'USAGE',
    message: /add up to 17000 characters, more than 16384/,
  });
});

t.test('anchored rules against a depth-first walk agree with asking each path cold', async (t) => {
  const patterns = ['/a/*/c', 'a/**/d', '**/b/**', 'x?/y', '/a/b/'];
  const walked = compileExcludes(patterns);
  const paths: [string, boolean][] = [];
  for (const a of ['a', 'x1', 'b']) {
    paths.push([a, true]);
    for (const b of ['b', 'y', 'z']) {
      paths.push([`${a}/${b}`, true]);
      for (const c of ['c', 'd', 'e']) paths.push([`${a}/${b}/${c}`, false], [`${a}/${b}/${c}`, true]);
    }
  }
  for (const [rel, isDir] of paths) {
    const cold = compileExcludes(patterns).excludes(rel, isDir); // a fresh matcher: no cached parents
    t.equal(walked.excludes(rel, isDir), cold, `${rel}${isDir ? '/' : ''}`);
  }
  t.equal(walked.excludes('a/z/c', false), true, '/a/*/c');
  t.equal(walked.excludes('a/b', true), true, '/a/b/ (a directory)');
  t.equal(walked.excludes('b/y/e', false), true, '**/b/** takes what is inside any b');
  t.equal(walked.excludes('x1/y', true), true, 'x?/y');
  t.equal(walked.excludes('a/y/e', false), false);
});

t.test('include rules among excludes: the first rule that matches decides, as rsync', async (t) => {
  const inc = (pattern: string) => ({ pattern, include: true });
  const exc = (pattern: string) => ({ pattern, include: false });
  const onlyText = compileFilter([inc('*/'), inc('*.txt'), exc('*')]);
  t.equal(onlyText.excludes('notes.txt', false), false, 'kept by --include *.txt');
  t.equal(onlyText.excludes('photo.jpg', false), true, 'everything else: --exclude *');
  t.equal(onlyText.excludes('docs', true), false, 'directories kept by --include */');
  t.equal(onlyText.excludes('docs/deep/a.txt', false), false);
  t.equal(onlyText.excludes('docs/deep/a.md', false), true);
  t.equal(onlyText.hasIncludes, true);

  const order = compileFilter([exc('*.log'), inc('keep.log')]);
  t.equal(order.excludes('keep.log', false), true, 'an include after a matching exclude comes too late');
  const reversed = compileFilter([inc('keep.log'), exc('*.log')]);
  t.equal(reversed.excludes('keep.log', false), false, 'the include first wins');
  t.equal(reversed.excludes('a/keep.log', false), false, 'an unanchored include matches at any depth');
  t.equal(reversed.excludes('other.log', false), true);
  t.equal(reversed.excludes('other.txt', false), false, 'no rule matches: included');

  const anchored = compileFilter([inc('/build/keep/'), exc('/build/*'), inc('*.o'), exc('**/tmp/**')]);
  t.equal(anchored.excludes('build/keep', true), false, 'an anchored include ahead of the anchored exclude');
  t.equal(anchored.excludes('build/keep', false), true, 'a trailing slash includes directories only');
  t.equal(anchored.excludes('build/other', true), true);
  t.equal(anchored.excludes('x/tmp/a.o', false), false, 'a name include ahead of an anchored exclude');
  t.equal(anchored.excludes('x/tmp/a.c', false), true);
  t.same(anchored.rules, [inc('/build/keep/'), exc('/build/*'), inc('*.o'), exc('**/tmp/**')], 'the rules, in order');
  t.equal(compileExcludes(['*.o']).hasIncludes, false);
});

t.test('a bad include pattern is a usage error naming --include', async (t) => {
  t.throws(() => compileFilter([{ pattern: '[x', include: true }]), {
    code: 'USAGE',
    message: '--include "[x": has a [ without its ]',
  });
  t.throws(() => compileFilter([{ pattern: '', include: true }]), { code: 'USAGE', message: '--include "": is empty' });
});
