// A directory replaced by a file on one device (C) while two others (A, B) had a file in it that
// C never saw: each of A and B moves what is left of the directory aside when C's file lands.
// Both used to name the moved directory after themselves (`h.sync-unsynced-<time>-<A>` and
// `...-<B>`), so once synced every device held two copies of the same file. Now the name comes
// from the directory's revision, the same on every device: the two meet in one directory.
//
// A and B run listeners serving share `s`; C syncs with each by hand, and B with A.
import t from 'tap';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { initNode, jsonLines, runCli, startListener, tempHome } from '../e2e/cli-harness.js';

const work = await tempHome('aside-names');
const A = await initNode('asa');
const B = await initNode('asb');
const C = await initNode('asc');
const dir = { a: path.join(work, 'a'), b: path.join(work, 'b'), c: path.join(work, 'c') };
for (const d of Object.values(dir)) await mkdir(d);
const la = await startListener(A.home, ['--share', `s=${dir.a}`]);
const lb = await startListener(B.home, ['--share', `s=${dir.b}`]);
t.teardown(async () => {
  await la.stop('SIGKILL');
  await lb.stop('SIGKILL');
});
const pair = async (home: string, id: string, name: string, port?: number): Promise<void> => {
  const addr = port === undefined ? [] : ['--addr', `127.0.0.1:${port}`];
  const r = await runCli(['--home', home, 'pair', 'add', id, '--name', name, ...addr]);
  if (r.code !== 0) throw new Error(`pair add: ${r.stderr}`);
};
await pair(A.home, B.id, 'b', lb.port);
await pair(A.home, C.id, 'c');
await pair(B.home, A.id, 'a', la.port);
await pair(B.home, C.id, 'c');
await pair(C.home, A.id, 'a', la.port);
await pair(C.home, B.id, 'b', lb.port);

/** `clawpeer sync` of `home`'s folder `from` with `peer:s`; its done line. */
const sync = async (home: string, from: string, peer: string): Promise<Record<string, unknown>> => {
  const r = await runCli(['--home', home, 'sync', from, `${peer}:s`, '--json']);
  if (r.code !== 0) throw new Error(`sync ${from} ${peer}:s exited ${String(r.code)}: ${r.stderr}`);
  return jsonLines(r.stdout).at(-1) ?? {};
};
const asideIn = async (d: string): Promise<string[]> =>
  (await readdir(d)).filter((n) => n.startsWith('h.sync-unsynced-')).sort();

t.test('two devices moving the same directory aside pick one name', async (t) => {
  await mkdir(path.join(dir.c, 'h'));
  await writeFile(path.join(dir.c, 'h', 'x.txt'), 'x\n');
  await sync(C.home, dir.c, 'a');
  await sync(C.home, dir.c, 'b');

  // B adds a file in h and A gets it; C, not knowing, turns h into a file.
  await writeFile(path.join(dir.b, 'h', 'y.txt'), 'new on B\n');
  await sync(B.home, dir.b, 'a');
  t.equal(await readFile(path.join(dir.a, 'h', 'y.txt'), 'utf8'), 'new on B\n', 'A has B file');
  await rm(path.join(dir.c, 'h'), { recursive: true });
  await writeFile(path.join(dir.c, 'h'), 'h is a file now\n');

  // C's file lands on A and on B, each still holding y.txt in h.
  await sync(C.home, dir.c, 'a');
  await sync(C.home, dir.c, 'b');
  t.same(await asideIn(dir.a), await asideIn(dir.b), 'A and B moved h aside to the same name');

  // Everyone meets: one moved-aside directory, B's file in it once.
  for (let i = 0; i < 2; i++) {
    await sync(B.home, dir.b, 'a');
    await sync(C.home, dir.c, 'a');
    await sync(C.home, dir.c, 'b');
  }
  t.match(await sync(C.home, dir.c, 'a'), { inSync: true });
  t.match(await sync(C.home, dir.c, 'b'), { inSync: true });
  for (const [name, d] of Object.entries(dir)) {
    const aside = await asideIn(d);
    t.equal(aside.length, 1, `${name}: one moved-aside directory (${aside.join(', ')})`);
    t.equal(await readFile(path.join(d, 'h'), 'utf8'), 'h is a file now\n', `${name}: C's file at h`);
    const inside = aside[0] === undefined ? [] : (await readdir(path.join(d, aside[0]))).sort();
    t.same(inside, ['y.txt'], `${name}: B's file in it, once`);
  }
});
