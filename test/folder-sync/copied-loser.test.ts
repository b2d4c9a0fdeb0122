// A conflict loser that some node kept as a conflict copy competes for its path no more. It
// used to: a deletion that saw the winner but not the loser made the loser (an edit) the head
// again, and when its copy had been deleted since, its bytes were nowhere: two neighbours asked
// each other for them at every sync and never converged (convergence seeds 3153, 10097, 20042).
import t, { type Test } from 'tap';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { applyRemote } from '../../src/folder-sync/sync-apply.js';
import { conflictCopyRevision } from '../../src/folder-sync/sync-plan.js';
import type { FetchRequest } from '../../src/folder-sync/sync-exchange.js';
import { silentLogger } from '../../src/logger.js';
import { RevisionStore } from '../../src/store/revision-store.js';
import { conflictPath, pickHead } from '../../src/sync/conflict.js';
import { revisionEntry, type RevisionEntry } from '../../src/sync/revision.js';
import { vectorFrom } from '../../src/sync/version-vector.js';
import { fileRevision } from '../support/file-revisions.js';

const [N0, N1, N2] = ['12D3KooWAaaaaaaaaaaaa', '12D3KooWBbbbbbbbbbbbb', '12D3KooWCcccccccccccc'] as const;
const T0 = 1_700_000_000_000_000_000n;
const SECOND_NS = 1_000_000_000n;
const PATH = 'd1/e1/f5';
const WINNER_BYTES = Buffer.from('the winner, kept here\n');
const LOSER_BYTES = Buffer.from('the loser, whose copy was deleted since\n');

const file = fileRevision;

function tombstone(path: string, origin: string, vector: Record<string, number>, mtimeNs: bigint): RevisionEntry {
  return revisionEntry({
    path,
    kind: 'file',
    contentRoot: new Uint8Array(0),
    size: 0,
    mode: 0o644,
    mtimeNs,
    deleted: true,
    origin,
    vector: vectorFrom(vector),
    linkTarget: '',
  });
}

// N1 wrote the winner W, N0 concurrently the loser H (earlier, so it loses on mtime). Some node
// settled the conflict: H went to its conflict name (copyH, the same revision at that path),
// and this node deleted that copy since (T). N2 had only W, and deleted the path (D).
const W = file(PATH, N1, { [N1]: 1 }, WINNER_BYTES, T0 + 20n * SECOND_NS);
const H = file(PATH, N0, { [N0]: 1 }, LOSER_BYTES, T0 + 10n * SECOND_NS);
const COPY_PATH = conflictPath(PATH, H.revision.mtimeNs, H.revision.origin);
const copyH = conflictCopyRevision(H.revision, COPY_PATH);
const T = tombstone(COPY_PATH, N1, { [N0]: 1, [N1]: 2 }, T0 + 30n * SECOND_NS);
const D = tombstone(PATH, N2, { [N1]: 1, [N2]: 1 }, T0 + 40n * SECOND_NS);

const hex = (e: RevisionEntry | undefined): string => (e === undefined ? 'none' : Buffer.from(e.id).toString('hex'));

/**
 * A folder of node `nodeId` holding `files` (share path -> bytes), whose log holds `stored` with
 * `heads` as the heads of their paths.
 */
async function folderOf(
  t: Test,
  nodeId: string,
  files: ReadonlyMap<string, Buffer>,
  stored: readonly RevisionEntry[],
  heads: readonly RevisionEntry[],
): Promise<{ folder: string; store: RevisionStore }> {
  const folder = await mkdtemp(join(tmpdir(), 'clawpeer-copied-loser-'));
  const store = await RevisionStore.open(folder, { nodeId });
  t.teardown(() => store.close());
  for (const [rel, bytes] of files) {
    await mkdir(dirname(join(folder, rel)), { recursive: true });
    await writeFile(join(folder, rel), bytes);
  }
  store.write((w) => {
    for (const e of stored) w.put(e);
    for (const e of heads) w.setHead(e.id);
  });
  return { folder, store };
}

/** Applies `received` with a peer that has none of the bytes asked for; what was asked, and the result. */
async function applyAsking(
  received: RevisionEntry[],
  folder: string,
  store: RevisionStore,
): Promise<{ asked: FetchRequest[]; result: Awaited<ReturnType<typeof applyRemote>> }> {
  const asked: FetchRequest[] = [];
  const result = await applyRemote(received, {
    store,
    keepConcurrentLocal: false,
    log: silentLogger,
    folder,
    chunking: DEFAULT_CHUNKING,
    fetch: async (requests, beforePublish) => {
      asked.push(...requests);
      await beforePublish([]);
      return { delivered: [], chunksReceived: 0 };
    },
  });
  return { asked, result };
}

t.test(
  'pickHead: a loser kept as a conflict copy is not a candidate; with none copied, the rule as before',
  async (t) => {
    t.equal(hex(pickHead([W, H, D])?.head), hex(H), 'not copied: the edit beats the deletion that never saw it');
    const copied = (e: RevisionEntry): boolean => hex(e) === hex(H);
    const pick = pickHead([W, H, D], copied);
    t.equal(hex(pick?.head), hex(D), 'copied: the deletion of what its node saw stands');
    t.same(
      pick?.losers.map((l) => [l.loserPath, hex(l.loser)]),
      [[COPY_PATH, hex(H)]],
      'still a loser (its copy is decided at its own path)',
    );
    t.equal(hex(pickHead([W, H], copied)?.head), hex(W), 'the winner it lost to stays the head');
    t.equal(hex(pickHead([H], copied)?.head), hex(H), 'every candidate copied: the first of all');
  },
);

t.test(
  'the node that settled the conflict and deleted the copy takes the deletion, asking no one for bytes',
  async (t) => {
    const { folder, store } = await folderOf(t, N1, new Map([[PATH, WINNER_BYTES]]), [W, H, copyH, T], [W, T]);
    const { asked, result } = await applyAsking([D], folder, store);
    t.same(
      asked.map((r) => r.sourcePath),
      [],
      'no bytes asked for (the loser, whose bytes exist nowhere, is not the head)',
    );
    t.same(result.skipped, [], 'nothing skipped: the next sync has nothing left to move');
    t.equal(hex(store.head(PATH)), hex(D), 'the deletion is the head');
    t.notOk(existsSync(join(folder, PATH)), 'the file is gone from the folder');
    t.equal(hex(store.head(COPY_PATH)), hex(T), 'the copy stays deleted');
  },
);

t.test("the deleting node, told of the conflict and its copy's deletion, keeps its deletion", async (t) => {
  const { folder, store } = await folderOf(t, N2, new Map(), [W, D], [D]);
  const { asked, result } = await applyAsking([H, copyH, T], folder, store);
  t.same(asked, [], 'no bytes asked for');
  t.same(result.skipped, [], 'nothing skipped');
  t.equal(hex(store.head(PATH)), hex(D), 'its deletion stays the head');
  t.equal(hex(store.head(COPY_PATH)), hex(T), "the copy's deletion is recorded");
  t.ok(store.has(H.id) && store.has(copyH.id), 'the records are kept: the logs converge');
});

t.test(
  'a loser whose copy still exists: the copy is where its bytes live, the path follows the deletion',
  async (t) => {
    const files = new Map([
      [PATH, WINNER_BYTES],
      [COPY_PATH, LOSER_BYTES],
    ]);
    const { folder, store } = await folderOf(t, N1, files, [W, H, copyH], [W, copyH]);
    const { asked } = await applyAsking([D], folder, store);
    t.same(asked, [], 'nothing to fetch');
    t.equal(hex(store.head(PATH)), hex(D), "the path is deleted, not brought back with the copy's bytes");
    t.notOk(existsSync(join(folder, PATH)));
    t.same(await readFile(join(folder, COPY_PATH)), LOSER_BYTES, 'the copy keeps the loser');
  },
);
