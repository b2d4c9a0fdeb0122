// Three listeners on loopback share one folder, each set up with `clawpeer folder add` while it
// runs: an edit on one reaches the other two with no command run by hand, a delete travels,
// a paused folder is left alone until resumed, status says in-sync, `folder log` tells what
// each sync changed, and a listener killed with SIGKILL catches up once restarted.
import t from 'tap';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { initNode, jsonLines, runCli, startListener, tempHome, type RunningListener } from './cli-harness.js';

interface Node {
  readonly name: string;
  readonly home: string;
  readonly id: string;
  readonly dir: string;
  listener: RunningListener;
}

const work = await tempHome('folders');
const names = ['a', 'b', 'c'] as const;
const nodes: Node[] = [];
for (const name of names) {
  const { home, id } = await initNode(`f${name}`);
  // No LAN discovery: peers are reached at the addresses pinned below.
  await writeFile(path.join(home, 'config.json'), JSON.stringify({ lanDiscovery: false }));
  const dir = path.join(work, name);
  await mkdir(dir);
  const listener = await startListener(home, ['-v']);
  nodes.push({ name, home, id, dir, listener });
}
t.teardown(async () => {
  for (const n of nodes) await n.listener.stop('SIGKILL');
});
const [A, B, C] = nodes as [Node, Node, Node];
for (const n of nodes) {
  for (const other of nodes) {
    if (other === n) continue;
    const r = await runCli(['--home', n.home, 'pair', 'add', other.id, '--name', other.name, '--addr', `127.0.0.1:${other.listener.port}`]);
    if (r.code !== 0) throw new Error(`pair add failed: ${r.stderr}`);
  }
}

const exists = (p: string): Promise<boolean> => stat(p).then(() => true, () => false);
async function until(what: string, check: () => Promise<boolean>, timeoutMs = 10_000): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    if (await check()) return Date.now() - started;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n${nodes.map((n) => `--- ${n.name}\n${n.listener.stderr().slice(-4000)}`).join('\n')}`);
}
const hasText = (p: string, text: string) => async (): Promise<boolean> => (await readFile(p, 'utf8').catch(() => undefined)) === text;
async function status(n: Node): Promise<Record<string, unknown>> {
  const r = await runCli(['--home', n.home, 'status', '--json']);
  if (r.code !== 0) throw new Error(`status failed: ${r.stderr}`);
  return jsonLines(r.stdout)[0] ?? {};
}
type FolderRecord = { id: string; peers: { peer: string; state: string; lastSyncAt?: number }[] };
const foldersOf = async (n: Node): Promise<FolderRecord[]> => ((await status(n))['folders'] ?? []) as FolderRecord[];

t.test('folder add while the listeners run; an edit on one reaches the other two by itself', async (t) => {
  await writeFile(path.join(A.dir, 'before.txt'), 'there before\n');
  for (const n of nodes) {
    const others = nodes.filter((o) => o !== n).map((o) => o.name).join(',');
    const r = await runCli(['--home', n.home, 'folder', 'add', n.dir, '--id', 'docs', '--with', others, '--json']);
    t.equal(r.code, 0, r.stderr);
    t.match(jsonLines(r.stdout)[0], { event: 'folder-added', id: 'docs', mode: 'two-way', versioning: 'keep-last:10' });
  }
  const listed = jsonLines((await runCli(['--home', A.home, 'folder', 'list', '--json'])).stdout);
  t.match(listed, [{ event: 'folder', id: 'docs', with: ['b', 'c'] }]);
  await until('the first file everywhere', async () => (await hasText(path.join(B.dir, 'before.txt'), 'there before\n')()) && hasText(path.join(C.dir, 'before.txt'), 'there before\n')());
  await until('A in sync with both', async () => (await foldersOf(A))[0]?.peers.every((p) => p.state === 'in-sync') === true);

  const saved = Date.now();
  await writeFile(path.join(A.dir, 'note.txt'), 'written on A\n');
  await until('the edit on B and C', async () => (await hasText(path.join(B.dir, 'note.txt'), 'written on A\n')()) && hasText(path.join(C.dir, 'note.txt'), 'written on A\n')());
  t.comment(`save on A to arrival on B and C: ${Date.now() - saved} ms (the watcher's quiet time is 300 ms)`);

  await rm(path.join(B.dir, 'before.txt'));
  await until('the delete on A and C', async () => !(await exists(path.join(A.dir, 'before.txt'))) && !(await exists(path.join(C.dir, 'before.txt'))));
  t.pass('a delete on B propagates');
});

async function allInSync(): Promise<boolean> {
  for (const n of nodes) {
    const f = (await foldersOf(n)).find((x) => x.id === 'docs');
    if (f === undefined || f.peers.length !== 2 || !f.peers.every((p) => p.state === 'in-sync' && typeof p.lastSyncAt === 'number')) return false;
  }
  return true;
}

t.test('status says in-sync with the last sync time; folder log lists what the syncs changed', async (t) => {
  await until('every pair in sync', allInSync);
  const human = await runCli(['--home', A.home, 'status']);
  t.match(human.stdout, /^folder docs \(two-way\) /m);
  t.match(human.stdout, /^ {2}b: in-sync, last sync .* ago/m);
  const log = jsonLines((await runCli(['--home', A.home, 'folder', 'log', 'docs', '--json'])).stdout);
  t.ok(log.length >= 2, 'entries for the syncs that moved something');
  t.ok(log.some((e) => e['event'] === 'folder-sync' && e['folder'] === 'docs' && typeof e['sent'] === 'number' && (e['sent'] as number) > 0), 'A sent its files');
  t.ok(log.some((e) => (e['received'] as number) > 0), 'A received the delete');
});

t.test('a paused folder is neither synced nor served until resumed', async (t) => {
  const r = await runCli(['--home', C.home, 'folder', 'pause', 'docs']);
  t.equal(r.code, 0, r.stderr);
  await until('C paused', async () => (await foldersOf(C))[0]?.peers.every((p) => p.state === 'paused') === true);
  await writeFile(path.join(A.dir, 'while-paused.txt'), 'C is paused\n');
  await until('the file on B', hasText(path.join(B.dir, 'while-paused.txt'), 'C is paused\n'));
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  t.notOk(await exists(path.join(C.dir, 'while-paused.txt')), 'not on the paused node');
  t.equal((await runCli(['--home', C.home, 'folder', 'resume', 'docs'])).code, 0);
  await until('the file on C once resumed', hasText(path.join(C.dir, 'while-paused.txt'), 'C is paused\n'));
  t.pass('resumed: it catches up');
});

t.test('a listener killed with SIGKILL restarts and catches up; the others wait for it meanwhile', async (t) => {
  // Quiet first: a sync running toward B when it dies holds its folder until the transport's idle timeout (15 s).
  await until('every pair in sync', allInSync);
  const port = B.listener.port;
  await B.listener.stop('SIGKILL');
  await writeFile(path.join(A.dir, 'while-down.txt'), 'B was down\n');
  await until('the file on C', hasText(path.join(C.dir, 'while-down.txt'), 'B was down\n'));
  await until('A waiting for B', async () => (await foldersOf(A))[0]?.peers.find((p) => p.peer === B.id)?.state === 'waiting');
  B.listener = await startListener(B.home, ['-v'], { port });
  await until('the file on B after its restart', hasText(path.join(B.dir, 'while-down.txt'), 'B was down\n'));
  await until('A in sync with B again', async () => (await foldersOf(A))[0]?.peers.find((p) => p.peer === B.id)?.state === 'in-sync');
  t.pass('caught up');
});
