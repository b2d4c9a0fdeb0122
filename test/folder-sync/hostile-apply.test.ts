// What a paired but hostile peer (or a peer racing a local edit) can make this node's apply step
// do now that sync carries type changes (a file turned into a directory and back). Each case
// calls applyRemote or planRemote directly, on a folder in a temp dir, with a fake fetch that
// publishes through a real Publisher as fetchContent's receiver does.
import t, { type Test } from 'tap';
import { chmod, lstat, mkdir, mkdtemp, readFile, readdir, rm, rmdir, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { manifestFromBytes } from '../../src/chunking/manifest.js';
import { scanFolder } from '../../src/folder-sync/folder-scanner.js';
import { applyRemote } from '../../src/folder-sync/sync-apply.js';
import { planRemote } from '../../src/folder-sync/sync-plan.js';
import { unsyncedPath } from '../../src/folder-sync/unchanged-since-scan.js';
import { conflictPath, MAX_CONCURRENT_REVISIONS } from '../../src/sync/conflict.js';
import { parseIgnoreFile, syncIgnoreFrom, type SyncIgnore } from '../../src/folder-sync/sync-ignore.js';
import { silentLogger } from '../../src/logger.js';
import { RevisionStore } from '../../src/store/revision-store.js';
import { revisionEntry, type Revision, type RevisionEntry } from '../../src/sync/revision.js';
import { incrementVector, vectorFrom } from '../../src/sync/version-vector.js';
import { publishAsFetched } from '../support/publish-as-fetched.js';

const ME = '12D3KooWCcccccccccccc';
const PEER = '12D3KooWBbbbbbbbbbbbb';
const T0 = 1_700_000_000_000_000_000n;

async function tempDir(t: Test, name: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `clawpeer-hostile-${name}-`));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function scanned(t: Test, folder: string, ignore?: SyncIgnore): Promise<RevisionStore> {
  const store = await RevisionStore.open(folder, { nodeId: ME });
  t.teardown(() => store.close());
  await scanFolder(store, folder, { chunking: DEFAULT_CHUNKING, ...(ignore === undefined ? {} : { ignore }) });
  return store;
}

/** The head the scan recorded at `p` (the revision a peer's change of it has seen). */
function headOf(store: RevisionStore, p: string): RevisionEntry {
  const e = store.head(p);
  if (e === undefined) throw new Error(`no ${p}`);
  return e;
}

/** The peer's revision of `path` (a new path, or one that saw `seen`). */
function peerRev(
  path: string,
  what: { body: string } | { dir: true } | { link: string } | { deleted: true },
  seen?: RevisionEntry,
): RevisionEntry {
  const base: Revision = {
    path,
    kind: 'file',
    contentRoot: new Uint8Array(0),
    size: 0,
    mode: 0o644,
    mtimeNs: T0,
    deleted: false,
    origin: PEER,
    vector: seen === undefined ? vectorFrom({ [PEER]: 1 }) : incrementVector(seen.revision.vector, PEER),
    linkTarget: '',
  };
  if ('body' in what) {
    const m = manifestFromBytes(Buffer.from(what.body), DEFAULT_CHUNKING);
    return revisionEntry({ ...base, contentRoot: m.root, size: m.size });
  }
  if ('dir' in what) return revisionEntry({ ...base, kind: 'dir', mode: 0o755 });
  if ('link' in what)
    return revisionEntry({
      ...base,
      kind: 'symlink',
      mode: 0o777,
      linkTarget: what.link,
      size: Buffer.byteLength(what.link),
    });
  return revisionEntry({ ...base, deleted: true });
}

/** Applies `received`, the peer delivering every file asked for with `bodies[destPath]`, through a real Publisher. */
function apply(
  folder: string,
  store: RevisionStore,
  received: RevisionEntry[],
  bodies: Record<string, string> = {},
  ignore?: SyncIgnore,
): ReturnType<typeof applyRemote> {
  return applyRemote(received, {
    store,
    folder,
    keepConcurrentLocal: false,
    log: silentLogger,
    chunking: DEFAULT_CHUNKING,
    ...(ignore === undefined ? {} : { ignore }),
    fetch: async (requests, beforePublish, beforeReplace) => {
      const delivered = [...requests];
      await beforePublish(delivered);
      await publishAsFetched(folder, delivered, (dest) => Buffer.from(bodies[dest] ?? ''), beforeReplace);
      return { delivered, chunksReceived: 0 };
    },
  });
}

t.test(
  'a deletion below a directory replaced here by a link out of the folder touches nothing out there',
  async (t) => {
    const folder = await tempDir(t, 'linked');
    const outside = await tempDir(t, 'outside');
    await mkdir(join(folder, 'x'));
    await writeFile(join(folder, 'x', 'y'), 'synced\n');
    const store = await scanned(t, folder);
    const head = store.head('x/y');
    if (head === undefined) throw new Error('no x/y');
    // Since the scan, the user moved x out of the folder and left a link to it (or to anything).
    await writeFile(join(outside, 'y'), 'a file outside the folder, not ours\n');
    await rm(join(folder, 'x'), { recursive: true });
    await symlink(outside, join(folder, 'x'));
    await apply(folder, store, [peerRev('x/y', { deleted: true }, head)]).catch(() => undefined);
    t.same(await readdir(outside), ['y'], 'nothing moved aside or deleted outside the folder');
    t.equal(await readFile(join(outside, 'y'), 'utf8'), 'a file outside the folder, not ours\n');
  },
);

const kindOf = async (p: string): Promise<string> => {
  const st = await lstat(p).catch(() => undefined);
  return st === undefined ? 'none' : st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'link' : 'file';
};

t.test('a file put where the scan saw a directory is kept when the peer turns it into a file', async (t) => {
  const folder = await tempDir(t, 'dir-now-file');
  await mkdir(join(folder, 'd'));
  const store = await scanned(t, folder);
  const head = store.head('d');
  if (head === undefined) throw new Error('no d');
  await rmdir(join(folder, 'd'));
  await writeFile(join(folder, 'd'), 'saved here since the scan\n');
  await apply(folder, store, [peerRev('d', { body: "the peer's d\n" }, head)], { d: "the peer's d\n" });
  t.equal(await readFile(join(folder, 'd'), 'utf8'), "the peer's d\n", "the peer's file lands");
  const aside = (await readdir(folder)).filter((n) => n.startsWith('d.sync-unsynced-'));
  t.equal(aside.length, 1, 'the save is moved aside');
  t.equal(await readFile(join(folder, aside[0] ?? 'none'), 'utf8'), 'saved here since the scan\n');
});
t.test('a file put where the scan saw a link is kept when the peer deletes the link', async (t) => {
  const folder = await tempDir(t, 'link-now-file');
  await symlink('elsewhere', join(folder, 'l'));
  const store = await scanned(t, folder);
  const head = store.head('l');
  if (head?.revision.kind !== 'symlink') throw new Error('no link l');
  await rm(join(folder, 'l'));
  await writeFile(join(folder, 'l'), 'saved here since the scan\n');
  await apply(folder, store, [peerRev('l', { deleted: true }, head)]);
  const aside = (await readdir(folder)).filter((n) => n.startsWith('l.sync-unsynced-'));
  t.equal(aside.length, 1, 'the save is moved aside');
  t.equal(await readFile(join(folder, aside[0] ?? 'none'), 'utf8'), 'saved here since the scan\n');
  t.equal(await kindOf(join(folder, 'l')), 'none', 'the path is deleted as the peer said');
});

t.test("a peer's file where an ignored directory is here leaves that path, not every sync", async (t) => {
  const folder = await tempDir(t, 'ignored');
  await writeFile(join(folder, '.clawpeerignore'), 'build/\n');
  const ignore = syncIgnoreFrom(parseIgnoreFile('build/\n'));
  await mkdir(join(folder, 'build'));
  await writeFile(join(folder, 'build', 'out.o'), 'object code\n');
  const store = await scanned(t, folder, ignore);
  t.equal(store.head('build'), undefined, 'the ignored directory is not recorded');
  const theirs = peerRev('build', { body: "the peer's build script\n" });
  const other = peerRev('other.txt', { body: 'another file\n' });
  const body = { build: "the peer's build script\n", 'other.txt': 'another file\n' };
  for (let sync = 1; sync <= 2; sync++) {
    const result = await apply(folder, store, [theirs, other], body, ignore);
    t.same(result.skipped, ['build'], `sync ${sync}: the path is left as is`);
  }
  t.equal(await readFile(join(folder, 'build', 'out.o'), 'utf8'), 'object code\n', 'the ignored files stay');
  t.equal(await readFile(join(folder, 'other.txt'), 'utf8'), 'another file\n', 'the rest of the sync lands');
});

t.test('a directory whose unsynced names are all taken still moves aside; no sync fails for it', async (t) => {
  const folder = await tempDir(t, 'aside-taken');
  await mkdir(join(folder, 'd'));
  await writeFile(join(folder, 'd', 'a'), 'synced\n');
  const store = await scanned(t, folder);
  const head = store.head('d');
  if (head === undefined) throw new Error('no d');
  await writeFile(join(folder, 'd', 'new'), 'made here since the scan\n');
  // Names a peer could have synced here before: every one the apply tried for d's mtime.
  const { mtimeNs } = await lstat(join(folder, 'd'), { bigint: true });
  for (let k = 0n; k < 10n; k++)
    await writeFile(join(folder, unsyncedPath('d', mtimeNs + k * 1_000_000_000n, ME)), 'taken\n');
  // The peer turned d into a link (and never deleted d/a: what is left in d moves aside).
  const result = await apply(folder, store, [peerRev('d', { link: 'elsewhere' }, head)]);
  t.same(result.skipped, [], 'the link lands');
  t.equal(await kindOf(join(folder, 'd')), 'link');
  const asideDirs = [];
  for (const n of await readdir(folder))
    if (n.startsWith('d.sync-unsynced-') && (await kindOf(join(folder, n))) === 'dir') asideDirs.push(n);
  t.equal(asideDirs.length, 1, 'the directory moved aside under a free name');
  t.equal(await readFile(join(folder, asideDirs[0] ?? 'none', 'new'), 'utf8'), 'made here since the scan\n');
});

t.test('a save whose unsynced names are all taken is still kept, not deleted with the path', async (t) => {
  const folder = await tempDir(t, 'save-aside-taken');
  await writeFile(join(folder, 'f'), 'as scanned\n');
  const store = await scanned(t, folder);
  const head = store.head('f');
  if (head === undefined) throw new Error('no f');
  await writeFile(join(folder, 'f'), 'saved here since the scan\n');
  const { mtimeNs } = await lstat(join(folder, 'f'), { bigint: true });
  for (let k = 0n; k < 10n; k++)
    await writeFile(join(folder, unsyncedPath('f', mtimeNs + k * 1_000_000_000n, ME)), 'taken\n');
  await apply(folder, store, [peerRev('f', { deleted: true }, head)]);
  const kept = [];
  for (const n of await readdir(folder))
    if (n.startsWith('f.sync-unsynced-')) kept.push(await readFile(join(folder, n), 'utf8'));
  t.ok(kept.includes('saved here since the scan\n'), 'the save is beside the deleted path');
});

t.test('many conflict copies of one path in one sync are planned, not a failed sync', (t) => {
  // A peer's 30 concurrent revisions of f, and (synced here before) a file at each one's
  // conflict name with its bytes: each loser's copy is claimed from there, one decision each.
  const n = 30;
  const body = (i: number): string => `version ${i}\n`;
  const theirs: RevisionEntry[] = [];
  return (async () => {
    const folder = await tempDir(t, 'many-copies');
    const store = await RevisionStore.open(folder, { nodeId: ME });
    t.teardown(() => store.close());
    for (let i = 1; i <= n; i++) {
      const r = peerRev('f', { body: body(i) });
      theirs.push(
        revisionEntry({
          ...r.revision,
          mtimeNs: T0 + BigInt(i) * 1_000_000_000n,
          vector: vectorFrom({ [PEER]: i, [ME]: n + 1 - i }),
        }),
      );
    }
    store.write((w) => {
      for (const e of theirs) {
        const r = e.revision;
        const held = peerRev(conflictPath('f', r.mtimeNs, r.origin), { body: body(0) });
        const copyHere = revisionEntry({
          ...held.revision,
          contentRoot: r.contentRoot,
          size: r.size,
          origin: ME,
          vector: vectorFrom({ [ME]: 1 }),
        });
        w.put(copyHere);
        w.setHead(copyHere.id);
      }
    });
    const { plans } = planRemote(theirs, { store, keepConcurrentLocal: false, log: silentLogger });
    t.equal(plans.length, n, 'the path and each loser copy');
  })();
});

t.test("type changes both ways land in one sync, the peer's deletions below first", async (t) => {
  const folder = await tempDir(t, 'both-ways');
  await mkdir(join(folder, 'd', 'e'), { recursive: true });
  await writeFile(join(folder, 'd', 'e', 'f'), 'f\n');
  await writeFile(join(folder, 'd', 'g'), 'g\n');
  await writeFile(join(folder, 'a'), 'a file\n');
  const store = await scanned(t, folder);
  const seen = (p: string): RevisionEntry => headOf(store, p);
  const received = [
    peerRev('d', { body: 'd is a file now\n' }, seen('d')),
    ...['d/e/f', 'd/e', 'd/g'].map((p) => peerRev(p, { deleted: true }, seen(p))),
    peerRev('a', { dir: true }, seen('a')),
    peerRev('a/x', { body: 'x\n' }),
  ];
  const result = await apply(folder, store, received, { d: 'd is a file now\n', 'a/x': 'x\n' });
  t.same(result.skipped, []);
  t.equal(await readFile(join(folder, 'd'), 'utf8'), 'd is a file now\n');
  t.equal(await readFile(join(folder, 'a', 'x'), 'utf8'), 'x\n');
  t.same((await readdir(folder)).sort(), ['.clawpeer', 'a', 'd'], 'nothing moved aside: all of d was deleted');
});

t.test(
  "a peer's new mode for a file replaced here by a link out of the folder changes nothing out there",
  async (t) => {
    const folder = await tempDir(t, 'chmod-link');
    const outside = await tempDir(t, 'chmod-outside');
    await writeFile(join(folder, 'f'), 'same bytes\n', { mode: 0o644 });
    const store = await scanned(t, folder);
    const head = store.head('f');
    if (head === undefined) throw new Error('no f');
    await writeFile(join(outside, 'secret'), 'not ours\n', { mode: 0o600 });
    await chmod(join(outside, 'secret'), 0o600);
    await rm(join(folder, 'f'));
    await symlink(join(outside, 'secret'), join(folder, 'f'));
    const theirs = revisionEntry({
      ...head.revision,
      mode: 0o777,
      origin: PEER,
      vector: incrementVector(head.revision.vector, PEER),
    });
    await apply(folder, store, [theirs]).catch(() => undefined);
    t.equal((await lstat(join(outside, 'secret'))).mode & 0o777, 0o600, 'the file out there keeps its mode');
  },
);

t.test('nothing lands below what the same batch makes a file or link, nor through a link', async (t) => {
  const folder = await tempDir(t, 'below-nondir');
  await mkdir(join(folder, 'sub'));
  await mkdir(join(folder, 'was-dir'));
  const store = await scanned(t, folder);
  const wasDir = store.head('was-dir');
  if (wasDir === undefined) throw new Error('no was-dir');
  const received = [
    peerRev('p', { body: 'p\n' }),
    peerRev('p/q', { body: 'q\n' }),
    peerRev('l', { link: 'sub' }),
    peerRev('l/x', { body: 'x\n' }),
    peerRev('was-dir', { link: 'sub' }, wasDir),
    peerRev('was-dir/y', { body: 'y\n' }),
  ];
  const result = await apply(folder, store, received, { p: 'p\n', 'p/q': 'q\n', 'l/x': 'x\n', 'was-dir/y': 'y\n' });
  t.same(result.skipped.sort(), ['l/x', 'p/q', 'was-dir/y'], 'the paths below are left as is');
  t.equal(await readFile(join(folder, 'p'), 'utf8'), 'p\n');
  t.equal(await kindOf(join(folder, 'l')), 'link');
  t.equal(await kindOf(join(folder, 'was-dir')), 'link');
  t.same(await readdir(join(folder, 'sub')), [], 'nothing written through the links');
});

t.test('a link out of the folder from the peer is left as is, by depth of its path', async (t) => {
  const folder = await tempDir(t, 'link-out');
  const store = await scanned(t, folder);
  const received = [
    peerRev('a/up', { link: '../..' }),
    peerRev('abs', { link: '/etc' }),
    peerRev('a/ok', { link: '..' }),
  ];
  const result = await apply(folder, store, received);
  t.same(result.skipped.sort(), ['a/up', 'abs']);
  t.equal(await kindOf(join(folder, 'a', 'ok')), 'link', 'one that stays inside lands');
});

t.test("a directory moved aside does not take a name the peer's batch puts a file at", async (t) => {
  const folder = await tempDir(t, 'aside-claimed');
  await mkdir(join(folder, 'd'));
  await writeFile(join(folder, 'd', 'a'), 'synced\n');
  const store = await scanned(t, folder);
  const head = store.head('d');
  if (head === undefined) throw new Error('no d');
  await writeFile(join(folder, 'd', 'new'), 'made here since the scan\n');
  const { mtimeNs } = await lstat(join(folder, 'd'), { bigint: true });
  const first = unsyncedPath('d', mtimeNs, ME);
  const received = [peerRev('d', { link: 'elsewhere' }, head), peerRev(first, { body: "the peer's file\n" })];
  const result = await apply(folder, store, received, { [first]: "the peer's file\n" });
  t.same(result.skipped, []);
  t.equal(await readFile(join(folder, first), 'utf8'), "the peer's file\n", "the peer's file lands at its name");
  const asideDirs = [];
  for (const n of await readdir(folder))
    if (n.startsWith('d.sync-unsynced-') && (await kindOf(join(folder, n))) === 'dir') asideDirs.push(n);
  t.equal(asideDirs.length, 1, 'the directory is aside under another name');
  t.equal(await readFile(join(folder, asideDirs[0] ?? 'none', 'new'), 'utf8'), 'made here since the scan\n');
});

t.test('a directory holding an ignored file stays when the peer turns it into a file', async (t) => {
  // Moved aside, config/secrets.yml would be d.sync-unsynced-.../secrets.yml, which the rule no
  // longer matches: the next scan would record it and send it to the peer.
  const folder = await tempDir(t, 'ignored-inside');
  const rules = '/config/secrets.yml\n';
  await writeFile(join(folder, '.clawpeerignore'), rules);
  const ignore = syncIgnoreFrom(parseIgnoreFile(rules));
  await mkdir(join(folder, 'config'));
  await writeFile(join(folder, 'config', 'app.yml'), 'synced\n');
  await writeFile(join(folder, 'config', 'secrets.yml'), 'password: hunter2\n');
  const store = await scanned(t, folder, ignore);
  const seen = (p: string): RevisionEntry => headOf(store, p);
  t.equal(store.head('config/secrets.yml'), undefined, 'the ignored file is not recorded');
  const received = [
    peerRev('config', { body: 'config is a file now\n' }, seen('config')),
    peerRev('config/app.yml', { deleted: true }, seen('config/app.yml')),
  ];
  const result = await apply(folder, store, received, { config: 'config is a file now\n' }, ignore);
  t.same(result.skipped, ['config'], 'the type change is left as is');
  t.equal(
    await readFile(join(folder, 'config', 'secrets.yml'), 'utf8'),
    'password: hunter2\n',
    'the ignored file stays',
  );
  t.equal(await kindOf(join(folder, 'config', 'app.yml')), 'none', "the peer's deletion below lands");
  await scanFolder(store, folder, { chunking: DEFAULT_CHUNKING, ignore });
  t.same(
    [...store.heads()]
      .filter((e) => !e.revision.deleted && e.revision.path.includes('secrets'))
      .map((e) => e.revision.path),
    [],
    'the next scan records no copy of the ignored file',
  );
});

t.test('a directory holding files ignored by name anywhere still moves aside with them', async (t) => {
  const folder = await tempDir(t, 'ignored-anywhere');
  const rules = '*.o\n';
  await writeFile(join(folder, '.clawpeerignore'), rules);
  const ignore = syncIgnoreFrom(parseIgnoreFile(rules));
  await mkdir(join(folder, 'src'));
  await writeFile(join(folder, 'src', 'main.c'), 'int main;\n');
  await writeFile(join(folder, 'src', 'main.o'), 'object code\n');
  const store = await scanned(t, folder, ignore);
  const seen = (p: string): RevisionEntry => headOf(store, p);
  const received = [
    peerRev('src', { link: 'elsewhere' }, seen('src')),
    peerRev('src/main.c', { deleted: true }, seen('src/main.c')),
  ];
  const result = await apply(folder, store, received, {}, ignore);
  t.same(result.skipped, [], 'the type change lands');
  t.equal(await kindOf(join(folder, 'src')), 'link');
  const aside = (await readdir(folder)).filter((n) => n.startsWith('src.sync-unsynced-'));
  t.equal(await readFile(join(folder, aside[0] ?? 'none', 'main.o'), 'utf8'), 'object code\n', 'the .o moved aside');
});

t.test('a path with more concurrent revisions than a head is picked among is left as is', async (t) => {
  const folder = await tempDir(t, 'concurrent-flood');
  const store = await scanned(t, folder);
  // Each from another origin that saw nothing: every one concurrent with every other.
  const flood = Array.from({ length: MAX_CONCURRENT_REVISIONS + 1 }, (_, k) => {
    const e = peerRev('hot', { body: `version ${k}\n` });
    const origin = `12D3KooW${String(k).padStart(7, '0')}`;
    return revisionEntry({ ...e.revision, origin, vector: vectorFrom({ [origin]: 1 }) });
  });
  const calm = peerRev('calm', { body: 'calm\n' });
  const { plans, skipped } = planRemote([...flood, calm], { store, keepConcurrentLocal: false, log: silentLogger });
  t.same(skipped, ['hot'], 'the flooded path is left as is');
  t.same(
    plans.map((p) => p.path),
    ['calm'],
    'the rest of the folder lands',
  );
  // One fewer is a conflict like any other: a head is picked (the losers stay in history: the
  // peer serves only its current file at a path).
  const fewer = planRemote(flood.slice(1), { store, keepConcurrentLocal: false, log: silentLogger });
  t.same(fewer.skipped, []);
  t.same(
    fewer.plans.map((p) => p.path),
    ['hot'],
  );
});
