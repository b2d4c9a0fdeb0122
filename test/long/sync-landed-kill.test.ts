// A sync client SIGKILLed mid-transfer, after some of the peer's files were published: the next
// scan records them as the peer's revisions (the note the apply step wrote before the fetch,
// folder-sync/pending-landings.ts), not as this node's creations. Before, `log` showed each
// landed file "created by this node", the next sync sent those revisions back, and the
// directory the publisher made got a revision by this node that outranked the peer's.
import t from 'tap';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { RevisionStore } from '../../src/store/revision-store.js';
import { isTempFileName } from '../../src/store/internal-names.js';
import { doneEvent, exitWithin, seededBytes, sleep, spawnCli, startRig } from '../fault/fault-harness.js';

const FILES = 24;

t.test('files a SIGKILLed sync published are recorded as the peer’s; the next sync sends nothing back', async (t) => {
  // The listener sends slowly, so the kill lands after the first files, well before the last.
  const rig = await startRig('landed-kill', { listenEnv: { CLAWPEER_TEST_DELAY_PER_CHUNK_MS: '40' } });
  t.teardown(() => rig.close());
  await mkdir(path.join(rig.share, 'sub'), { recursive: true });
  for (let i = 0; i < FILES; i++)
    await writeFile(path.join(rig.share, 'sub', `f${String(i).padStart(2, '0')}.bin`), seededBytes(100 + i, 256 << 10));
  const mine = path.join(rig.work, 'mine');
  const landedNow = async (): Promise<string[]> =>
    (await readdir(path.join(mine, 'sub')).catch(() => [] as string[])).filter((n) => !isTempFileName(n));

  const run = spawnCli(rig.b.home, ['sync', mine, 'alice:inbox']);
  for (let waited = 0; (await landedNow()).length === 0 && waited < 60_000; waited += 20) await sleep(20);
  await run.kill('SIGKILL');
  await exitWithin(run, 10_000, 'the killed sync');
  const landed = await landedNow();
  t.ok(landed.length >= 1, `${landed.length} files landed before the kill`);
  t.ok(landed.length < FILES, 'the kill came before the last file');

  const second = await rig.cli(['sync', mine, 'alice:inbox', '--json']);
  t.equal(second.code, 0, second.stderr);
  const done = doneEvent(second.stdout);
  t.match(done, { inSync: true });
  t.equal(done['revisionsSent'], 0, 'the second sync sends nothing back');

  const store = await RevisionStore.open(mine, { nodeId: rig.b.id });
  t.teardown(() => store.close());
  for (const name of landed) {
    const origins = store.history(`sub/${name}`).map((e) => e.revision.origin);
    t.same(origins, [rig.a.id], `sub/${name}: only the peer's revision`);
  }
  t.same(
    store.history('sub').map((e) => e.revision.origin),
    [rig.a.id],
    "the directory the publisher made has only the peer's revision",
  );
});
