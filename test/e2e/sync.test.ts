// Two-way revision sync through the real CLI over loopback: new files, edits, deletions, --watch,
// renames, conflicts, receive-only, the no-op round trip, history (log/restore/gc), and a
// client killed mid-sync.
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { lstat, mkdir, mkdtemp, readdir, readFile, rename, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { scanFolder } from '../../src/folder-sync/folder-scanner.js';
import { mtimeMsOf } from '../../src/sync/revision.js';
import { RevisionStore } from '../../src/store/revision-store.js';
import { zstdCodec } from '../../src/session/chunk-compression.js';
import { CLI, jsonLines, runCli } from './cli-harness.js';
import { startSyncPair } from '../support/sync-pair-rig.js';
import { snapshot as fullSnapshot, type TreeItem } from './tree-helpers.js';

/** The tree without directory mtimes: a directory's mtime moves with its entries, sync does not carry it. */
async function snapshot(root: string): Promise<TreeItem[]> {
  return (await fullSnapshot(root)).map((i) => (i.kind === 'dir' ? { ...i, mtimeS: 0 } : i));
}

const rig = await startSyncPair(
  ['sa', 'sb'],
  [
    'two',
    'edits',
    'conflict',
    'ro',
    'kill',
    'zstd',
    'watch',
    'peerwatch',
    'progress',
    'capped',
    'dry',
    'ignored',
    'space',
    'links',
    'touch',
  ],
  'sync',
);
const { a, b, work, listener, server, client, sync } = rig;
t.teardown(() => listener.stop('SIGKILL'));

/** Sets an mtime in the past, so later edits are clearly newer (conflict winners go by mtime). */
async function age(file: string, secondsAgo: number): Promise<void> {
  const when = new Date(Date.now() - secondsAgo * 1000);
  await utimes(file, when, when);
}

t.test('sync --bwlimit caps what this side sends, and the listener sends within it too', async (t) => {
  // 512 KiB each way at 512 KiB/s, less a tenth of a second's burst: >= 0.9 s per direction.
  const minSeconds = 0.75;
  await mkdir(client('capped'), { recursive: true });
  await writeFile(client('capped', 'up.bin'), randomBytes(512 << 10));
  const up = await sync('capped', ['--bwlimit', '512KiB']);
  t.match(up, { inSync: true, revisionsSent: 1 });
  t.ok(Number(up['seconds']) >= minSeconds, `sending 512 KiB took ${String(up['seconds'])} s`);
  await writeFile(server('capped', 'down.bin'), randomBytes(512 << 10));
  const down = await sync('capped', ['--bwlimit', '512KiB']);
  t.match(down, { inSync: true, revisionsReceived: 1 });
  t.ok(
    Number(down['seconds']) >= minSeconds,
    `receiving 512 KiB took ${String(down['seconds'])} s: the listener kept to the asked rate`,
  );
  t.same(await snapshot(client('capped')), await snapshot(server('capped')), 'converged');
});

t.test(
  "content that cannot fit on this side's disk is left for the next sync before it is written, with the numbers; with room the sync completes",
  async (t) => {
    await mkdir(client('space'), { recursive: true });
    await writeFile(server('space', 'big.bin'), randomBytes(64 << 10));
    // The disk check sees at most 1 KiB free (test hook): less than the margin it keeps, whatever the disk.
    const r = await runCli(['--home', b.home, 'sync', client('space'), 'alice:space', '--json'], {
      env: { CLAWPEER_TEST_FREE_BYTES: '1024' },
    });
    t.equal(r.code, 0, `a file left as is, as other paths a sync cannot apply; stderr: ${r.stderr}`);
    const lines = r.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    t.match(
      lines.find((l) => l['event'] === 'no-space'),
      { files: 1, needBytes: 64 << 10, freeBytes: 1024, paths: ['big.bin'] },
      'says which file did not fit, and why',
    );
    t.match(
      lines.find((l) => l['event'] === 'done'),
      { inSync: false },
    );
    t.notOk(existsSync(client('space', 'big.bin')), 'nothing was published');
    t.match(await sync('space'), { inSync: true, revisionsReceived: 1 });
    t.same(await snapshot(client('space')), await snapshot(server('space')));
  },
);

t.test('new files both ways converge; then a no-op sync is one round trip under 200 bytes', async (t) => {
  await mkdir(client('two', 'docs'), { recursive: true });
  await writeFile(client('two', 'docs', 'c.txt'), 'from the client\n');
  await writeFile(server('two', 's.txt'), 'from the server\n');
  await mkdir(server('two', 'empty'), { recursive: true });
  const first = await sync('two');
  t.match(first, { event: 'done', inSync: true, mode: 'two-way', revisionsSent: 2, conflicts: 0 });
  t.same(
    Object.keys(first)
      .filter((k) => k !== 'lines')
      .sort(),
    [
      'chunksSent',
      'conflicts',
      'event',
      'inSync',
      'mode',
      'path',
      'reconcileBytes',
      'resident',
      'revisionsReceived',
      'revisionsSent',
      'roundTrips',
      'rttMs',
      'scanned',
      'seconds',
      'wireBytes',
    ].sort(),
  );
  t.equal(first['path'], 'direct', 'the path the session took');
  t.same(await snapshot(client('two')), await snapshot(server('two')));
  const again = await sync('two');
  t.match(again, { inSync: true, roundTrips: 1, revisionsSent: 0, revisionsReceived: 0, chunksSent: 0 });
  t.ok((again['reconcileBytes'] as number) < 200, `reconcileBytes ${String(again['reconcileBytes'])} < 200`);
});

t.test(
  'sync content travels zstd-compressed both ways; --no-compress sends it raw',
  { skip: zstdCodec() === null ? '@mongodb-js/zstd (optional) is not installed' : false },
  async (t) => {
    const log = (tag: string): string =>
      Array.from({ length: 30_000 }, (_, i) => `${tag} ${i} request served in ${i % 89} ms\n`).join('');
    await mkdir(client('zstd'), { recursive: true });
    await writeFile(client('zstd', 'up.log'), log('UP'));
    const size = log('UP').length;
    const up = await sync('zstd');
    t.match(up, { inSync: true, revisionsSent: 1 });
    t.ok(
      (up['wireBytes'] as number) < 0.5 * size,
      `client to server: ${String(up['wireBytes'])} wire bytes for a ${size}-byte log`,
    );
    await writeFile(server('zstd', 'down.log'), log('DOWN'));
    const down = await sync('zstd');
    t.match(down, { inSync: true, revisionsReceived: 1 });
    t.ok((down['wireBytes'] as number) < 0.5 * size, `server to client: ${String(down['wireBytes'])} wire bytes`);
    await writeFile(client('zstd', 'raw.log'), log('RAW'));
    const raw = await sync('zstd', ['--no-compress']);
    t.match(raw, { inSync: true, revisionsSent: 1 });
    t.ok((raw['wireBytes'] as number) >= size, `--no-compress: ${String(raw['wireBytes'])} wire bytes`);
    t.same(await snapshot(client('zstd')), await snapshot(server('zstd')));
  },
);

t.test('a file a sync publishes is certified warm: the next scan does not hash it again', async (t) => {
  await writeFile(server('two', 'old.bin'), randomBytes(5000));
  await age(server('two', 'old.bin'), 3600); // outside the racy window once it lands
  t.match(await sync('two'), { inSync: true, revisionsReceived: 1 });
  const store = await RevisionStore.open(client('two'), { nodeId: b.id });
  t.teardown(() => store.close());
  const st = await lstat(client('two', 'old.bin'), { bigint: true });
  const stat = { size: Number(st.size), mtimeNs: st.mtimeNs, ino: st.ino, dev: st.dev, mode: Number(st.mode) & 0o7777 };
  t.ok(store.isWarm('old.bin', stat), 'warm entry for the published file');
  t.notOk(store.isWarm('old.bin', { ...stat, mode: stat.mode ^ 0o100 }), 'a chmod is not warm');
  // Any chunking: nothing may be hashed (a wrong root would show up as a change, not as bytes).
  const scan = await scanFolder(store, client('two'), { chunking: DEFAULT_CHUNKING });
  // The 16-byte files of the first test may still be racily clean (re-hashed); old.bin is 5000.
  t.ok(scan.hashedBytes < 5000, `old.bin not re-hashed (hashed ${scan.hashedBytes} bytes)`);
  t.equal(scan.added + scan.changed + scan.deleted, 0, 'no change recorded');
});

t.test('a new mtime alone travels both ways, as rsync -a and Syncthing keep it; then nothing moves', async (t) => {
  // The ms a sync sets for a time (a time set through a Date can land a few ns below its ms).
  const mtimeMs = async (file: string): Promise<number> =>
    mtimeMsOf({ mtimeNs: (await lstat(file, { bigint: true })).mtimeNs });
  await writeFile(server('touch', 'same.txt'), 'same bytes\n');
  await age(server('touch', 'same.txt'), 7200);
  t.match(await sync('touch'), { inSync: true, revisionsReceived: 1 });
  t.equal(await mtimeMs(client('touch', 'same.txt')), await mtimeMs(server('touch', 'same.txt')));

  // Touched here: the peer takes the time (its bytes are not sent again).
  await age(client('touch', 'same.txt'), 3600);
  const up = await sync('touch');
  t.match(up, { inSync: true, revisionsSent: 1 });
  t.equal(
    await mtimeMs(server('touch', 'same.txt')),
    await mtimeMs(client('touch', 'same.txt')),
    'the listener took it',
  );

  // Written, synced, and only then given its time (tar, cp -p: a scan between the two steps).
  await writeFile(client('touch', 'unpacked.txt'), 'from an archive\n');
  t.match(await sync('touch'), { inSync: true, revisionsSent: 1 });
  await age(client('touch', 'unpacked.txt'), 86_400);
  t.match(await sync('touch'), { inSync: true, revisionsSent: 1 });
  t.equal(
    await mtimeMs(server('touch', 'unpacked.txt')),
    await mtimeMs(client('touch', 'unpacked.txt')),
    "the archive's time, not the write's",
  );

  // Touched on the listener's side: it comes back the other way.
  await age(server('touch', 'same.txt'), 1800);
  t.match(await sync('touch'), { inSync: true, revisionsReceived: 1 });
  t.equal(await mtimeMs(client('touch', 'same.txt')), await mtimeMs(server('touch', 'same.txt')), 'the client took it');
  t.same(
    await snapshot(client('touch')),
    await snapshot(server('touch')),
    'the two trees are the same, times included',
  );

  // A time set by a sync is not a change of its own: the next sync moves nothing.
  t.match(await sync('touch'), { inSync: true, revisionsSent: 0, revisionsReceived: 0 });
});

t.test(
  "a symlink in the peer's share that leads out of this folder is left out, and everything else still lands",
  async (t) => {
    await mkdir(client('links'), { recursive: true });
    await writeFile(server('links', 'doc.txt'), 'doc\n');
    await symlink('doc.txt', server('links', 'near'));
    await symlink('/etc/hostname', server('links', 'far'));
    await symlink('../../elsewhere', server('links', 'up'));
    const r = await sync('links');
    const skipped = (r['lines'] as Record<string, unknown>[])
      .filter((l) => l['event'] === 'skipped')
      .map((l) => l['path']);
    t.same(skipped.sort(), ['far', 'up'], 'the two links out of the folder, named');
    t.same(
      (await snapshot(client('links'))).map((i) => `${i.kind} ${i.path}`),
      ['file doc.txt', 'symlink near'],
      'the file and the link inside arrived',
    );
  },
);

t.test('edits on both sides, delete vs edit, rename', async (t) => {
  await mkdir(client('edits'), { recursive: true });
  await writeFile(server('edits', 'a.txt'), 'a v1\n');
  await writeFile(server('edits', 'b.txt'), 'b v1\n');
  await writeFile(server('edits', 'gone.txt'), 'will be edited on one side, deleted on the other\n');
  await writeFile(server('edits', 'old-name.bin'), randomBytes(300_000));
  await sync('edits');
  t.same(await snapshot(client('edits')), await snapshot(server('edits')));

  await writeFile(client('edits', 'a.txt'), 'a v2 from the client\n');
  await writeFile(server('edits', 'b.txt'), 'b v2 from the server\n');
  await rm(server('edits', 'gone.txt'));
  await writeFile(client('edits', 'gone.txt'), 'edited on the client: must survive the deletion\n');
  await rename(client('edits', 'old-name.bin'), client('edits', 'new-name.bin'));
  const r = await sync('edits');
  t.match(r, { inSync: true, conflicts: 0 });
  t.same(await snapshot(client('edits')), await snapshot(server('edits')));
  t.equal(await readFile(server('edits', 'a.txt'), 'utf8'), 'a v2 from the client\n');
  t.equal(await readFile(client('edits', 'b.txt'), 'utf8'), 'b v2 from the server\n');
  t.equal(
    await readFile(server('edits', 'gone.txt'), 'utf8'),
    'edited on the client: must survive the deletion\n',
    'edit beats delete',
  );
  t.same((await readdir(server('edits'))).filter((n) => n !== '.clawpeer').sort(), [
    'a.txt',
    'b.txt',
    'gone.txt',
    'new-name.bin',
  ]);
  t.equal(r['chunksSent'], 3, 'the renamed 300 KB file travels as no chunks; the three small edits as one chunk each');

  // History: the server's old a.txt is kept and can be restored.
  const log = await runCli(['--home', a.home, 'log', server('edits', 'a.txt'), '--json']);
  t.equal(log.code, 0, log.stderr);
  const revs = jsonLines(log.stdout);
  t.equal(revs.length, 2);
  const old = revs.find((e) => e['head'] === false);
  if (old === undefined) throw new Error('no old revision');
  t.match(
    revs,
    [
      { what: 'changed', by: 'bob', origin: b.id, head: true },
      { what: 'created', by: 'this node', origin: a.id, head: false },
    ],
    '--json: newest first, full ids kept',
  );
  // The human log: newest first, with time, what happened, size and the pair's name, no long ids.
  const human = (await runCli(['--home', a.home, 'log', server('edits')])).stdout
    .split('\n')
    .filter((l) => l.length > 0);
  const aLines = human.filter((l) => / a\.txt /.test(l));
  t.match(aLines, [
    /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d {2}changed +a\.txt {2}21 B {2}by bob {2}rev [0-9a-f]{12} \(current\)$/,
    /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d {2}created +a\.txt {2}5 B {2}by this node {2}rev [0-9a-f]{12}$/,
  ]);
  t.ok(
    human.some((l) => / {2}deleted +gone\.txt/.test(l) || / {2}changed +gone\.txt/.test(l)),
    'deletions and edits are named',
  );
  t.notMatch(human.join('\n'), /12D3KooW/, 'no node ids in the human form');
  const times = human.map((l) => l.slice(0, 19));
  t.same(times, [...times].sort().reverse(), 'newest first');
  // restore without --home (and no identity in the default home): the folder names its node.
  const emptyDefault = await mkdtemp(path.join(tmpdir(), 'clawpeer-nohome-'));
  const noHomeEnv = { HOME: emptyDefault, XDG_CONFIG_HOME: emptyDefault, CLAWPEER_HOME: undefined };
  const restored = await runCli(['restore', server('edits', 'a.txt'), '--rev', String(old['id'])], { env: noHomeEnv });
  t.equal(restored.code, 0, restored.stderr);
  t.notMatch(restored.stderr, /clawpeer init/);
  t.equal(await readFile(server('edits', 'a.txt'), 'utf8'), 'a v1\n');
  const after = jsonLines((await runCli(['log', server('edits', 'a.txt'), '--json'], { env: noHomeEnv })).stdout);
  t.match(
    after[0],
    { head: true, origin: a.id, by: 'this node' },
    'the restore is an edit of the node that syncs the folder',
  );
  // The --home of another node is refused, saying what to pass.
  const foreign = await runCli(['--home', b.home, 'restore', server('edits', 'a.txt'), '--rev', String(old['id'])]);
  t.equal(foreign.code, 2, foreign.stderr);
  t.match(foreign.stderr, /is synced by node .*: pass the --home of the node that syncs this folder/);
  const gc = await runCli(['--home', a.home, 'gc', server('edits'), '--keep-last', '1', '--json']);
  t.equal(gc.code, 0, gc.stderr);
  t.ok((jsonLines(gc.stdout)[0]?.['removedRevisions'] as number) > 0);
});

t.test('a true conflict: the same winner on both sides, the loser kept as a conflict copy on both', async (t) => {
  await mkdir(client('conflict'), { recursive: true });
  await writeFile(server('conflict', 'notes.txt'), 'base\n');
  await sync('conflict');
  await writeFile(client('conflict', 'notes.txt'), 'client edit (older)\n');
  await age(client('conflict', 'notes.txt'), 120);
  await writeFile(server('conflict', 'notes.txt'), 'server edit (newer)\n');
  const r = await sync('conflict');
  t.match(r, { inSync: true, conflicts: 1 });
  for (const side of [client('conflict'), server('conflict')]) {
    t.equal(await readFile(path.join(side, 'notes.txt'), 'utf8'), 'server edit (newer)\n', 'the later edit wins');
    const names = (await readdir(side)).filter((n) => n !== '.clawpeer');
    const copy = names.find((n) => /^notes\.sync-conflict-\d{8}-\d{6}-[^.]+\.txt$/.test(n));
    t.ok(copy, `conflict copy in ${names.join(', ')}`);
    if (copy !== undefined) t.equal(await readFile(path.join(side, copy), 'utf8'), 'client edit (older)\n');
  }
  t.same(await snapshot(client('conflict')), await snapshot(server('conflict')));
  t.match(await sync('conflict'), { roundTrips: 1, inSync: true });
});

t.test(
  'sync --dry-run (-n) lists what would arrive, what would go and the conflicts, and changes neither side',
  async (t) => {
    await mkdir(client('dry'), { recursive: true });
    for (const name of [
      'keep.txt',
      'edit-here.txt',
      'edit-there.txt',
      'gone.txt',
      'clash.txt',
      'touched-here.txt',
      'touched-there.txt',
    ])
      await writeFile(server('dry', name), `${name} v1\n`);
    await sync('dry');
    await age(client('dry', 'touched-here.txt'), 600);
    await age(server('dry', 'touched-there.txt'), 600);
    await writeFile(client('dry', 'edit-here.txt'), 'edited here\n');
    await writeFile(client('dry', 'new-here.txt'), 'new here\n');
    await writeFile(server('dry', 'edit-there.txt'), 'edited there, longer\n');
    await mkdir(server('dry', 'new-there'));
    await writeFile(server('dry', 'new-there', 'x.bin'), randomBytes(3000));
    await rm(server('dry', 'gone.txt'));
    await symlink('keep.txt', server('dry', 'link-there'));
    await symlink('keep.txt', client('dry', 'link-here'));
    await writeFile(client('dry', 'clash.txt'), 'clash: the client\n');
    await age(client('dry', 'clash.txt'), 120);
    await writeFile(server('dry', 'clash.txt'), 'clash: the server\n');
    const before = { here: await snapshot(client('dry')), there: await snapshot(server('dry')) };

    const r = await sync('dry', ['-n']);
    const lines = r['lines'] as Record<string, unknown>[];
    const listed = (event: string): string[] =>
      lines.filter((l) => l['event'] === event).map((l) => `${String(l['change'])} ${String(l['path'])}`);
    t.same(listed('would-receive'), [
      'conflict clash.txt',
      'update edit-there.txt',
      'delete gone.txt',
      'create link-there',
      'create new-there',
      'create new-there/x.bin',
      'time touched-there.txt',
    ]);
    t.same(
      listed('would-send'),
      [
        'conflict clash.txt',
        'update edit-here.txt',
        'create link-here',
        'create new-here.txt',
        'time touched-here.txt',
      ],
      'create: the peer never had new-here.txt; time: a touch, no bytes',
    );
    t.match(
      lines.find((l) => l['event'] === 'would-receive' && l['path'] === 'link-there'),
      { kind: 'symlink', target: 'keep.txt' },
    );
    t.match(
      lines.find((l) => l['event'] === 'would-receive' && l['path'] === 'new-there/x.bin'),
      { kind: 'file', bytes: 3000 },
    );
    t.match(
      lines.find((l) => l['event'] === 'would-receive' && l['path'] === 'clash.txt'),
      { copy: /^clash\.sync-conflict-/ },
    );
    t.match(r, {
      event: 'done',
      dryRun: true,
      inSync: false,
      toReceive: 7,
      toSend: 5,
      conflicts: 1,
      bytesToSend: 'edited here\n'.length + 'new here\n'.length,
    });
    t.same(
      { here: await snapshot(client('dry')), there: await snapshot(server('dry')) },
      before,
      'neither side changed',
    );

    // The real sync does what the dry run said; after it, a dry run finds nothing.
    t.match(await sync('dry'), { inSync: true, conflicts: 1 });
    t.same(await snapshot(client('dry')), await snapshot(server('dry')));
    t.match(await sync('dry', ['--dry-run']), { dryRun: true, inSync: true, toReceive: 0, toSend: 0 });

    // Into a folder that does not exist: everything would arrive, and nothing is created.
    const nowhere = path.join(work, 'client', 'dry-nowhere');
    const fresh = await runCli(['--home', b.home, 'sync', nowhere, 'alice:dry', '-n']);
    t.equal(fresh.code, 0, fresh.stderr);
    t.match(fresh.stdout, /^receive +create +new-there\/x\.bin \(2\.9 KiB\)$/m);
    t.match(fresh.stdout, /^receive +create +link-here -> keep\.txt$/m);
    t.match(
      fresh.stdout,
      /dry run: 12 changes would arrive here .* 0 would go to the peer .*nothing was changed or sent/,
    );
    t.notOk(
      await lstat(nowhere).then(
        () => true,
        () => false,
      ),
      'the missing folder was not created',
    );
    const notDir = await runCli(['--home', b.home, 'sync', client('dry', 'new-here.txt'), 'alice:dry', '-n']);
    t.equal(notDir.code, 2, notDir.stderr);
    t.match(notDir.stderr, /new-here\.txt is not a directory/);
    const watching = await runCli(['--home', b.home, 'sync', client('dry'), 'alice:dry', '-n', '--watch']);
    t.equal(watching.code, 2);
    t.match(watching.stderr, /--dry-run plans one sync: it cannot be combined with --watch/);
  },
);

t.test('.clawpeerignore: each side leaves out what its own file matches, and the logs still converge', async (t) => {
  await mkdir(client('ignored', 'build'), { recursive: true });
  await writeFile(client('ignored', '.clawpeerignore'), '# not synced\n*.tmp\nbuild/\n');
  await writeFile(client('ignored', 'keep.txt'), 'kept\n');
  await writeFile(client('ignored', 'scratch.tmp'), 'mine only\n');
  await writeFile(client('ignored', 'build', 'out.o'), 'object\n');
  await writeFile(server('ignored', 'srv.txt'), 'from the server\n');
  await writeFile(server('ignored', 'server.tmp'), 'the server syncs its .tmp files\n');
  const first = await sync('ignored');
  t.match(first, { inSync: true, revisionsSent: 1, revisionsReceived: 2 });
  const names = async (dir: string): Promise<string[]> => (await readdir(dir)).filter((n) => n !== '.clawpeer').sort();
  t.same(
    await names(server('ignored')),
    ['keep.txt', 'server.tmp', 'srv.txt'],
    'nothing ignored here reached the server, nor the ignore file',
  );
  t.same(
    await names(client('ignored')),
    ['.clawpeerignore', 'build', 'keep.txt', 'scratch.tmp', 'srv.txt'],
    "the server's .tmp file was not applied here",
  );
  // The client keeps the server's record of server.tmp: the next sync finds equal logs.
  t.match(await sync('ignored'), { inSync: true, roundTrips: 1, revisionsSent: 0, revisionsReceived: 0 });
  await writeFile(server('ignored', 'server.tmp'), 'changed on the server\n');
  await writeFile(client('ignored', 'scratch.tmp'), 'changed here\n');
  const plan = await sync('ignored', ['-n']);
  t.match(plan, { dryRun: true, toReceive: 0, toSend: 0 }, 'a dry run lists nothing ignored');
  t.match(await sync('ignored'), { inSync: true, revisionsSent: 0 });
  t.notOk((await readdir(client('ignored'))).includes('server.tmp'));
  // A malformed pattern stops the sync before anything connects, naming the file and line.
  await writeFile(client('ignored', '.clawpeerignore'), '*.tmp\n[oops\n');
  const bad = await runCli(['--home', b.home, 'sync', client('ignored'), 'alice:ignored']);
  t.equal(bad.code, 2, bad.stderr);
  t.match(bad.stderr, /\.clawpeerignore line 2: "\[oops": has a \[ without its \]/);
});

t.test('receive-only keeps local edits local and reports them; a newer remote revision still applies', async (t) => {
  await writeFile(server('ro', 'shared.txt'), 'v1\n');
  await writeFile(server('ro', 'mine.txt'), 'v1\n');
  await sync('ro', ['--mode', 'receive-only']);
  await writeFile(client('ro', 'mine.txt'), 'local edit, not for the server\n');
  await writeFile(client('ro', 'extra.txt'), 'local only\n');
  await writeFile(server('ro', 'shared.txt'), 'v2 from the server\n');
  const r = await sync('ro', ['--mode', 'receive-only']);
  t.equal(await readFile(client('ro', 'shared.txt'), 'utf8'), 'v2 from the server\n');
  t.equal(await readFile(client('ro', 'mine.txt'), 'utf8'), 'local edit, not for the server\n', 'local edit kept');
  t.equal(await readFile(server('ro', 'mine.txt'), 'utf8'), 'v1\n', 'and not sent');
  t.notOk((await readdir(server('ro'))).includes('extra.txt'));
  t.match(r, { inSync: true, revisionsSent: 0 });
  const reported = (r['lines'] as Record<string, unknown>[])
    .filter((l) => l['event'] === 'local-only')
    .map((l) => l['path']);
  t.same(reported.sort(), ['extra.txt', 'mine.txt']);
});

t.test('SIGKILL of the client mid-sync, then a rerun converges', async (t) => {
  await mkdir(client('kill'), { recursive: true });
  await writeFile(client('kill', 'big.bin'), randomBytes(12 << 20));
  await writeFile(client('kill', 'small.txt'), 'small\n');
  const child = spawn(process.execPath, [CLI, '--home', b.home, 'sync', client('kill'), 'alice:kill', '--json'], {
    env: { ...process.env, CLAWPEER_TEST_DELAY_PER_CHUNK_MS: '40' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const closed = new Promise((r) => child.on('close', r));
  // Killed once the listener is fetching big.bin (its resumable partial exists), so the listener
  // holds the share for that stale session.
  const partials = server('kill', '.clawpeer', 'partial');
  const fetching = async (): Promise<boolean> =>
    (await readdir(partials).catch(() => [] as string[])).some((n) => n.endsWith('.data'));
  for (let waited = 0; !(await fetching()) && waited < 20_000; waited += 50)
    await new Promise((r) => setTimeout(r, 50));
  t.ok(await fetching(), 'the listener began fetching before the kill');
  child.kill('SIGKILL');
  await closed;
  const r = await sync('kill');
  t.match(r, { inSync: true });
  // The stale session would hold the share until the transport's idle timeout (15 s): the rerun
  // from the same peer superseded it instead of waiting.
  t.match(
    listener.stderr(),
    /aborting an earlier sync or push of the same peer/,
    'the rerun superseded the stale sync',
  );
  t.same(await snapshot(client('kill')), await snapshot(server('kill')));
  t.match(await sync('kill'), { roundTrips: 1, inSync: true });
});

/** `sync --watch` of `share` as a child process, with waits on its effects (20 s each at most). */
function watching(t: Test, share: string, interval: string, extra: readonly string[] = []) {
  const child = spawn(
    process.execPath,
    [
      CLI,
      '--home',
      b.home,
      'sync',
      client(share),
      `alice:${share}`,
      '--watch',
      '--interval',
      interval,
      '--json',
      ...extra,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const dones = (): Record<string, unknown>[] => jsonLines(stdout).filter((l) => l['event'] === 'done');
  return {
    until: async (what: string, ok: () => Promise<boolean>): Promise<void> => {
      for (let waited = 0; waited < 20_000; waited += 50) {
        if (await ok()) return;
        await new Promise((r) => setTimeout(r, 50));
      }
      t.fail(`${what} within 20 s; stderr: ${stderr}`);
    },
    synced: (): number => dones().length,
    /** Syncs whose folder was not scanned: its watcher vouched nothing changed here. */
    unscanned: (): number => dones().filter((l) => l['scanned'] === false).length,
    stderr: (): string => stderr,
    allInSync: (): boolean => dones().every((l) => l['inSync'] === true),
    /** SIGINT, then the exit code. */
    interrupt: async (): Promise<{ code: number | null; stderr: string }> => {
      child.kill('SIGINT');
      return { code: await exited, stderr };
    },
  };
}

const content = (file: string): Promise<string | undefined> => readFile(file, 'utf8').catch(() => undefined);

t.test(
  "sync --watch follows local adds, edits and deletions, and the peer's changes, until SIGINT (exit 0)",
  async (t) => {
    await mkdir(client('watch', 'sub'), { recursive: true });
    await writeFile(client('watch', 'first.txt'), 'first\n');
    const w = watching(t, 'watch', '1');
    await w.until('the first sync', async () => (await content(server('watch', 'first.txt'))) === 'first\n');
    const before = w.synced();
    await writeFile(client('watch', 'sub', 'added.txt'), 'added while watching\n');
    await w.until(
      'a file added while watching',
      async () => (await content(server('watch', 'sub', 'added.txt'))) === 'added while watching\n',
    );
    await writeFile(client('watch', 'first.txt'), 'edited while watching\n');
    await w.until('an edit', async () => (await content(server('watch', 'first.txt'))) === 'edited while watching\n');
    await rm(client('watch', 'sub', 'added.txt'));
    await w.until('a deletion', async () => (await content(server('watch', 'sub', 'added.txt'))) === undefined);
    t.ok(w.synced() > before, `${w.synced() - before} more syncs ran after the first`);
    // Nothing changes here: the peer's listener tells of its new file (or the next interval's sync brings it).
    await writeFile(server('watch', 'from-peer.txt'), 'written on the peer\n');
    await w.until(
      "the peer's change",
      async () => (await content(client('watch', 'from-peer.txt'))) === 'written on the peer\n',
    );
    // --watch keeps its folder's watcher and log between syncs: an interval sync with nothing changed here scans nothing.
    await w.until('a sync that skipped the scan', async () => w.unscanned() > 0);
    t.ok(w.allInSync(), 'every sync ended in sync');
    const end = await w.interrupt();
    t.equal(end.code, 0, `SIGINT ends --watch with exit 0; stderr: ${end.stderr}`);
    t.same(await snapshot(client('watch')), await snapshot(server('watch')));
  },
);

t.test("sync --watch hears of the peer's changes from its listener at once, not at the next --interval", async (t) => {
  await mkdir(client('peerwatch'), { recursive: true });
  // An interval of an hour: only the listener's notice can bring the peer's change in time.
  const w = watching(t, 'peerwatch', '3600', ['-vv']);
  await w.until('the first sync', async () => w.synced() >= 1);
  // The watch is asked for beside the first sync; its confirmation is logged at debug level.
  await w.until('the watch confirmed', async () =>
    /the peer tells this process when its share changes/.test(w.stderr()),
  );
  await writeFile(server('peerwatch', 'from-peer.txt'), 'written on the peer\n');
  await w.until(
    "the peer's new file",
    async () => (await content(client('peerwatch', 'from-peer.txt'))) === 'written on the peer\n',
  );
  // Made beside the share and renamed in: one change (a directory and then its file could fall
  // into two syncs on a loaded machine, the first ending not in sync while the file was written).
  const staged = path.join(work, 'peerwatch-sub');
  await mkdir(staged, { recursive: true });
  await writeFile(path.join(staged, 'second.txt'), 'second\n');
  await rename(staged, server('peerwatch', 'sub'));
  await w.until(
    "the peer's second change",
    async () => (await content(client('peerwatch', 'sub', 'second.txt'))) === 'second\n',
  );
  t.ok(w.allInSync(), 'every sync ended in sync');
  const end = await w.interrupt();
  t.equal(end.code, 0, `SIGINT ends --watch with exit 0; stderr: ${end.stderr}`);
  t.same(await snapshot(client('peerwatch')), await snapshot(server('peerwatch')));
});

t.test('--interval is checked before anything connects', async (t) => {
  for (const [args, message] of [
    [['--interval', '5'], /--interval applies to --watch only/],
    [['--watch', '--interval', '0'], /--interval must be an integer in 1\.\.86400, got 0/],
    [['--watch', '--interval', 'soon'], /--interval must be an integer in 1\.\.86400, got NaN/],
  ] as const) {
    const r = await runCli(['--home', b.home, 'sync', client('watch'), 'alice:watch', ...args]);
    t.equal(r.code, 2, `${args.join(' ')}: usage error`);
    t.match(r.stderr, message);
  }
});

t.test('--json progress: hashing while scanning, then content sent and received, each phase told', async (t) => {
  await mkdir(client('progress'), { recursive: true });
  await writeFile(client('progress', 'up.bin'), randomBytes(300_000));
  await writeFile(server('progress', 'down.bin'), randomBytes(200_000));
  const r = await sync('progress');
  t.match(r, { inSync: true, revisionsSent: 1, revisionsReceived: 1 });
  const events = (r['lines'] as Record<string, unknown>[]).filter((l) => l['event'] === 'progress');
  const last = (phase: string): Record<string, unknown> | undefined =>
    events.filter((e) => e['phase'] === phase).at(-1);
  t.match(last('scanning'), { bytes: 300_000, files: 1 }, 'the scan hashed the new local file');
  t.match(
    last('sending'),
    { totalBytes: 300_000, files: 1, totalFiles: 1 },
    'the listener fetched it from us, and holds it',
  );
  t.match(
    last('receiving'),
    { bytes: 200_000, totalBytes: 200_000, files: 1, totalFiles: 1 },
    'we fetched its new file, and the event for its publication came',
  );
  for (const e of events) {
    const [bytes, total, files, totalFiles] = ['bytes', 'totalBytes', 'files', 'totalFiles'].map((k) => e[k] as number);
    t.ok(
      bytes! >= 0 && (total === 0 || bytes! <= total!) && (totalFiles === 0 || files! <= totalFiles!),
      `${String(e['phase'])}: ${bytes} of ${total} bytes, ${files} of ${totalFiles} files`,
    );
  }
  t.same(await snapshot(client('progress')), await snapshot(server('progress')));
});
