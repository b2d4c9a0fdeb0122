// bin/clawpeer.cjs picks what to run: the bundle when it is at least as new as the last tsc
// build, dist/src otherwise, and a clear message when nothing is built. Checked on a copy of the
// launcher beside stub entry points that say which one ran.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const realBin = fileURLToPath(new URL('../../../bin/', import.meta.url));

function layout(): { root: string; run: () => { code: number | null; out: string; err: string } } {
  const root = mkdtempSync(join(tmpdir(), 'clawpeer-launcher-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'bin'));
  for (const f of ['clawpeer.cjs', 'thread-pool.cjs', 'heap-growth.cjs'])
    copyFileSync(join(realBin, f), join(root, 'bin', f));
  const run = (): { code: number | null; out: string; err: string } => {
    const r = spawnSync(process.execPath, [join(root, 'bin', 'clawpeer.cjs'), 'x'], { encoding: 'utf8' });
    return { code: r.status, out: r.stdout, err: r.stderr };
  };
  return { root, run };
}

function stub(root: string, rel: string, name: string, mtimeS: number): void {
  const file = join(root, 'dist', ...rel.split('/'));
  mkdirSync(join(file, '..'), { recursive: true });
  writeFileSync(
    file,
    `export async function main(argv) { process.stdout.write('${name} ' + argv.join(' ')); return 3; }\n`,
  );
  utimesSync(file, mtimeS, mtimeS);
}

t.test('the bundle runs unless tsc built after it; without a build, a clear message', async (t) => {
  const { root, run } = layout();
  const none = run();
  t.equal(none.code, 1);
  t.match(none.err, /not built yet: run `npm run build`/);

  stub(root, 'src/cli/main.js', 'src', 1000);
  t.same(run(), { code: 3, out: 'src x', err: '' }, 'only dist/src: it runs, with the exit code main returns');

  stub(root, 'bundle/cli/main.js', 'bundle', 2000);
  writeFileSync(join(root, 'dist', '.tsbuildinfo'), '{}');
  utimesSync(join(root, 'dist', '.tsbuildinfo'), 1500, 1500);
  t.equal(run().out, 'bundle x', 'a bundle newer than the tsc build runs');

  utimesSync(join(root, 'dist', '.tsbuildinfo'), 2500, 2500);
  t.equal(run().out, 'src x', 'tsc rebuilt after the bundle: dist/src runs, never a stale bundle');

  rmSync(join(root, 'dist', '.tsbuildinfo'));
  t.equal(run().out, 'bundle x', 'no tsc record: the bundle');
});

t.test('a command whose promise never settles exits 1 loudly, never 0 (issue 34)', async (t) => {
  const { root } = layout();
  const file = join(root, 'dist', 'src', 'cli', 'main.js');
  mkdirSync(join(file, '..'), { recursive: true });
  // A wait nothing will ever end: the event loop drains with the command unfinished.
  writeFileSync(file, `export function main() { process.stdout.write('started\\n'); return new Promise(() => {}); }\n`);
  for (const json of [false, true]) {
    const r = spawnSync(process.execPath, [join(root, 'bin', 'clawpeer.cjs'), 'x', ...(json ? ['--json'] : [])], {
      encoding: 'utf8',
    });
    t.equal(r.status, 1, 'an internal error, not success');
    t.match(r.stderr, /clawpeer: internal error: the command stopped without finishing/);
    if (json)
      t.match(JSON.parse(r.stdout.trim().split('\n').at(-1) ?? '') as unknown, {
        event: 'error',
        code: 'INTERNAL',
        exitCode: 1,
      });
    else t.equal(r.stdout, 'started\n', 'no JSON without --json');
  }
  writeFileSync(file, `export async function main() { await new Promise((r) => setTimeout(r, 50)); return 0; }\n`);
  t.same(
    spawnSync(process.execPath, [join(root, 'bin', 'clawpeer.cjs'), 'x'], { encoding: 'utf8' }).status,
    0,
    'a command that finishes keeps its own code',
  );
});
