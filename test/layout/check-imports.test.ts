// scripts/check-imports.mjs, the layout's rules (ARCHITECTURE.md "Rooms"): this checkout follows
// them, and each rule catches its violation in a small tree made for it.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const CHECKER = fileURLToPath(new URL('../../../scripts/check-imports.mjs', import.meta.url));

function check(srcDir?: string): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, [CHECKER, ...(srcDir === undefined ? [] : [srcDir])], { encoding: 'utf8' });
  return { status: r.status, out: r.stdout + r.stderr };
}

/** A src/ tree of the given files (path -> source text). */
async function tree(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(path.join(tmpdir(), 'layout-'));
  for (const [rel, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, rel)), { recursive: true });
    await writeFile(path.join(root, rel), text);
  }
  return root;
}

t.test('this checkout follows the layout rules', async (t) => {
  const r = check();
  t.equal(r.status, 0, r.out);
});

t.test('a core importing a driver folder is caught', async (t) => {
  const r = check(
    await tree({ 'sync/a.ts': "import { x } from '../store/b.js';\n", 'store/b.ts': 'export const x = 1;\n' }),
  );
  t.equal(r.status, 1);
  t.match(r.out, 'sync/a.ts imports store/b.ts: a core (sync/) may not import the driver folder store/');
});

t.test('a core doing file I/O is caught, a driver is not', async (t) => {
  const r = check(
    await tree({
      'chunking/a.ts': "import { readFileSync } from 'node:fs';\n",
      'store/b.ts': "import { readFile } from 'node:fs/promises';\n",
    }),
  );
  t.equal(r.status, 1);
  t.match(r.out, 'chunking/a.ts imports node:fs: a core (chunking/) does no I/O');
  t.notMatch(r.out, 'store/b.ts');
});

t.test('only the CLI imports the CLI', async (t) => {
  const r = check(
    await tree({
      'cli/out.ts': 'export const y = 1;\n',
      'listener/a.ts': "const m = await import('../cli/out.js');\n",
    }),
  );
  t.equal(r.status, 1);
  t.match(r.out, 'listener/a.ts imports cli/out.ts: only src/cli/ may import src/cli/');
});

t.test("the CLI imports facades, not a room's inner modules", async (t) => {
  const r = check(
    await tree({
      'cli/commands/x.ts':
        "import { pushToPeer } from '../../push-pull/transfer-with-peer.js';\nimport { push } from '../../push-pull/transfer-client.js';\nimport { ClawpeerError } from '../../errors.js';\nimport { run } from '../../benchkit/runner.js';\n",
      'push-pull/transfer-with-peer.ts': 'export const pushToPeer = 1;\n',
      'push-pull/transfer-client.ts': 'export const push = 1;\n',
      'errors.ts': 'export const ClawpeerError = 1;\n',
      'benchkit/runner.ts': 'export const run = 1;\n',
    }),
  );
  t.equal(r.status, 1);
  t.match(r.out, 'cli/commands/x.ts imports push-pull/transfer-client.ts: the CLI imports only facades');
  t.notMatch(r.out, 'transfer-with-peer.ts:', 'a facade is allowed');
  t.notMatch(r.out, 'errors.ts:', 'the shared modules are allowed');
  t.notMatch(r.out, 'benchkit/runner.ts:', 'a front folder is allowed');
});

t.test('cycles between files and between folders are caught, with the imports that close them', async (t) => {
  const files = check(
    await tree({
      'store/a.ts': "import type { B } from './b.js';\nexport type A = 1;\n",
      'store/b.ts': "import type { A } from './a.js';\nexport type B = 2;\n",
    }),
  );
  t.equal(files.status, 1);
  t.match(files.out, /import cycle between files: store\/(a|b)\.ts -> store\/(b|a)\.ts -> store\/\1\.ts/);
  const folders = check(
    await tree({
      'home/a.ts': "import { b } from '../session/b.js';\nexport const a = 1;\n",
      'session/b.ts': 'export const b = 2;\n',
      'session/c.ts': "import { a } from '../home/a.js';\n",
    }),
  );
  t.equal(folders.status, 1);
  t.match(folders.out, /import cycle between folders: (home -> session -> home|session -> home -> session)/);
  t.match(folders.out, 'session/c.ts -> home/a.ts');
});

t.test('comments and strings that look like imports are not imports', async (t) => {
  const r = check(
    await tree({
      'sync/a.ts': "// see import { x } from '../store/b.js'\n/* import '../store/b.js' */\nexport const s = 'ok';\n",
      'store/b.ts': 'export const x = 1;\n',
    }),
  );
  t.equal(r.status, 0, r.out);
});
