// Command-line helpers: --include/--exclude (and their -from files) read back in the order given.
import t from 'tap';
import { filterRulesInOrder, patternsOfFile, suggestOptions } from '../../src/cli/args.js';

t.test('--include and --exclude keep their command-line order, in both spellings', async (t) => {
  const argv = [
    'push',
    'src',
    'alice',
    '--include',
    '*.txt',
    '--exclude=*.log',
    '--force',
    '--include=keep.log',
    '--exclude',
    '*',
  ];
  t.same(filterRulesInOrder(argv, { included: ['*.txt', 'keep.log'], excluded: ['*.log', '*'] }), [
    { pattern: '*.txt', include: true },
    { pattern: '*.log', include: false },
    { pattern: 'keep.log', include: true },
    { pattern: '*', include: false },
  ]);
});

t.test('without --include the excludes are taken as parsed; nothing after -- is a flag', async (t) => {
  t.same(
    filterRulesInOrder(['--exclude', 'a'], { included: [], excluded: ['a', 'b'] }),
    [
      { pattern: 'a', include: false },
      { pattern: 'b', include: false },
    ],
    'order does not matter among excludes alone',
  );
  t.same(filterRulesInOrder(['--include', 'x', '--', '--exclude', 'y'], { included: ['x'], excluded: [] }), [
    { pattern: 'x', include: true },
  ]);
});

t.test('a command line whose order cannot be read back is a usage error, not a guess', async (t) => {
  t.throws(() => filterRulesInOrder(['--include', 'x'], { included: ['x', 'y'], excluded: [] }), {
    code: 'USAGE',
    message: /cannot tell the order of the --include\/--exclude rules/,
  });
  t.throws(() => filterRulesInOrder(['--include', 'x', '--exclude', 'z'], { included: ['x'], excluded: ['y'] }), {
    code: 'USAGE',
  });
  t.throws(
    () =>
      filterRulesInOrder(['--exclude-from', 'a'], {
        included: [],
        excluded: [],
        excludeFrom: ['a', 'b'],
        readPatternFile: () => '',
      }),
    { code: 'USAGE' },
  );
});

t.test('pattern files: one per line, blank, # and ; lines skipped (rsync)', async (t) => {
  t.same(patternsOfFile('*.log\n\n# a comment\n; another\r\nbuild/\n  \n!x\n'), ['*.log', 'build/', '!x']);
  t.same(patternsOfFile(''), []);
});

t.test('--exclude-from and --include-from put their patterns where the flag stands', async (t) => {
  const files: Record<string, string> = { keep: 'keep.log\n*.txt\n', drop: '# junk\n*.log\n*\n' };
  const read = (f: string): string => {
    const text = files[f];
    if (text === undefined) throw new Error(`ENOENT: no such file or directory, open '${f}'`);
    return text;
  };
  const argv = ['pull', 'alice:docs', 'out', '--exclude', 'tmp/', '--include-from=keep', '--exclude-from', 'drop'];
  t.same(
    filterRulesInOrder(argv, {
      included: [],
      excluded: ['tmp/'],
      includeFrom: ['keep'],
      excludeFrom: ['drop'],
      readPatternFile: read,
    }),
    [
      { pattern: 'tmp/', include: false },
      { pattern: 'keep.log', include: true },
      { pattern: '*.txt', include: true },
      { pattern: '*.log', include: false },
      { pattern: '*', include: false },
    ],
  );
  t.same(
    filterRulesInOrder(['--exclude-from', 'drop'], {
      included: [],
      excluded: [],
      excludeFrom: ['drop'],
      readPatternFile: read,
    }),
    [
      { pattern: '*.log', include: false },
      { pattern: '*', include: false },
    ],
    'an exclude file alone',
  );
  t.throws(
    () =>
      filterRulesInOrder(['--exclude-from', 'nope'], {
        included: [],
        excluded: [],
        excludeFrom: ['nope'],
        readPatternFile: read,
      }),
    { code: 'USAGE', message: /--exclude-from nope: cannot read it: ENOENT/ },
  );
});

t.test('a typo\'d flag gets a "did you mean" naming a known one (issue 32 item 10)', async (t) => {
  const known = ['dry-run', 'dryRun', 'json', 'host', 'home', 'n', 'help'];
  t.equal(suggestOptions('Unknown argument: dry-rn', known), 'Unknown argument: --dry-rn (did you mean --dry-run?)');
  t.equal(
    suggestOptions('Unknown argument: hots', known),
    'Unknown argument: --hots (did you mean --host?)',
    'a swap of two letters is one step',
  );
  t.equal(
    suggestOptions('Unknown arguments: dry-rn, dryRn, jsn, zzzzzzzz, x', known),
    'Unknown arguments: --dry-rn, --jsn, --zzzzzzzz, -x (--dry-rn: did you mean --dry-run?; --jsn: did you mean --json?)',
    'camelCase copies are dropped; far-off words get no guess',
  );
  t.equal(
    suggestOptions('Unknown arguments: x, y', known, ['pair', 'join', '1-a-b', 'x', 'y']),
    'Unexpected arguments: x, y (more words than the command takes)',
    'extra positionals are named as typed, not as options',
  );
  t.equal(
    suggestOptions('Unknown argument: 192.0.2.1:7700', [...known, 'addr'], ['pair', 'join', '1-a-b', '192.0.2.1:7700']),
    'Unexpected argument: 192.0.2.1:7700 (more words than the command takes; did you mean --addr 192.0.2.1:7700?)',
    'a HOST:PORT too many points at --addr when the command has it',
  );
  t.equal(
    suggestOptions('Unknown arguments: jsn, z', known, ['push', 'a', 'b:c', '--jsn', 'z']),
    'Unexpected argument: z (more words than the command takes); Unknown argument: --jsn (did you mean --json?)',
    'both kinds in one message',
  );
  t.equal(
    suggestOptions('Not enough non-option arguments', known),
    'Not enough non-option arguments',
    'other messages are left alone',
  );
});
