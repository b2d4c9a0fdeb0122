// scripts/check-sizes.mjs, the size rules: this checkout keeps them, and each rule catches its
// violation in a small tree made for it (generated code under gen/ and the data files of
// DATA_FILES are exempt).
import t, { type Test } from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const CHECKER = fileURLToPath(new URL('../../../scripts/check-sizes.mjs', import.meta.url));

function check(srcDir?: string): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, [CHECKER, ...(srcDir === undefined ? [] : [srcDir])], { encoding: 'utf8' });
  return { status: r.status, out: r.stdout + r.stderr };
}

async function tree(tt: Test, files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(path.join(tmpdir(), 'sizes-'));
  tt.teardown(() => rm(root, { recursive: true, force: true }));
  for (const [rel, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, rel)), { recursive: true });
    await writeFile(path.join(root, rel), text);
  }
  return root;
}

t.test('this checkout keeps the size rules', async (t) => {
  const r = check();
  t.equal(r.status, 0, r.out);
});

t.test('a file over 600 lines is caught; 600 lines and generated code pass', async (t) => {
  const lines = (n: number): string => 'export const x = 1;\n'.repeat(n);
  const r = check(
    await tree(t, { 'store/big.ts': lines(601), 'store/ok.ts': lines(600), 'protocol/gen/huge.js': lines(5000) }),
  );
  t.equal(r.status, 1);
  t.match(r.out, 'store/big.ts has 601 lines, more than 600');
  t.notMatch(r.out, 'ok.ts');
  t.notMatch(r.out, 'huge.js');
});

t.test('a data file of DATA_FILES is exempt from the line rule, the same name elsewhere is not', async (t) => {
  const lines = (n: number): string => "'word',\n".repeat(n);
  const r = check(await tree(t, { 'pairing/code-word-list.ts': lines(1300), 'store/code-word-list.ts': lines(601) }));
  t.equal(r.status, 1);
  t.match(r.out, 'store/code-word-list.ts has 601 lines');
  t.notMatch(r.out, 'pairing/code-word-list.ts');
});

t.test('a folder over 25 entries is caught', async (t) => {
  const files: Record<string, string> = {};
  for (let i = 0; i < 26; i++) files[`store/f${i}.ts`] = 'export {};\n';
  for (let i = 0; i < 25; i++) files[`home/f${i}.ts`] = 'export {};\n';
  const r = check(await tree(t, files));
  t.equal(r.status, 1);
  t.match(r.out, 'store/ holds 26 entries, more than 25');
  t.notMatch(r.out, 'home/');
});
