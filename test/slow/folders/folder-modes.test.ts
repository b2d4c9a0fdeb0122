// Folder modes across three listeners: A send-only, B two-way, C receive-only. A's changes reach
// both; B's reach C but never A; C's local edits stay on C. Each side's refusal narrows what
// the other side's syncs move (folders/folder-service.ts), so nothing fails for good.
import t from 'tap';
import { stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { runCli } from '../../e2e/cli-harness.js';
import { allInSync, hasText, startFolderNodes, until } from '../../e2e/folder-rig.js';

const nodes = await startFolderNodes(['a', 'b', 'c']);
t.teardown(async () => {
  for (const n of nodes) await n.listener.stop('SIGKILL');
});
const [A, B, C] = nodes as [(typeof nodes)[number], (typeof nodes)[number], (typeof nodes)[number]];
const wait = (what: string, check: () => Promise<boolean>): Promise<number> => until(nodes, what, check, 20_000);
const exists = (p: string): Promise<boolean> =>
  stat(p).then(
    () => true,
    () => false,
  );

t.test('send-only, two-way and receive-only copies of one folder', async (t) => {
  const modes = new Map([
    [A, 'send-only'],
    [B, 'two-way'],
    [C, 'receive-only'],
  ]);
  for (const n of nodes) {
    const others = nodes
      .filter((o) => o !== n)
      .map((o) => o.name)
      .join(',');
    const r = await runCli([
      '--home',
      n.home,
      'folder',
      'add',
      n.dir,
      '--id',
      'docs',
      '--with',
      others,
      '--mode',
      modes.get(n) ?? 'two-way',
    ]);
    t.equal(r.code, 0, r.stderr);
  }
  await writeFile(path.join(A.dir, 'from-a.txt'), 'A\n');
  await wait(
    "A's file on B and C",
    async () =>
      (await hasText(path.join(B.dir, 'from-a.txt'), 'A\n')()) && hasText(path.join(C.dir, 'from-a.txt'), 'A\n')(),
  );
  await writeFile(path.join(B.dir, 'from-b.txt'), 'B\n');
  await writeFile(path.join(C.dir, 'from-c.txt'), 'C\n');
  await wait("B's file on C", hasText(path.join(C.dir, 'from-b.txt'), 'B\n'));
  await wait('every pair in sync', () => allInSync(nodes, 'docs'));
  t.notOk(await exists(path.join(A.dir, 'from-b.txt')), 'the send-only copy takes nothing');
  t.notOk(await exists(path.join(A.dir, 'from-c.txt')), 'the receive-only copy sends nothing to A');
  t.notOk(await exists(path.join(B.dir, 'from-c.txt')), 'nor to B');
  t.ok(await hasText(path.join(C.dir, 'from-c.txt'), 'C\n')(), 'its local edit stays');
});
