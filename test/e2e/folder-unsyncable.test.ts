// Entries a shared folder cannot sync (a name with a newline or an ESC: no path may hold a
// control character) are named, as Syncthing lists a folder's failed items: `clawpeer status`
// shows them on the folder, and the listener logs each once, when a scan first finds it, not at
// every scan. Before, a receive-only copy named them nowhere, a two-way copy's status said
// `in-sync` once the peer's own sync had run, and every scan logged each again. They are still
// not synced.
//
// A is two-way, B receive-only (each with the other).
import t from 'tap';
import { readdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { runCli } from './cli-harness.js';
import { addReceiveOnlyDocs, docsOn, hasText, startFolderNodes, until, type FolderNode } from './folder-rig.js';

const nodes = await startFolderNodes(['a', 'b']);
t.teardown(async () => {
  for (const n of nodes) await n.listener.stop('SIGKILL');
});
const [A, B] = nodes as [FolderNode, FolderNode];

type Group = { reason: string; count: number; paths: string[] };
const unsyncableOn = async (n: FolderNode): Promise<Group[] | undefined> =>
  ((await docsOn(n)) as { unsyncable?: Group[] } | undefined)?.unsyncable;
const listed = (n: FolderNode, want: Group[]) => async (): Promise<boolean> =>
  JSON.stringify(await unsyncableOn(n)) === JSON.stringify(want);
const CONTROL = 'name has a control character';
/** The listener's log lines that name `escaped`, a path as logs and status show it. */
const logged = (n: FolderNode, escaped: string): string[] =>
  n.listener
    .stderr()
    .split('\n')
    .filter((l) => l.includes(escaped));

t.test('status names the paths a folder cannot sync; the listener logs each once', async (t) => {
  await writeFile(path.join(A.dir, 'plain.txt'), 'v1\n');
  await addReceiveOnlyDocs(A, B);
  await until(nodes, 'plain.txt on B', hasText(path.join(B.dir, 'plain.txt'), 'v1\n'), 20_000);

  await writeFile(path.join(B.dir, 'b\nc'), 'a newline, on B\n');
  await writeFile(path.join(B.dir, 'esc\x1b[31mred'), 'an ESC, on B\n');
  await writeFile(path.join(A.dir, 'a\nb'), 'a newline, on A\n');
  const onB = [{ reason: CONTROL, count: 2, paths: ['b\\#012c', 'esc\\#033[31mred'] }];
  await until(nodes, "B's status naming its two", listed(B, onB), 20_000);
  await until(
    nodes,
    "A's status naming its one",
    listed(A, [{ reason: CONTROL, count: 1, paths: ['a\\#012b'] }]),
    20_000,
  );
  t.pass('each side names its own in status --json');

  const text = await runCli(['--home', B.home, 'status']);
  t.equal(text.code, 0);
  t.match(
    text.stdout,
    /^ {2}2 paths cannot be synced: name has a control character \(b\\#012c, esc\\#033\[31mred\)$/m,
    'the text names them, escaped',
  );
  t.notOk(text.stdout.includes('\x1b'), 'no raw ESC reaches the terminal');

  // More syncs, each with a full scan that finds them again: no more log lines.
  for (const v of ['v2\n', 'v3\n']) {
    await writeFile(path.join(A.dir, 'plain.txt'), v);
    await until(nodes, `plain.txt ${v.trim()} on B`, hasText(path.join(B.dir, 'plain.txt'), v), 20_000);
  }
  t.equal(logged(B, 'b\\#012c').length, 1, "B's listener logged its entry once");
  t.equal(logged(A, 'a\\#012b').length, 1, "A's listener logged its entry once");
  t.match(logged(B, 'b\\#012c')[0], /WARN .*entries that cannot be synced/);

  // Still not synced, either way.
  t.same((await readdir(A.dir)).filter((n) => n !== '.clawpeer').sort(), ['a\nb', 'plain.txt']);
  t.same((await readdir(B.dir)).filter((n) => n !== '.clawpeer').sort(), ['b\nc', 'esc\x1b[31mred', 'plain.txt']);

  // Renamed, it syncs as any file (B keeps it: receive-only), and status no longer names it.
  await rename(path.join(A.dir, 'a\nb'), path.join(A.dir, 'a-b'));
  await until(nodes, 'a-b on B', hasText(path.join(B.dir, 'a-b'), 'a newline, on A\n'), 20_000);
  await until(nodes, "A's status naming none", async () => (await unsyncableOn(A)) === undefined, 20_000);
  t.pass('a renamed entry syncs and is no longer named');
});
