// Output: results on stdout (lines or NDJSON), failures on stderr; --quiet drops summaries for people only.
import t from 'tap';
import { Output } from '../../src/cli/output.js';
import { createLogger } from '../../src/logger.js';

const capture = (json: boolean, quiet: boolean): { out: Output; stdout: string[]; stderr: string[] } => {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return {
    out: new Output(
      json,
      (s) => stdout.push(s),
      (s) => stderr.push(s),
      quiet,
    ),
    stdout,
    stderr,
  };
};

t.test('--quiet drops summaries for people, keeps what was asked for and every error', async (t) => {
  const q = capture(false, true);
  q.out.summary({ event: 'done' }, 'pushed 1 files');
  q.out.emit({ event: 'published', path: 'a' }, '>f+++++++++ a');
  q.out.error('IO', 'disk full', 1);
  t.same(q.stdout, ['>f+++++++++ a\n'], 'no summary; an itemized line still prints');
  t.same(q.stderr, ['clawpeer: disk full\n']);
  t.equal(q.out.silent, true);
  const loud = capture(false, false);
  loud.out.summary({ event: 'done' }, 'pushed 1 files');
  t.same(loud.stdout, ['pushed 1 files\n']);
  t.equal(loud.out.silent, false);
});

t.test('--json output is the same with --quiet: a program still gets its done record', async (t) => {
  const q = capture(true, true);
  q.out.summary({ event: 'done', files: 1 }, 'pushed 1 files');
  t.same(q.stdout, ['{"event":"done","files":1}\n']);
  t.equal(q.out.silent, false);
});

t.test('verbosity -1 (--quiet) logs errors only', async (t) => {
  const lines: string[] = [];
  const quiet = createLogger('x', -1, (l) => lines.push(l));
  quiet.warn('skipping');
  quiet.error('broken');
  t.equal(lines.length, 1);
  t.match(lines[0], /ERROR x: broken/);
  const normal = createLogger('x', 0, (l) => lines.push(l));
  normal.warn('skipping');
  t.match(lines[1], /WARN x: skipping/);
});

t.test("a failure naming a peer's path: escaped on stderr, line by line; exact in the --json record", async (t) => {
  const c = capture(true, false);
  c.out.error('PROTOCOL', 'path "a\u202eb.txt" is announced twice\n  at x\x1b[2J', 1);
  t.same(c.stderr, ['clawpeer: path "a\\u202eb.txt" is announced twice\n  at x\\#033[2J\n']);
  t.equal(
    (JSON.parse(c.stdout[0] ?? '') as { message: string }).message,
    'path "a\u202eb.txt" is announced twice\n  at x\x1b[2J',
  );
});
