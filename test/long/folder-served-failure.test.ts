// A folder whose disk turned read-only on its node: the syncs its peer runs there fail, and the
// peer's status says so at once. The node's own status said `in-sync` until its own next sync
// (the interval; an hour here), the failed served syncs only in its log. Now a served sync that
// fails on this side puts the pair in `error` with why at once (folder-service.ts
// syncServeFailed), and the node's own schedule retries it with backoff.
//
// A's folder is made read-only by a read-only bind mount of it onto itself (the listener's open
// files stay writable through the mount below, as a disk remounted read-only under a running
// process would not; what it opens anew is refused): needs root (mount); skipped otherwise.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { allInSync, foldersOf, startFolderNodes, until, type FolderNode } from '../e2e/folder-rig.js';
import { runCli } from '../e2e/cli-harness.js';

function mount(args: string[]): string | undefined {
  try {
    execFileSync('mount', args, { stdio: 'pipe' });
    return undefined;
  } catch (err) {
    return ((err as { stderr?: Buffer }).stderr?.toString() ?? (err as Error).message).trim();
  }
}

// A's idle timeout is short: a peer killed mid-sync is found gone in ~3 s. B sends at 1 MiB/s,
// so its big file is mid-transfer for seconds.
const nodes = await startFolderNodes(['a', 'b'], { a: ['--idle-timeout', '3'], b: ['--bwlimit', '1MiB'] });
const [A, B] = nodes as [FolderNode, FolderNode];
let bound = false;
t.teardown(async () => {
  for (const n of nodes) await n.listener.stop('SIGKILL');
  if (bound) execFileSync('umount', ['-l', A.dir], { stdio: 'pipe' });
});
// Can this process mount at all (a bind of a scratch directory onto itself)?
const refused = mount(['--bind', B.dir, B.dir]) ?? (execFileSync('umount', [B.dir]), undefined);

if (refused !== undefined) {
  t.plan(0, `cannot mount a tmpfs here (needs root / CAP_SYS_ADMIN): ${refused}`);
} else {
  t.test("a peer's sync that fails on the read-only disk shows in this node's status at once", async (t) => {
    // An hour's interval: only the failed served sync can tell A's schedule before then.
    for (const [n, other] of [
      [A, B],
      [B, A],
    ] as const) {
      const r = await runCli([
        '--home',
        n.home,
        'folder',
        'add',
        n.dir,
        '--id',
        'docs',
        '--with',
        other.name,
        '--interval',
        '3600',
      ]);
      t.equal(r.code, 0, `folder add on ${n.name}; stderr: ${r.stderr}`);
    }
    await writeFile(path.join(B.dir, 'first.txt'), 'first\n');
    await until(
      nodes,
      'first.txt on A, docs in sync',
      async () =>
        (await readFile(path.join(A.dir, 'first.txt'), 'utf8').catch(() => '')) === 'first\n' &&
        (await allInSync(nodes, 'docs')),
      20_000,
    );

    const bind = mount(['--bind', A.dir, A.dir]);
    bound = bind === undefined;
    t.equal(bind ?? mount(['-o', 'remount,ro,bind', A.dir]), undefined, 'the folder is read-only now');
    await writeFile(path.join(B.dir, 'second.txt'), 'second\n'); // B's service syncs it to A: refused there
    const pairOnA = async (): Promise<{ state: string; error?: string } | undefined> =>
      (await foldersOf(A)).find((f) => f.id === 'docs')?.peers.find((p) => p.peer === B.id);
    let seen: { state: string; error?: string } | undefined;
    await until(
      nodes,
      "A's status saying error with B",
      async () => {
        const p = await pairOnA();
        if (p?.state === 'error') seen = p;
        return seen !== undefined;
      },
      20_000,
    );
    t.match(seen?.error, /read-only/, `A names the cause: ${seen?.error ?? ''}`);

    execFileSync('umount', ['-l', A.dir], { stdio: 'pipe' });
    bound = false;
    await until(
      nodes,
      'second.txt on A once it is writable, docs in sync (the retries)',
      async () =>
        (await readFile(path.join(A.dir, 'second.txt'), 'utf8').catch(() => '')) === 'second\n' &&
        (await allInSync(nodes, 'docs')),
      30_000,
    );
    t.pass('in sync again once the folder is writable');
  });

  t.test("a peer gone mid-sync leaves this node's pair as it was", async (t) => {
    await writeFile(path.join(B.dir, 'big.bin'), randomBytes(6 << 20));
    const pairOnA = async (): Promise<{ state: string; error?: string } | undefined> =>
      (await foldersOf(A)).find((f) => f.id === 'docs')?.peers.find((p) => p.peer === B.id);
    await until(nodes, "B's sync of big.bin running on A", async () => (await pairOnA())?.state === 'syncing', 20_000);
    await B.listener.stop('SIGKILL');
    // The sync fails once A finds the connection gone (its idle timeout). Which side ran it is a
    // race (B's service pushing, or A's own pulling after B's change notice): a served sync that
    // failed leaves the pair in-sync, A's own one finds the peer offline, `waiting`; never an error.
    await until(nodes, 'the sync on A over', async () => (await pairOnA())?.state !== 'syncing', 30_000);
    const after = await pairOnA();
    t.ok(
      after?.state === 'in-sync' || after?.state === 'waiting',
      `in-sync or waiting: the peer went away, nothing is wrong here (${after?.state ?? ''}: ${after?.error ?? ''})`,
    );
    if (after?.state === 'waiting') t.match(after.error, /connection|closed|timed out/i, 'waiting names the lost peer');
    else t.equal(after?.error, undefined, 'no error');
  });
}
