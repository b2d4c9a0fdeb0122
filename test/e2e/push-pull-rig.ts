// The rig of the push/pull end-to-end files: three homes (alice listens, bob and carol are
// paired with her) and alice's shares: inbox, a read-only one, one only carol may use and one
// that refuses --delete. Each test file starts its own (files run in parallel).
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { initNode, jsonLines, pairAdd, startListener, type RunningListener } from './cli-harness.js';

export interface PushPullRig {
  readonly a: { home: string; id: string };
  readonly b: { home: string; id: string };
  readonly c: { home: string; id: string };
  readonly work: string;
  readonly roShare: string;
  readonly privShare: string;
  readonly keepShare: string;
  /** The listener's --share/--allow arguments (to start it again after a kill). */
  readonly shareArgs: readonly string[];
  /** Alice's listener; a test that kills it starts another here. */
  listener: RunningListener;
  /** Pairs bob with alice at the listener's current port. */
  readonly pairAlice: () => Promise<void>;
  /** The closing `done` record of a --json transfer. */
  readonly done: (stdout: string) => Record<string, unknown>;
}

export async function startPushPullRig(): Promise<PushPullRig> {
  const a = await initNode('pa');
  const b = await initNode('pb');
  const work = await mkdtemp(path.join(tmpdir(), 'clawpeer-pp-'));
  const roShare = path.join(work, 'ro');
  await mkdir(roShare);
  await writeFile(path.join(roShare, 'readme.txt'), 'read me\n');
  const c = await initNode('pc');
  const privShare = path.join(work, 'private');
  await pairAdd(a.home, b.id, 'bob');
  await pairAdd(a.home, c.id, 'carol');
  const keepShare = path.join(work, 'keep');
  const shareArgs = [
    '--share',
    `inbox=${path.join(work, 'inbox')}`,
    '--share',
    `ro=${roShare}:ro`,
    '--share',
    `private=${privShare}`,
    '--allow',
    'private=carol',
    '--share',
    `keep=${keepShare}:nodelete`,
  ];
  const rig: PushPullRig = {
    a,
    b,
    c,
    work,
    roShare,
    privShare,
    keepShare,
    shareArgs,
    listener: await startListener(a.home, shareArgs),
    pairAlice: async () => {
      await pairAdd(b.home, a.id, 'alice', `127.0.0.1:${rig.listener.port}`);
    },
    done: (stdout) => {
      const last = jsonLines(stdout).at(-1);
      if (last?.['event'] !== 'done') throw new Error(`no done event in ${stdout}`);
      return last;
    },
  };
  await rig.pairAlice();
  return rig;
}
