// Command-line helpers: --include/--exclude read back in the order given.
import t from 'tap';
import { filterRulesInOrder } from '../../src/cli/args.js';

t.test('--include and --exclude keep their command-line order, in both spellings', async (t) => {
  const argv = ['push', 'src', 'alice', '--include', '*.txt', '--exclude=*.log', '--force', '--include=keep.log', '--exclude', '*'];
  t.same(filterRulesInOrder(argv, ['*.txt', 'keep.log'], ['*.log', '*']), [
    { pattern: '*.txt', include: true },
    { pattern: '*.log', include: false },
    { pattern: 'keep.log', include: true },
    { pattern: '*', include: false },
  ]);
});

t.test('without --include the excludes are taken as parsed; nothing after -- is a flag', async (t) => {
  t.same(filterRulesInOrder(['--exclude', 'a'], [], ['a', 'b']), [{ pattern: 'a', include: false }, { pattern: 'b', include: false }], 'order does not matter among excludes alone');
  t.same(filterRulesInOrder(['--include', 'x', '--', '--exclude', 'y'], ['x'], []), [{ pattern: 'x', include: true }]);
});

t.test('a command line whose order cannot be read back is a usage error, not a guess', async (t) => {
  t.throws(() => filterRulesInOrder(['--include', 'x'], ['x', 'y'], []), { code: 'USAGE', message: /cannot tell the order of --include and --exclude/ });
  t.throws(() => filterRulesInOrder(['--include', 'x', '--exclude', 'z'], ['x'], ['y']), { code: 'USAGE' });
});
