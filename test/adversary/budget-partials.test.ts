// A refused push leaves nothing behind, and partials are budgeted (issue 27, item 5). The
// listener used to stage every file of a push (a data file truncated to the declared size plus
// a journal, each fsynced) before checking free space or the files in the way, and kept those
// partials for 7 days: 2,000 x 1 GiB refused for space left 4,002 files. Hostile pushes here
// speak the real protocol with lying sizes; the listener's disk check sees 1 GiB free
// (CLAWPEER_TEST_FREE_BYTES). Then, in process: resumable partials per peer and per share are
// capped (the rest stage as temp files, which a failed transfer removes).
import t from 'tap';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { mkdtemp, statfs } from 'node:fs/promises';
import { MIN_FREE_FRACTION } from '../../src/store/free-space.js';
import { tmpdir } from 'node:os';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { ClawpeerError } from '../../src/errors.js';
import { silentLogger } from '../../src/logger.js';
import { attachBudget, DEFAULT_BUDGETS, ListenerBudgets } from '../../src/session/listener-budgets.js';
import type { DataStreamRouter } from '../../src/session/data-stream-router.js';
import type { PeerSession } from '../../src/session/session.js';
import { expectMessage, manifestMessages } from '../../src/exchange/transfer-control.js';
import { TransferReceiver } from '../../src/exchange/transfer-receive.js';
import { withTimeout } from '../../src/support/timeouts.js';
import type { ManifestEntry } from '../../src/protocol/messages.js';
import { startRig } from '../fault/fault-harness.js';
import { dialAs, fileEntry, pingOk } from './budget-kit.js';

// What the listener's disk check sees free: the 1% it keeps free, plus 1 GiB to write.
const fs = await statfs(tmpdir());
const FREE = Math.ceil(fs.blocks * fs.bsize * MIN_FREE_FRACTION) + 2 ** 30;
const rig = await startRig('budget-pt', { listenEnv: { CLAWPEER_TEST_FREE_BYTES: String(FREE) } });
t.teardown(() => rig.close());

/** Every path under `dir`, relative (directories end in /). */
async function tree(dir: string, rel = ''): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(path.join(dir, rel), { withFileTypes: true }).catch(() => [])) {
    const p = rel === '' ? e.name : `${rel}/${e.name}`;
    if (e.isDirectory()) out.push(`${p}/`, ...(await tree(dir, p)));
    else out.push(p);
  }
  return out;
}

/** Files a push left in the share: anything but directories (partials, journals, temp files, published files). */
async function leftFiles(): Promise<string[]> {
  return (await tree(rig.share)).filter(
    (p) => !p.endsWith('/') && !p.startsWith('.clawpeer/index') && p !== 'existing/zz',
  );
}

/** A push of `entries` up to the listener's answer to the manifest (its Error, or the Want). */
async function pushManifest(entries: readonly ManifestEntry[], label: string): Promise<unknown> {
  const session = await dialAs(rig.b.home, rig.listener.port);
  try {
    const transferId = session.allocateTransferId();
    await session.control.send({
      type: 'transfer-request',
      transferId,
      direction: 'push',
      share: 'inbox',
      path: label,
      force: false,
      streams: 1,
      window: 8,
    });
    await expectMessage(session, 'transfer-accept', transferId, 10_000);
    await session.control.sendAll(manifestMessages(session, transferId, entries));
    return await withTimeout(session.control.receive(), 60_000, 'the listener answering the manifest').then(
      (m) => m,
      (e: unknown) => e,
    );
  } finally {
    await session.close().catch(() => undefined);
  }
}

t.test('a push refused for space stages nothing: no partial, no journal, no temp file', async (t) => {
  // 40 x 64 MiB (in 1 MiB chunks) = 2.5 GiB against 1 GiB free.
  const entries = Array.from({ length: 40 }, (_, i) => fileEntry(`f${i}`, 64, 1 << 20));
  const answer = await pushManifest(entries, 'space');
  t.ok(answer instanceof ClawpeerError, `refused: ${String(answer)}`);
  t.match(answer, { code: 'IO', message: /not enough disk space in share inbox/ });
  t.same(await leftFiles(), [], 'the share holds no file of it');
  t.ok(await pingOk(rig.b.home, rig.listener.port), 'the listener still answers a ping');
});

t.test('a push refused after staging (a different file in the way) removes the partials it created', async (t) => {
  await mkdir(path.join(rig.share, 'existing'), { recursive: true });
  await writeFile(path.join(rig.share, 'existing', 'zz'), 'a different file, not to be replaced without --force');
  // Ten 2 MiB files stage as partials, then the last entry hits the existing file: FILE_EXISTS.
  const entries = [
    ...Array.from({ length: 10 }, (_, i) => fileEntry(`f${i}`, 2, 1 << 20)),
    fileEntry('zz', 2, 1 << 20),
  ];
  const answer = await pushManifest(entries, 'existing');
  t.match(answer, { code: 'FILE_EXISTS' }, `refused: ${String(answer)}`);
  t.same(await leftFiles(), [], 'the share holds no partial of it');
});

t.test('resumable partials are capped per peer and per share; the rest stage as temp files', async (t) => {
  const root = await mkdtemp(path.join(tmpdir(), 'clawpeer-budget-partials-'));
  const budgets = new ListenerBudgets({ ...DEFAULT_BUDGETS, peerPartials: 2, sharePartials: 3 });
  const chunking = DEFAULT_CHUNKING;
  const receiverFor = (peer: string, names: string[]): { receiver: TransferReceiver; release: () => void } => {
    // eslint-disable-next-line @typescript-eslint/no-unsafe-class-instance-assignment -- a stub: only the budget is read
    const session = {} as PeerSession; // prepare() reads only the budget attached to it
    // eslint-disable-next-line @typescript-eslint/no-unsafe-class-instance-assignment -- a stub: prepare() opens no stream
    const router = {} as DataStreamRouter;
    const budget = budgets.session(peer);
    attachBudget(session, budget);
    const entries = names.map((n) => fileEntry(n, Math.ceil((1 << 20) / chunking.maxBytes), chunking.maxBytes)); // resumable: at least 1 MiB
    const receiver = new TransferReceiver({
      session,
      router,
      transferId: 1,
      entries,
      chunking,
      signal: new AbortController().signal,
      log: silentLogger,
      destination: { root, readOnly: false, basePath: '' },
      force: false,
    });
    return { receiver, release: () => budget.release() };
  };
  const partials = async (): Promise<number> =>
    (await readdir(path.join(root, '.clawpeer', 'partial'))).filter((n) => n.endsWith('.journal')).length;

  const first = receiverFor('peer-a', ['a1', 'a2', 'a3']);
  await first.receiver.prepare();
  t.equal(await partials(), 2, 'one peer stages at most 2 partials at once (peerPartials)');
  await first.receiver.abort(); // a failed transfer: its partials stay for a rerun, its temp file goes
  first.release();
  t.equal(await partials(), 2, 'the partials of a failed transfer stay, to resume');
  t.same(
    (await tree(root)).filter((p) => p.includes('.clawpeer-tmp-')),
    [],
    'the temp file beyond the cap is gone',
  );

  const second = receiverFor('peer-b', ['b1', 'b2']);
  await second.receiver.prepare();
  t.equal(await partials(), 3, 'another peer gets only what the share has room for (sharePartials 3)');
  await second.receiver.abort();
  second.release();
});
