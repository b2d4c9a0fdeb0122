// Push and pull through the real CLI over loopback: byte-identical trees, no-clobber, --force,
// read-only shares, refused paths, a tampered frame, and resume after SIGKILL of either side.
import t from 'tap';
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { CLI, initNode, jsonLines, runCli, startListener, type RunningListener } from './cli-harness.js';
import { makeTree, snapshot } from './tree-helpers.js';
import { EARLY_MAX_BYTES } from '../../src/exchange/transfer-send.js';
import { zstdCodec } from '../../src/session/chunk-compression.js';

const a = await initNode('pa');
const b = await initNode('pb');
const work = await mkdtemp(path.join(tmpdir(), 'clawpeer-pp-'));
const roShare = path.join(work, 'ro');
await mkdir(roShare);
await writeFile(path.join(roShare, 'readme.txt'), 'read me\n');
const c = await initNode('pc');
const privShare = path.join(work, 'private');
await runCli(['--home', a.home, 'pair', 'add', b.id, '--name', 'bob']);
await runCli(['--home', a.home, 'pair', 'add', c.id, '--name', 'carol']);
const keepShare = path.join(work, 'keep');
const shareArgs = ['--share', `inbox=${path.join(work, 'inbox')}`, '--share', `ro=${roShare}:ro`, '--share', `private=${privShare}`, '--allow', 'private=carol', '--share', `keep=${keepShare}:nodelete`];
let listener: RunningListener = await startListener(a.home, shareArgs);
const pairAlice = async (): Promise<void> => {
  await runCli(['--home', b.home, 'pair', 'add', a.id, '--name', 'alice', '--addr', `127.0.0.1:${listener.port}`]);
};
await pairAlice();
t.teardown(() => listener.stop('SIGKILL'));

const done = (stdout: string): Record<string, unknown> => {
  const last = jsonLines(stdout).at(-1);
  if (last?.['event'] !== 'done') throw new Error(`no done event in ${stdout}`);
  return last;
};

t.test('push a tree, then pull it back: byte-identical with modes, mtimes, empty files/dirs, symlinks', async (t) => {
  const src = path.join(work, 'tree');
  await makeTree(src);
  const push = await runCli(['--home', b.home, 'push', src, 'alice', '--json']);
  t.equal(push.code, 0, push.stderr);
  const d = done(push.stdout);
  t.match(d, { files: 6, chunksSkipped: 0 });
  t.ok((d['wireBytes'] as number) >= (d['bytes'] as number), 'wireBytes counts at least the payload');
  t.same(await snapshot(path.join(work, 'inbox', 'tree')), await snapshot(src));

  const again = await runCli(['--home', b.home, 'push', src, 'alice:inbox', '--json']);
  t.equal(again.code, 0);
  const a = done(again.stdout);
  t.match(a, { files: 0, bytes: 0 }, 'identical content is a no-op');
  // Early chunks (sent before the Want says the listener has them) are the only data that moves.
  t.ok((a['wireBytes'] as number) < EARLY_MAX_BYTES + (64 << 10), `the repeat sent ${String(a['wireBytes'])} bytes, at most the early-chunk budget`);

  const dest = path.join(work, 'pulled');
  const pull = await runCli(['--home', b.home, 'pull', 'alice:inbox/tree', dest, '--json', '--streams', '2', '--window', '4']);
  t.equal(pull.code, 0, pull.stderr);
  t.match(done(pull.stdout), { streams: 2, window: 4 });
  // Receiving progress counts files published: its last event has them all.
  const receiving = jsonLines(pull.stdout).filter((l) => l['event'] === 'progress' && l['phase'] === 'receiving');
  t.ok(receiving.length > 0, 'the pull reported receiving progress');
  const lastEvent = receiving.at(-1)!;
  t.ok((lastEvent['totalFiles'] as number) > 0 && lastEvent['files'] === lastEvent['totalFiles'], `last receiving event: ${JSON.stringify(lastEvent)}`);
  // Its byte total is what the pull lacked, known once it looked: all of it arrived.
  t.ok((lastEvent['totalBytes'] as number) > 0 && lastEvent['bytes'] === lastEvent['totalBytes'], `receiving bytes of a known total: ${JSON.stringify(lastEvent)}`);
  t.same(await snapshot(path.join(dest, 'tree')), await snapshot(src));
});

t.test('early chunks: a stream sends its first window before the Want; the listener drops the ones it holds', async (t) => {
  const src = path.join(work, 'pages');
  await mkdir(src);
  for (let i = 0; i < 30; i++) await writeFile(path.join(src, `p${String(i).padStart(2, '0')}.bin`), randomBytes(4096));
  // Without compression: its attempts are async hops that let the Want overtake the early window.
  const args = ['--home', b.home, 'push', src, 'alice', '--json', '--streams', '1', '--window', '16', '--no-compress'];
  const first = await runCli(args);
  t.equal(first.code, 0, first.stderr);
  t.match(done(first.stdout), { files: 30, chunksSent: 30, chunksSkipped: 0 });
  const sending = jsonLines(first.stdout).filter((l) => l['event'] === 'progress' && l['phase'] === 'sending');
  t.match(sending.at(-1), { files: 30, totalFiles: 30, bytes: 30 * 4096, totalBytes: 30 * 4096 }, 'the last sending event: the listener holds all 30 files, all bytes sent');
  t.same(await snapshot(path.join(work, 'inbox', 'pages')), await snapshot(src));
  // Again: the listener holds every chunk. One stream, window 16, 4 KiB chunks: exactly the
  // first window goes early (64 KiB, inside the budget), the Want then says nothing is lacking.
  const again = await runCli(args);
  t.equal(again.code, 0, again.stderr);
  t.match(done(again.stdout), { files: 0, chunksSent: 16, chunksSkipped: 30 });
  // Its total shrank to what went anyway, once the Want said the listener holds everything.
  const resent = jsonLines(again.stdout).filter((l) => l['event'] === 'progress' && l['phase'] === 'sending');
  t.match(resent.at(-1), { files: 30, totalBytes: 16 * 4096 }, 'the repeat\'s total: the early window only');
  t.same(await snapshot(path.join(work, 'inbox', 'pages')), await snapshot(src), 'nothing changed at the destination');
});

t.test('early chunks wait for a receiver that prepares longer than an unannounced stream may wait', async (t) => {
  // This listener holds a stream of a transfer it has not heard of for 200 ms, and prepares for
  // 1.5 s: the push's early streams must wait for the receiver because the request is read.
  const slow = await startListener(a.home, ['--share', `inbox=${path.join(work, 'slow-inbox')}`], {
    env: { CLAWPEER_TEST_WAITING_STREAM_MS: '200', CLAWPEER_TEST_DELAY_PREPARE_MS: '1500' },
  });
  t.teardown(() => slow.stop('SIGKILL'));
  const src = path.join(work, 'slow-pages');
  await mkdir(src);
  for (let i = 0; i < 5; i++) await writeFile(path.join(src, `p${i}.bin`), randomBytes(4096));
  const push = await runCli(['--home', b.home, 'push', src, 'alice', '--json', '--addr', `127.0.0.1:${slow.port}`]);
  t.equal(push.code, 0, push.stderr);
  t.match(done(push.stdout), { files: 5, chunksSent: 5 });
  t.same(await snapshot(path.join(work, 'slow-inbox', 'slow-pages')), await snapshot(src));
});

t.test('zstd: text travels compressed both ways, random bytes raw; --no-compress sends everything raw', { skip: zstdCodec() === null ? '@mongodb-js/zstd (optional) is not installed' : false }, async (t) => {
  const src = path.join(work, 'zlogs');
  await mkdir(path.join(src, 'old'), { recursive: true });
  const lines = (n: number, tag: string): string => Array.from({ length: n }, (_, i) => `2026-11-30T12:${String(i % 60).padStart(2, '0')}:00Z ${tag} request ${i} served in ${i % 97} ms\n`).join('');
  await writeFile(path.join(src, 'app.log'), lines(40_000, 'INFO')); // ~2.2 MB
  await writeFile(path.join(src, 'old', 'app.1.log'), lines(5_000, 'WARN'));
  await writeFile(path.join(src, 'noise.bin'), randomBytes(1 << 20));
  const push = await runCli(['--home', b.home, 'push', src, 'alice:inbox/z1', '--json']);
  t.equal(push.code, 0, push.stderr);
  const d = done(push.stdout);
  const bytes = d['bytes'] as number;
  t.ok((d['wireBytes'] as number) < 0.6 * bytes, `compressed push: ${String(d['wireBytes'])} wire bytes for ${bytes}`);
  t.ok((d['wireBytes'] as number) > 1 << 20, 'the random megabyte still crossed whole');
  t.ok((d['chunksCompressed'] as number) >= 1 && (d['chunksCompressed'] as number) < (d['chunksSent'] as number), `${String(d['chunksCompressed'])} of ${String(d['chunksSent'])} chunks went compressed (not the random ones)`);
  t.same(await snapshot(path.join(work, 'inbox', 'z1', 'zlogs')), await snapshot(src));

  // Other text (the listener would deduplicate the same): with --no-compress, all of it crosses.
  const other = path.join(work, 'zraw');
  await mkdir(other);
  await writeFile(path.join(other, 'app.log'), lines(40_000, 'DBUG'));
  const raw = await runCli(['--home', b.home, 'push', other, 'alice:inbox/z2', '--json', '--no-compress']);
  t.equal(raw.code, 0, raw.stderr);
  const r = done(raw.stdout);
  t.equal(r['chunksCompressed'], 0, '--no-compress: no chunk compressed');
  t.ok((r['wireBytes'] as number) >= (r['bytes'] as number), `--no-compress: ${String(r['wireBytes'])} wire bytes for ${String(r['bytes'])}`);
  t.same(await snapshot(path.join(work, 'inbox', 'z2', 'zraw')), await snapshot(other));

  // Pull: the listener is the sender and compresses too.
  const dest = path.join(work, 'zpulled');
  const pull = await runCli(['--home', b.home, 'pull', 'alice:inbox/z1/zlogs', dest, '--json']);
  t.equal(pull.code, 0, pull.stderr);
  t.ok((done(pull.stdout)['wireBytes'] as number) < 0.6 * bytes, 'the pull came compressed');
  t.same(await snapshot(path.join(dest, 'zlogs')), await snapshot(src));
});

t.test('--exclude leaves out matching files and directories on push and pull (rsync-style patterns)', async (t) => {
  const src = path.join(work, 'exc');
  for (const d of ['sub', 'node_modules/x', 'build', 'src/build', 'tmp/deep']) await mkdir(path.join(src, d), { recursive: true });
  const files: Record<string, string> = {
    'keep.txt': 'kept', 'a.log': 'log', 'sub/b.log': 'log', 'sub/keep.md': 'kept', 'node_modules/x/y.js': 'dep',
    'build/out.bin': 'built', 'src/build/inner.txt': 'kept: /build is anchored', cache: 'a file named cache', 'tmp/deep/t.txt': 'scratch',
  };
  for (const [rel, text] of Object.entries(files)) await writeFile(path.join(src, rel), text);
  const r = await runCli(['--home', b.home, 'push', src, 'alice:inbox/ex', '--json', '--exclude', '*.log', '--exclude', 'node_modules', '--exclude', '/build', '--exclude', 'tmp/', '--exclude', 'cache/']);
  t.equal(r.code, 0, r.stderr);
  t.match(done(r.stdout), { files: 4 });
  const got = (await snapshot(path.join(work, 'inbox', 'ex', 'exc'))).map((i) => i.path).sort();
  t.same(got, ['cache', 'keep.txt', 'src', 'src/build', 'src/build/inner.txt', 'sub', 'sub/keep.md'].sort(), 'only what no pattern matched arrived');
  // Pull applies the same patterns on the listener's side: push the whole tree, pull it back filtered.
  const full = await runCli(['--home', b.home, 'push', src, 'alice:inbox/exfull', '--json']);
  t.equal(full.code, 0, full.stderr);
  t.match(done(full.stdout), { files: 9 });
  const dest = path.join(work, 'expulled');
  const pull = await runCli(['--home', b.home, 'pull', 'alice:inbox/exfull/exc', dest, '--json', '--exclude', '*.log', '--exclude', 'node_modules', '--exclude', '/build', '--exclude', 'tmp/', '--exclude', 'cache/']);
  t.equal(pull.code, 0, pull.stderr);
  t.match(done(pull.stdout), { files: 4 });
  t.same((await snapshot(path.join(dest, 'exc'))).map((i) => i.path).sort(), got, 'a filtered pull brings the same files a filtered push sent');
  const bad = await runCli(['--home', b.home, 'push', src, 'alice:inbox/ex2', '--exclude', '[oops']);
  t.equal(bad.code, 2, bad.stderr);
  t.match(bad.stderr, /--exclude "\[oops": has a \[ without its \]/);

  // --include among the excludes, in order (the first that matches decides): only the .txt files, in every directory.
  const onlyText = ['--include=*/', '--include', '*.txt', '--exclude', '*'];
  const inc = await runCli(['--home', b.home, 'push', src, 'alice:inbox/exinc', '--json', ...onlyText]);
  t.equal(inc.code, 0, inc.stderr);
  t.match(done(inc.stdout), { files: 3 });
  const incGot = (await snapshot(path.join(work, 'inbox', 'exinc', 'exc'))).filter((i) => i.kind === 'file').map((i) => i.path).sort();
  t.same(incGot, ['keep.txt', 'src/build/inner.txt', 'tmp/deep/t.txt']);
  // A pull sends the rules in order (feature 'filter'); the listener applies them to what it sends.
  const incDest = path.join(work, 'exinc-pulled');
  const incPull = await runCli(['--home', b.home, 'pull', 'alice:inbox/exfull/exc', incDest, '--json', ...onlyText]);
  t.equal(incPull.code, 0, incPull.stderr);
  t.same((await snapshot(path.join(incDest, 'exc'))).filter((i) => i.kind === 'file').map((i) => i.path).sort(), incGot);
  // The same rules from files (rsync's --include-from/--exclude-from), each where its flag stands.
  const rulesDir = await mkdtemp(path.join(tmpdir(), 'clawpeer-rules-'));
  await writeFile(path.join(rulesDir, 'include'), '# directories, then text\n*/\n\n*.txt\n');
  await writeFile(path.join(rulesDir, 'exclude'), '; everything else\n*\n');
  const fromDest = path.join(work, 'exinc-from');
  const fromPull = await runCli(['--home', b.home, 'pull', 'alice:inbox/exfull/exc', fromDest, '--json', '--include-from', path.join(rulesDir, 'include'), `--exclude-from=${path.join(rulesDir, 'exclude')}`]);
  t.equal(fromPull.code, 0, fromPull.stderr);
  t.same((await snapshot(path.join(fromDest, 'exc'))).filter((i) => i.kind === 'file').map((i) => i.path).sort(), incGot, 'the files read as the flags were');
  const missing = await runCli(['--home', b.home, 'push', src, 'alice:inbox/ex3', '--exclude-from', path.join(rulesDir, 'nope')]);
  t.equal(missing.code, 2, missing.stderr);
  t.match(missing.stderr, /--exclude-from .*nope: cannot read it/);
});

t.test('--bwlimit caps what a push sends, what the listener sends a pull, and listen --bwlimit all it sends; a bad rate is a usage error', async (t) => {
  const src = path.join(work, 'capped');
  await mkdir(src);
  await writeFile(path.join(src, 'one.bin'), randomBytes(512 << 10));
  // 512 KiB at 512 KiB/s, less the limiter's burst (a tenth of a second's worth): >= 0.9 s. The
  // listener's publish deadline is cut to 0.3 s: a push that is slow to send is not late.
  const minSeconds = 0.75;
  const push = await runCli(['--home', b.home, 'push', src, 'alice:inbox', '--json', '--bwlimit', '512KiB'], { env: { CLAWPEER_TEST_PUBLISH_TIMEOUT_MS: '300' } });
  t.equal(push.code, 0, push.stderr);
  const pushed = done(push.stdout);
  t.match(pushed, { files: 1, bytes: 512 << 10 });
  t.ok(Number(pushed['seconds']) >= minSeconds, `the push took ${String(pushed['seconds'])} s, no less than the cap allows`);
  t.same(await snapshot(path.join(work, 'inbox', 'capped')), await snapshot(src), 'byte-identical');
  const dest = path.join(work, 'capped-pulled');
  const pull = await runCli(['--home', b.home, 'pull', 'alice:inbox/capped', dest, '--json', '--bwlimit', '4mbit']);
  t.equal(pull.code, 0, pull.stderr);
  const pulled = done(pull.stdout);
  t.ok(Number(pulled['seconds']) >= minSeconds, `the pull took ${String(pulled['seconds'])} s: the listener sent within 4 Mbit/s`);
  t.same(await snapshot(path.join(dest, 'capped')), await snapshot(src), 'byte-identical');
  const bad = await runCli(['--home', b.home, 'push', src, 'alice:inbox/c2', '--bwlimit', 'fast']);
  t.equal(bad.code, 2, bad.stderr);
  t.match(bad.stderr, /--bwlimit "fast": expected a rate such as 500 \(KiB\/s\), 2MiB, 10MB\/s or 100mbit/);

  // listen --bwlimit caps what the listener sends, though the pull asks for no cap.
  const capped = await startListener(a.home, ['--share', `inbox=${path.join(work, 'inbox')}`, '--bwlimit', '512KiB']);
  t.teardown(() => capped.stop('SIGKILL'));
  const dest2 = path.join(work, 'capped-pulled-2');
  const pull2 = await runCli(['--home', b.home, 'pull', 'alice:inbox/capped', dest2, '--json', '--addr', `127.0.0.1:${capped.port}`]);
  t.equal(pull2.code, 0, pull2.stderr);
  t.ok(Number(done(pull2.stdout)['seconds']) >= minSeconds, `the pull took ${String(done(pull2.stdout)['seconds'])} s: the listener kept to its own cap`);
  t.same(await snapshot(path.join(dest2, 'capped')), await snapshot(src), 'byte-identical');
  const badListen = await runCli(['--home', a.home, 'listen', '--port', '0', '--bwlimit', '0']);
  t.equal(badListen.code, 2, badListen.stderr);
  t.match(badListen.stderr, /--bwlimit "0": must be between 1 KiB\/s and 4 GiB\/s/);
});

t.test('--dry-run (-n) lists what push and pull would publish and send, and writes nothing', async (t) => {
  const src = path.join(work, 'dry');
  await mkdir(path.join(src, 'sub'), { recursive: true });
  const big = randomBytes(2 << 20);
  await writeFile(path.join(src, 'big.bin'), big);
  await writeFile(path.join(src, 'note.txt'), 'first\n');
  await writeFile(path.join(src, 'sub', 'small.bin'), randomBytes(300 << 10));
  await symlink('note.txt', path.join(src, 'link'));
  const inbox = path.join(work, 'inbox');
  const events = (stdout: string): Record<string, unknown>[] => jsonLines(stdout).filter((e) => e['event'] === 'would-publish');
  const created = (stdout: string): string[] => jsonLines(stdout).filter((e) => e['event'] === 'would-create').map((e) => `${String(e['kind'])} ${String(e['path'])}${e['kind'] === 'symlink' ? ` -> ${String(e['target'])}` : ''}`).sort();

  // Nothing there yet: every file, every byte.
  const before = await snapshot(inbox);
  const first = await runCli(['--home', b.home, 'push', src, 'alice', '--json', '-n']);
  t.equal(first.code, 0, first.stderr);
  t.same(events(first.stdout).map((e) => e['path']).sort(), ['dry/big.bin', 'dry/note.txt', 'dry/sub/small.bin']);
  t.match(done(first.stdout), { dryRun: true, files: 3, filesUnchanged: 0, bytesToSend: (2 << 20) + 6 + (300 << 10), dirsToCreate: 2, symlinksToCreate: 1 });
  t.same(created(first.stdout), ['dir dry', 'dir dry/sub', 'symlink dry/link -> note.txt'], 'the directories and the symlink it would create');
  t.same(await snapshot(inbox), before, 'the listener wrote nothing: no directory, no temp file');

  // After the real push, one byte of big.bin changes and a file is added: only those, and of
  // big.bin only its changed chunk.
  t.equal((await runCli(['--home', b.home, 'push', src, 'alice'])).code, 0);
  big[1 << 20] = (big[1 << 20] ?? 0) ^ 0xff;
  await writeFile(path.join(src, 'big.bin'), big);
  await writeFile(path.join(src, 'sub', 'new.txt'), 'new\n');
  const pushed = await snapshot(inbox);
  const second = await runCli(['--home', b.home, 'push', src, 'alice', '--json', '--dry-run', '--force']);
  t.equal(second.code, 0, second.stderr);
  const listed = events(second.stdout);
  t.same(listed.map((e) => e['path']).sort(), ['dry/big.bin', 'dry/sub/new.txt']);
  const bigSend = Number(listed.find((e) => e['path'] === 'dry/big.bin')?.['sendBytes']);
  t.ok(bigSend > 0 && bigSend <= 2 << 20 >> 1, `only the changed chunks of big.bin would travel (${bigSend} of ${2 << 20} bytes)`);
  t.match(done(second.stdout), { dryRun: true, files: 2, filesUnchanged: 2, dirsToCreate: 0, symlinksToCreate: 0 });
  t.same(created(second.stdout), [], 'the directories and the link are there already');
  t.same(await snapshot(inbox), pushed, 'still nothing written');
  // Without --force the changed file is refused, as the real push would be.
  // Listed where they would land: under the remote path.
  const under = await runCli(['--home', b.home, 'push', src, 'alice:inbox/elsewhere', '--json', '-n']);
  t.equal(under.code, 0, under.stderr);
  t.same(events(under.stdout).map((e) => e['path']).sort(), ['elsewhere/dry/big.bin', 'elsewhere/dry/note.txt', 'elsewhere/dry/sub/new.txt', 'elsewhere/dry/sub/small.bin']);
  t.same(created(under.stdout), ['dir elsewhere/dry', 'dir elsewhere/dry/sub', 'symlink elsewhere/dry/link -> note.txt']);
  t.equal(done(under.stdout)['bytesToSend'], bigSend + 4, 'a copy elsewhere sends only what the share holds nowhere');
  const clash = await runCli(['--home', b.home, 'push', src, 'alice', '-n']);
  t.equal(clash.code, 5, clash.stderr);
  t.match(clash.stderr, /big\.bin exists and is a file with different content: not replaced \(use --force, --update or --ignore-existing\)/);

  // Pull: into a copy holding the old big.bin, and into a directory that does not exist.
  const local = path.join(work, 'dry-local');
  t.equal((await runCli(['--home', b.home, 'pull', 'alice:inbox/dry', local])).code, 0);
  await writeFile(path.join(local, 'dry', 'note.txt'), 'changed here\n');
  const localBefore = await snapshot(local);
  const pull = await runCli(['--home', b.home, 'pull', 'alice:inbox/dry', local, '--json', '-n', '--force']);
  t.equal(pull.code, 0, pull.stderr);
  t.same(events(pull.stdout).map((e) => e['path']), ['dry/note.txt']);
  t.same(created(pull.stdout), []);
  t.match(done(pull.stdout), { dryRun: true, files: 1, filesUnchanged: 2, bytesToSend: 6 });
  t.same(await snapshot(local), localBefore, 'the local copy is untouched');
  t.equal(await readFile(path.join(local, 'dry', 'note.txt'), 'utf8'), 'changed here\n');
  const nowhere = path.join(work, 'dry-nowhere');
  const fresh = await runCli(['--home', b.home, 'pull', 'alice:inbox/dry', nowhere, '--json', '-n']);
  t.equal(fresh.code, 0, fresh.stderr);
  t.match(done(fresh.stdout), { dryRun: true, files: 3 });
  t.same(created(fresh.stdout), ['dir dry', 'dir dry/sub', 'symlink dry/link -> note.txt'], 'into nothing: every directory and link is new');
  t.notOk(existsSync(nowhere), 'the missing destination was not created');
});

t.test('--ignore-existing keeps different files already there; --update (-u) replaces only those not newer; both exclude --force', async (t) => {
  const T = Date.now() - 24 * 3600_000;
  const at = async (file: string, text: string, mtimeMs: number): Promise<void> => {
    await writeFile(file, text);
    await utimes(file, new Date(mtimeMs), new Date(mtimeMs));
  };
  const src = path.join(work, 'exist');
  await mkdir(src);
  for (const name of ['a.txt', 'b.txt', 'c.txt']) await at(path.join(src, name), `new ${name}`, T);
  t.equal((await runCli(['--home', b.home, 'push', src, 'alice:inbox/ex-keep'])).code, 0);
  const copy = path.join(work, 'inbox', 'ex-keep', 'exist');
  await at(path.join(copy, 'a.txt'), 'dest a', T + 3600_000); // newer than the source's
  await at(path.join(copy, 'b.txt'), 'dest b', T - 3600_000); // older
  const text = async (dir: string, name: string): Promise<string> => readFile(path.join(dir, name), 'utf8');

  const keep = await runCli(['--home', b.home, 'push', src, 'alice:inbox/ex-keep', '--ignore-existing', '--json']);
  t.equal(keep.code, 0, keep.stderr);
  t.match(done(keep.stdout), { files: 0, kept: 2 }, 'both different files kept; c.txt is identical');
  t.same([await text(copy, 'a.txt'), await text(copy, 'b.txt')], ['dest a', 'dest b']);

  const update = await runCli(['--home', b.home, 'push', src, 'alice:inbox/ex-keep', '-u', '--json']);
  t.equal(update.code, 0, update.stderr);
  t.match(done(update.stdout), { files: 1, kept: 1 });
  t.same([await text(copy, 'a.txt'), await text(copy, 'b.txt')], ['dest a', 'new b.txt'], 'the newer a.txt kept, the older b.txt replaced');

  // A pull's own receiver applies it: here a.txt is newer than the share's, b.txt older.
  const local = path.join(work, 'ex-pulled');
  t.equal((await runCli(['--home', b.home, 'pull', 'alice:inbox/ex-keep/exist', local])).code, 0);
  await at(path.join(local, 'exist', 'a.txt'), 'local a', T + 7200_000);
  await at(path.join(local, 'exist', 'b.txt'), 'local b', T - 7200_000);
  const pulled = await runCli(['--home', b.home, 'pull', 'alice:inbox/ex-keep/exist', local, '--update', '--json']);
  t.equal(pulled.code, 0, pulled.stderr);
  t.match(done(pulled.stdout), { files: 1, kept: 1 });
  t.same([await text(path.join(local, 'exist'), 'a.txt'), await text(path.join(local, 'exist'), 'b.txt')], ['local a', 'new b.txt']);

  const both = await runCli(['--home', b.home, 'push', src, 'alice:inbox/ex-keep', '--force', '-u']);
  t.equal(both.code, 2, both.stderr);
  t.match(both.stderr, /--force and --update exclude each other/);
});

t.test('push of several sources (LOCAL... REMOTE): each lands under its own name in one transfer; two of the same name are refused', async (t) => {
  const one = path.join(work, 'multi-1');
  const two = path.join(work, 'multi-2');
  await mkdir(path.join(one, 'tree'), { recursive: true });
  await mkdir(two);
  await writeFile(path.join(one, 'a.txt'), 'a');
  await writeFile(path.join(one, 'tree', 'b.txt'), 'b');
  await writeFile(path.join(two, 'c.txt'), 'c');
  await writeFile(path.join(two, 'a.txt'), 'other a');
  const r = await runCli(['--home', b.home, 'push', path.join(one, 'a.txt'), path.join(one, 'tree'), path.join(two, 'c.txt'), 'alice:inbox/multi', '--json']);
  t.equal(r.code, 0, r.stderr);
  t.match(done(r.stdout), { files: 3 });
  const dest = path.join(work, 'inbox', 'multi');
  t.same((await snapshot(dest)).map((i) => `${i.kind} ${i.path}`), ['file a.txt', 'file c.txt', 'dir tree', 'file tree/b.txt']);
  const clash = await runCli(['--home', b.home, 'push', path.join(one, 'a.txt'), path.join(two, 'a.txt'), 'alice:inbox/multi']);
  t.equal(clash.code, 2, clash.stderr);
  t.match(clash.stderr, /would both land as a\.txt: push them separately/);
  const lone = await runCli(['--home', b.home, 'push', 'alice:inbox']);
  t.equal(lone.code, 2, lone.stderr);
  t.match(lone.stderr, /push needs what to send and where/);
  // --remove-source-files removes what was sent from each source.
  const moved = await runCli(['--home', b.home, 'push', path.join(one, 'tree'), path.join(two, 'c.txt'), 'alice:inbox/multi-moved', '--remove-source-files', '--json']);
  t.equal(moved.code, 0, moved.stderr);
  t.match(done(moved.stdout), { files: 2, sourceRemoved: 2 });
  t.notOk(existsSync(path.join(one, 'tree', 'b.txt')) || existsSync(path.join(two, 'c.txt')));
  t.ok(existsSync(path.join(two, 'a.txt')), 'what was not sent stays');
});

t.test('pull of several remote paths (REMOTE... LOCAL): each lands under its own name, reported as one; other peers or clashing names are refused', async (t) => {
  const local = path.join(work, 'multi-pulled');
  const r = await runCli(['--home', b.home, 'pull', 'alice:inbox/multi/tree', 'alice:inbox/multi/c.txt', 'alice:ro/readme.txt', local, '-i', '--json']);
  t.equal(r.code, 0, r.stderr);
  t.match(done(r.stdout), { files: 3 });
  t.same(jsonLines(r.stdout).filter((e) => e['event'] === 'published').map((e) => e['path']).sort(), ['c.txt', 'readme.txt', 'tree/b.txt']);
  t.same((await snapshot(local)).map((i) => `${i.kind} ${i.path}`), ['file c.txt', 'file readme.txt', 'dir tree', 'file tree/b.txt']);
  // One count up across the three pulls: the last file of each is told at once.
  const progress = jsonLines(r.stdout).filter((e) => e['event'] === 'progress');
  const files = progress.map((e) => Number(e['files']));
  t.same(files, [...files].sort((x, y) => x - y), `files done never go back: ${files.join(',')}`);
  t.equal(Math.max(...files), 3, 'and reach all three');
  t.equal(Math.max(...progress.map((e) => Number(e['totalFiles']))), 3);
  const twoPeers = await runCli(['--home', b.home, 'pull', 'alice:inbox/multi/c.txt', 'carol:x/y', local]);
  t.equal(twoPeers.code, 2, twoPeers.stderr);
  t.match(twoPeers.stderr, /pull from one peer at a time: alice, carol/);
  const clash = await runCli(['--home', b.home, 'pull', 'alice:inbox/multi/c.txt', 'alice:inbox/multi-moved/c.txt', local]);
  t.equal(clash.code, 2, clash.stderr);
  t.match(clash.stderr, /would both land as c\.txt/);
});

t.test('push --remove-source-files moves: the sent files and links go once the listener has them, directories stay', async (t) => {
  const src = path.join(work, 'moving');
  await mkdir(path.join(src, 'sub'), { recursive: true });
  await writeFile(path.join(src, 'a.txt'), 'a');
  await writeFile(path.join(src, 'sub', 'b.bin'), randomBytes(100_000));
  const before = await snapshot(src);
  const r = await runCli(['--home', b.home, 'push', src, 'alice:inbox/moved', '--remove-source-files', '--json']);
  t.equal(r.code, 0, r.stderr);
  t.match(done(r.stdout), { files: 2, sourceRemoved: 2 });
  t.same(await snapshot(path.join(work, 'inbox', 'moved', 'moving')), before, 'the listener has the tree');
  t.same((await snapshot(src)).map((i) => `${i.kind} ${i.path}`), ['dir sub'], 'only the directories stay here');
  const pull = await runCli(['--home', b.home, 'pull', 'alice:inbox/moved', path.join(work, 'moved-back'), '--remove-source-files']);
  t.equal(pull.code, 2, pull.stderr);
  t.match(pull.stderr, /--remove-source-files applies to push/);
});

t.test('--delete removes what the pushed or pulled directories hold beyond the source, after a dry run shows it', async (t) => {
  const src = path.join(work, 'mirror');
  await mkdir(path.join(src, 'sub'), { recursive: true });
  await writeFile(path.join(src, 'a.txt'), 'a');
  await writeFile(path.join(src, 'sub', 'b.txt'), 'b');
  t.equal((await runCli(['--home', b.home, 'push', src, 'alice:inbox/m'])).code, 0);
  const copy = path.join(work, 'inbox', 'm', 'mirror');
  await rm(path.join(src, 'sub'), { recursive: true });
  await writeFile(path.join(copy, 'extra.txt'), 'not in the source');
  await writeFile(path.join(copy, 'notes.log'), 'excluded: protected');
  await writeFile(path.join(work, 'inbox', 'm', 'sibling.txt'), 'beside the pushed directory');
  const listed = (stdout: string, event: string): unknown[] => jsonLines(stdout).filter((e) => e['event'] === event).map((e) => e['path']);
  const before = await snapshot(path.join(work, 'inbox', 'm'));
  const dry = await runCli(['--home', b.home, 'push', src, 'alice:inbox/m', '--delete', '--exclude', '*.log', '-n', '--json']);
  t.equal(dry.code, 0, dry.stderr);
  t.same(listed(dry.stdout, 'would-delete'), ['m/mirror/extra.txt', 'm/mirror/sub/b.txt', 'm/mirror/sub'], 'contents before their directory; the excluded file and the sibling are not listed');
  t.match(done(dry.stdout), { dryRun: true, deleted: 3 });
  t.same(await snapshot(path.join(work, 'inbox', 'm')), before, 'the dry run removed nothing');
  const real = await runCli(['--home', b.home, 'push', src, 'alice:inbox/m', '--delete', '--exclude', '*.log', '--json']);
  t.equal(real.code, 0, real.stderr);
  t.same(listed(real.stdout, 'deleted'), ['m/mirror/extra.txt', 'm/mirror/sub/b.txt', 'm/mirror/sub']);
  t.match(done(real.stdout), { deleted: 3 });
  t.same((await readdir(copy)).sort(), ['a.txt', 'notes.log']);
  t.ok(existsSync(path.join(work, 'inbox', 'm', 'sibling.txt')), 'the sibling of the pushed directory stays');

  // pull --delete: the local copy of the pulled directory loses what the share's lacks; beside it, nothing.
  const local = path.join(work, 'mirror-pulled');
  t.equal((await runCli(['--home', b.home, 'pull', 'alice:inbox/m/mirror', local])).code, 0);
  await writeFile(path.join(local, 'mirror', 'junk.txt'), 'local only');
  await writeFile(path.join(local, 'other.txt'), 'beside the pulled directory');
  const pulled = await runCli(['--home', b.home, 'pull', 'alice:inbox/m/mirror', local, '--delete', '--json']);
  t.equal(pulled.code, 0, pulled.stderr);
  t.same(listed(pulled.stdout, 'deleted'), ['mirror/junk.txt']);
  t.same(await snapshot(path.join(local, 'mirror')), await snapshot(copy));
  t.ok(existsSync(path.join(local, 'other.txt')));

  // --max-delete: over the cap nothing is removed (the rest is published), exit 1; within it, as usual.
  await writeFile(path.join(copy, 'x1.txt'), 'x');
  await writeFile(path.join(copy, 'x2.txt'), 'x');
  const capped = await runCli(['--home', b.home, 'push', src, 'alice:inbox/m', '--delete', '--exclude', '*.log', '--max-delete', '1', '--json']);
  t.equal(capped.code, 1, capped.stderr);
  t.match(done(capped.stdout.split('\n').filter((l) => !l.includes('"event":"error"')).join('\n')), { deleted: 0 });
  t.match(capped.stderr, /--delete would remove 2 paths, more than --max-delete 1: none was removed/);
  t.same((await readdir(copy)).sort(), ['a.txt', 'notes.log', 'x1.txt', 'x2.txt'], 'nothing removed');
  const cappedPull = await runCli(['--home', b.home, 'pull', 'alice:inbox/m/mirror', local, '--delete', '--max-delete', '0']);
  t.equal(cappedPull.code, 0, 'nothing to remove here: within any cap');
  await writeFile(path.join(local, 'mirror', 'junk2.txt'), 'local only');
  const overPull = await runCli(['--home', b.home, 'pull', 'alice:inbox/m/mirror', local, '--delete', '--max-delete', '0']);
  t.equal(overPull.code, 1, overPull.stderr);
  t.match(overPull.stderr, /more than --max-delete 0/);
  t.ok(existsSync(path.join(local, 'mirror', 'junk2.txt')));
  const within = await runCli(['--home', b.home, 'push', src, 'alice:inbox/m', '--delete', '--exclude', '*.log', '--max-delete', '2', '--json']);
  t.equal(within.code, 0, within.stderr);
  t.match(done(within.stdout), { deleted: 2 });
  const noDelete = await runCli(['--home', b.home, 'push', src, 'alice:inbox/m', '--max-delete', '2']);
  t.equal(noDelete.code, 2);
  t.match(noDelete.stderr, /--max-delete limits --delete: give --delete too/);

  // A share served with :nodelete takes pushes, but not --delete (nor its dry run).
  t.match(listener.ready['shares'], [{}, {}, {}, { name: 'keep', noDelete: true }]);
  t.equal((await runCli(['--home', b.home, 'push', src, 'alice:keep'])).code, 0, 'a plain push is taken');
  const refused = await runCli(['--home', b.home, 'push', src, 'alice:keep', '--delete', '-n']);
  t.equal(refused.code, 3, refused.stderr);
  t.match(refused.stderr, /share keep refuses push --delete \(it is served with :nodelete\)/);
});

t.test('--backup keeps what --force, --update and --delete replace or remove: beside it (NAME~) or under --backup-dir; --delete spares backups', async (t) => {
  const src = path.join(work, 'bk');
  await mkdir(path.join(src, 'sub'), { recursive: true });
  await writeFile(path.join(src, 'a.txt'), 'a1');
  await writeFile(path.join(src, 'sub', 'b.txt'), 'b1');
  await symlink('a.txt', path.join(src, 'link'));
  t.equal((await runCli(['--home', b.home, 'push', src, 'alice:inbox/bk'])).code, 0);
  const copy = path.join(work, 'inbox', 'bk', 'bk');
  const text = (file: string): Promise<string> => readFile(file, 'utf8');

  // Beside: the replaced a.txt and the removed sub/b.txt are kept as NAME~; the new link replaces nothing.
  await writeFile(path.join(src, 'a.txt'), 'a2');
  await rm(path.join(src, 'sub', 'b.txt'));
  const beside = await runCli(['--home', b.home, 'push', src, 'alice:inbox/bk', '--force', '--delete', '-b', '--json']);
  t.equal(beside.code, 0, beside.stderr);
  t.match(done(beside.stdout), { files: 1, deleted: 1, backedUp: 2 });
  t.same([await text(path.join(copy, 'a.txt')), await text(path.join(copy, 'a.txt~')), await text(path.join(copy, 'sub', 'b.txt~'))], ['a2', 'a1', 'b1']);
  t.notOk(existsSync(path.join(copy, 'sub', 'b.txt')));

  // Again: --delete spares the backups (rsync's protect rule for the suffix); the older backup is replaced.
  await writeFile(path.join(src, 'a.txt'), 'a3');
  const again = await runCli(['--home', b.home, 'push', src, 'alice:inbox/bk', '--force', '--delete', '--backup', '--json']);
  t.equal(again.code, 0, again.stderr);
  t.match(done(again.stdout), { files: 1, deleted: 0, backedUp: 1 });
  t.same([await text(path.join(copy, 'a.txt')), await text(path.join(copy, 'a.txt~')), await text(path.join(copy, 'sub', 'b.txt~'))], ['a3', 'a2', 'b1']);

  // --backup-dir (relative to the destination, here inside the pushed directory) with a suffix; --delete spares that directory.
  await writeFile(path.join(src, 'a.txt'), 'a4');
  const dir = await runCli(['--home', b.home, 'push', src, 'alice:inbox/bk', '--force', '--delete', '--backup-dir', 'bk/old', '--suffix', '.bak', '--json']);
  t.equal(dir.code, 0, dir.stderr);
  t.match(done(dir.stdout), { files: 1, backedUp: 3 }, 'a.txt replaced; the two ~ files removed, so kept there too');
  t.same([await text(path.join(copy, 'a.txt')), await text(path.join(copy, 'old', 'bk', 'a.txt.bak'))], ['a4', 'a3']);
  t.same(await text(path.join(copy, 'old', 'bk', 'sub', 'b.txt~.bak')), 'b1');
  const dirAgain = await runCli(['--home', b.home, 'push', src, 'alice:inbox/bk', '--delete', '--backup-dir', 'bk/old', '--json']);
  t.equal(dirAgain.code, 0, dirAgain.stderr);
  t.match(done(dirAgain.stdout), { deleted: 0, backedUp: 0 }, 'the backup directory is not extraneous');

  // A pull keeps its own backups, under a directory of LOCAL.
  const local = path.join(work, 'bk-pulled');
  t.equal((await runCli(['--home', b.home, 'pull', 'alice:inbox/bk/bk/a.txt', local])).code, 0);
  await writeFile(path.join(local, 'a.txt'), 'local edit');
  const pulled = await runCli(['--home', b.home, 'pull', 'alice:inbox/bk/bk/a.txt', local, '--force', '--backup-dir', 'saved', '--json']);
  t.equal(pulled.code, 0, pulled.stderr);
  t.match(done(pulled.stdout), { files: 1, backedUp: 1 });
  t.same([await text(path.join(local, 'a.txt')), await text(path.join(local, 'saved', 'a.txt'))], ['a4', 'local edit']);

  const bad = await runCli(['--home', b.home, 'push', src, 'alice:inbox/bk', '--force', '--backup-dir', '../out']);
  t.equal(bad.code, 2, bad.stderr);
  t.match(bad.stderr, /--backup-dir "\.\.\/out" must be a relative path inside the destination/);
  const lone = await runCli(['--home', b.home, 'push', src, 'alice:inbox/bk', '--suffix', '.old']);
  t.equal(lone.code, 2, lone.stderr);
  t.match(lone.stderr, /--suffix names backups: give --backup or --backup-dir too/);
});

t.test('ls lists the shares this node may use, a directory, or (-r) everything below it; names and metadata only', async (t) => {
  const shares = await runCli(['--home', b.home, 'ls', 'alice', '--json']);
  t.equal(shares.code, 0, shares.stderr);
  t.same(jsonLines(shares.stdout).filter((e) => e['event'] === 'share'), [
    { event: 'share', name: 'inbox', readOnly: false, noDelete: false },
    { event: 'share', name: 'ro', readOnly: true, noDelete: false },
    { event: 'share', name: 'keep', readOnly: false, noDelete: true },
  ], 'not the private share, which allows carol only');

  const src = path.join(work, 'listed');
  await mkdir(path.join(src, 'sub'), { recursive: true });
  await writeFile(path.join(src, 'a.txt'), 'abc');
  await writeFile(path.join(src, 'sub', 'b.bin'), randomBytes(5000));
  await symlink('a.txt', path.join(src, 'link'));
  await utimes(path.join(src, 'a.txt'), new Date(1_700_000_000_000), new Date(1_700_000_000_000));
  t.equal((await runCli(['--home', b.home, 'push', src, 'alice:inbox/ls'])).code, 0);
  const entries = (stdout: string): Record<string, unknown>[] => jsonLines(stdout).filter((e) => e['event'] === 'entry');
  const top = await runCli(['--home', b.home, 'ls', 'alice:inbox/ls/listed', '--json']);
  t.equal(top.code, 0, top.stderr);
  t.same(entries(top.stdout).map((e) => `${String(e['kind'])} ${String(e['path'])}`), ['file a.txt', 'symlink link', 'dir sub'], 'the directory\'s own entries, in name order');
  t.match(entries(top.stdout)[0], { size: 3, mode: 0o644, mtimeMs: 1_700_000_000_000 });
  t.match(entries(top.stdout)[1], { target: 'a.txt' });
  const all = await runCli(['--home', b.home, 'ls', 'alice:inbox/ls', '-r', '--json']);
  t.same(entries(all.stdout).map((e) => e['path']), ['listed', 'listed/a.txt', 'listed/link', 'listed/sub', 'listed/sub/b.bin']);
  t.match(jsonLines(all.stdout).at(-1), { event: 'done', entries: 5 });
  const root = await runCli(['--home', b.home, 'ls', 'alice:inbox', '-r', '--json']);
  t.notOk(entries(root.stdout).some((e) => String(e['path']).startsWith('.clawpeer')), 'clawpeer\'s own state is never listed');
  const text = await runCli(['--home', b.home, 'ls', 'alice:inbox/ls/listed']);
  t.match(text.stdout, /^-rw-r--r-- +3 \d{4}\/\d\d\/\d\d \d\d:\d\d:\d\d a\.txt$/m);
  t.match(text.stdout, /^lrwxrwxrwx +5 .* link -> a\.txt$/m);

  const missing = await runCli(['--home', b.home, 'ls', 'alice:inbox/ls/nope']);
  t.equal(missing.code, 1, missing.stderr);
  t.match(missing.stderr, /inbox\/ls\/nope does not exist/);
  const internal = await runCli(['--home', b.home, 'ls', 'alice:inbox/.clawpeer']);
  t.match(internal.stderr, /clawpeer's own state/);
  const forbidden = await runCli(['--home', b.home, 'ls', 'alice:private']);
  t.equal(forbidden.code, 3, forbidden.stderr);
});

t.test('--itemize-changes (-i) lists each file published, new or replacing a different one, and each directory and symlink created, for push and pull', async (t) => {
  const src = path.join(work, 'items');
  await mkdir(path.join(src, 'd'), { recursive: true });
  await writeFile(path.join(src, 'a.txt'), 'a1');
  await writeFile(path.join(src, 'd', 'b.txt'), 'b1');
  await symlink('a.txt', path.join(src, 'link'));
  const events = (stdout: string, event: string): unknown[] => jsonLines(stdout).filter((e) => e['event'] === event);
  const first = await runCli(['--home', b.home, 'push', src, 'alice:inbox/it', '-i', '--json']);
  t.equal(first.code, 0, first.stderr);
  const byPath = (list: unknown[]): unknown[] => [...list].sort((x, y) => (String((x as { path: string }).path) < String((y as { path: string }).path) ? -1 : 1));
  t.same(byPath(events(first.stdout, 'published')), [{ event: 'published', path: 'it/items/a.txt', replaced: false }, { event: 'published', path: 'it/items/d/b.txt', replaced: false }], 'both, new');
  t.same(events(first.stdout, 'created'), [
    { event: 'created', path: 'it/items', kind: 'dir' },
    { event: 'created', path: 'it/items/d', kind: 'dir' },
    { event: 'created', path: 'it/items/link', kind: 'symlink', target: 'a.txt', replaced: false },
  ], 'the directories, then the symlink');
  await writeFile(path.join(src, 'a.txt'), 'a2');
  const again = await runCli(['--home', b.home, 'push', src, 'alice:inbox/it', '-i', '--force']);
  t.equal(again.code, 0, again.stderr);
  t.match(again.stdout, /^>fc\.{8} it\/items\/a\.txt$/m, 'the replaced file, rsync\'s code');
  t.notMatch(again.stdout, /b\.txt/, 'the identical one is not listed');
  t.notMatch(again.stdout, /^c[dL]/m, 'nor directories and links already there');
  await rm(path.join(src, 'link'));
  await symlink('d/b.txt', path.join(src, 'link'));
  const relinked = await runCli(['--home', b.home, 'push', src, 'alice:inbox/it', '-i', '--force']);
  t.equal(relinked.code, 0, relinked.stderr);
  t.match(relinked.stdout, /^cLc\.{8} it\/items\/link -> d\/b\.txt$/m, 'a link that replaced another');
  const local = path.join(work, 'items-pulled');
  const pulled = await runCli(['--home', b.home, 'pull', 'alice:inbox/it/items', local, '-i']);
  t.equal(pulled.code, 0, pulled.stderr);
  t.match(pulled.stdout, /^cd\+{9} items\/\n/m, 'a pull lists its directories first');
  t.match(pulled.stdout, /^cd\+{9} items\/d\/$/m);
  t.match(pulled.stdout, /^>f\+{9} items\/a\.txt$/m);
  t.match(pulled.stdout, /^>f\+{9} items\/d\/b\.txt$/m);
  t.match(pulled.stdout, /^cL\+{9} items\/link -> d\/b\.txt$/m);
});

t.test('a FIFO in a pushed or pulled tree is skipped with a warning, as rsync skips non-regular files; the rest goes', async (t) => {
  const src = path.join(work, 'special');
  await mkdir(src);
  await writeFile(path.join(src, 'a.txt'), 'a');
  execFileSync('mkfifo', [path.join(src, 'pipe')]);
  const push = await runCli(['--home', b.home, 'push', src, 'alice:inbox', '--json']);
  t.equal(push.code, 0, push.stderr);
  t.match(done(push.stdout), { files: 1 });
  t.match(push.stderr, /skipping a non-regular file path=.*special\/pipe kind=a FIFO/);
  t.same((await snapshot(path.join(work, 'inbox', 'special'))).map((i) => i.path), ['a.txt'], 'the file arrived, the FIFO did not');
  // The listener's share holds one too: a pull skips it there (the listener logs it).
  execFileSync('mkfifo', [path.join(work, 'inbox', 'special', 'pipe2')]);
  const local = path.join(work, 'special-pulled');
  const pull = await runCli(['--home', b.home, 'pull', 'alice:inbox/special', local, '--json']);
  t.equal(pull.code, 0, pull.stderr);
  t.same((await snapshot(path.join(local, 'special'))).map((i) => i.path), ['a.txt']);
  // -q (rsync's): no summary and no warning; errors still say what went wrong.
  const quiet = await runCli(['--home', b.home, 'push', src, 'alice:inbox/quiet', '-q']);
  t.equal(quiet.code, 0, quiet.stderr);
  t.equal(quiet.stdout, '', 'nothing on stdout');
  t.equal(quiet.stderr, '', 'not even the skipped FIFO');
  t.same((await snapshot(path.join(work, 'inbox', 'quiet', 'special'))).map((i) => i.path), ['a.txt'], 'and it did push');
  const quietJson = await runCli(['--home', b.home, 'push', src, 'alice:inbox/quiet', '-q', '--json']);
  t.match(done(quietJson.stdout), { files: 0 }, '--json keeps its done record');
  const fifo = await runCli(['--home', b.home, 'push', path.join(src, 'pipe'), 'alice:inbox', '--quiet']);
  t.equal(fifo.code, 1, 'a FIFO named on the command line is an error, not a silent no-op');
  t.match(fifo.stderr, /pipe is a FIFO: only files, directories and symlinks are sent/);
});

t.test('push - sends what is piped in as one file, named by --stdin-name (croc\'s pipe); nothing is left in the temp dir', async (t) => {
  const data = randomBytes(300_000);
  const spoolsBefore = (await readdir(tmpdir())).filter((n) => n.startsWith('clawpeer-stdin-')).length;
  const r = await runCli(['--home', b.home, 'push', '-', 'alice:inbox/piped', '--stdin-name', 'data.bin', '--json'], { stdin: data });
  t.equal(r.code, 0, r.stderr);
  t.match(done(r.stdout), { files: 1, bytes: data.length });
  t.same(await readFile(path.join(work, 'inbox', 'piped', 'data.bin')), data, 'byte-identical');
  const plain = await runCli(['--home', b.home, 'push', '-', 'alice:inbox/piped'], { stdin: Buffer.from('hi\n') });
  t.equal(plain.code, 0, plain.stderr);
  t.equal(await readFile(path.join(work, 'inbox', 'piped', 'stdin'), 'utf8'), 'hi\n', 'named stdin without --stdin-name');
  t.equal((await readdir(tmpdir())).filter((n) => n.startsWith('clawpeer-stdin-')).length, spoolsBefore, 'the spool is removed');
  // --exclude-from - reads standard input too (yargs alone would take the lone - for a flag).
  const rules = await runCli(['--home', b.home, 'push', path.join(work, 'items'), 'alice:inbox/fromstdin', '--exclude-from', '-', '--json'], { stdin: Buffer.from('*.txt\n') });
  t.equal(rules.code, 0, rules.stderr);
  t.notOk(existsSync(path.join(work, 'inbox', 'fromstdin', 'items', 'a.txt')), 'the pattern read from standard input applied');
  const both = await runCli(['--home', b.home, 'push', '-', 'alice', '--exclude-from', '-'], { stdin: Buffer.from('x') });
  t.equal(both.code, 2);
  t.match(both.stderr, /--exclude-from - and the source - both read standard input/);
  const bad = await runCli(['--home', b.home, 'push', '-', 'alice', '--stdin-name', 'a/b'], { stdin: Buffer.from('x') });
  t.equal(bad.code, 2);
  t.match(bad.stderr, /--stdin-name "a\/b": a file name, not a path/);
  const stray = await runCli(['--home', b.home, 'push', path.join(work, 'items'), 'alice', '--stdin-name', 'x']);
  t.equal(stray.code, 2);
  t.match(stray.stderr, /give - as a source/);
  // And back: pull PEER:SHARE/FILE - writes the file's bytes, and nothing else, on stdout.
  const out = await new Promise<Buffer>((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, '--home', b.home, 'pull', 'alice:inbox/piped/data.bin', '-'], { stdio: ['ignore', 'pipe', 'ignore'] });
    const parts: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => parts.push(d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(Buffer.concat(parts)) : reject(new Error(`pull - exited ${String(code)}`))));
  });
  t.same(out, data, 'the pulled file on standard output, byte-identical');
  const dir = await runCli(['--home', b.home, 'pull', 'alice:inbox/piped', '-']);
  t.equal(dir.code, 2);
  t.match(dir.stderr, /piped is a directory: pull it into a directory/);
  t.equal(dir.stdout, '');
});

t.test('no-clobber exits 5 naming the file; --force replaces', async (t) => {
  const src = path.join(work, 'clash');
  await mkdir(src);
  await writeFile(path.join(src, 'f.txt'), 'one');
  t.equal((await runCli(['--home', b.home, 'push', src, 'alice'])).code, 0);
  await writeFile(path.join(src, 'f.txt'), 'two!');
  const refused = await runCli(['--home', b.home, 'push', src, 'alice']);
  t.equal(refused.code, 5, refused.stderr);
  t.match(refused.stderr, /clash\/f\.txt exists .*use --force/);
  t.same((await snapshot(path.join(work, 'inbox', 'clash'))).map((i) => i.size), [3], 'old content kept');
  const forced = await runCli(['--home', b.home, 'push', src, 'alice', '--force']);
  t.equal(forced.code, 0, forced.stderr);
  t.same(await snapshot(path.join(work, 'inbox', 'clash')), await snapshot(src));
});

t.test('read-only share refuses pushes; unknown share and traversal are refused', async (t) => {
  const src = path.join(work, 'small.txt');
  await writeFile(src, 'x');
  const ro = await runCli(['--home', b.home, 'push', src, 'alice:ro']);
  t.equal(ro.code, 1);
  t.match(ro.stderr, /share ro is read-only/);
  t.same((await readdir(roShare)).filter((n) => n !== '.clawpeer'), ['readme.txt']);
  const unknown = await runCli(['--home', b.home, 'push', src, 'alice:nope']);
  t.match(unknown.stderr, /no share named "nope"/);
  for (const bad of ['alice:inbox/../escape', 'alice:inbox/.clawpeer/x', 'alice:inbox//abs']) {
    const r = await runCli(['--home', b.home, 'push', src, bad]);
    t.not(r.code, 0, bad);
    t.match(r.stderr, /refused|reserved|path/i, bad);
    t.notMatch(r.stderr, /WARN/, `${bad}: the listener's reason alone, no warning about the streams it stopped`);
  }
  const pullOut = await runCli(['--home', b.home, 'pull', 'alice:ro/../inbox', path.join(work, 'x')]);
  t.not(pullOut.code, 0);
  const pulled = await runCli(['--home', b.home, 'pull', 'alice:ro', path.join(work, 'ro-copy')]);
  t.equal(pulled.code, 0, 'a read-only share can be pulled');
});

t.test('a share with an allow list serves only the peers on it', async (t) => {
  t.match(listener.ready['shares'], [{ name: 'inbox' }, { name: 'ro' }, { name: 'private', allow: [c.id] }]);
  const src = path.join(work, 'allowed.txt');
  await writeFile(src, 'for carol');
  const bob = await runCli(['--home', b.home, 'push', src, 'alice:private']);
  t.equal(bob.code, 3, bob.stderr);
  t.match(bob.stderr, /not on the allow list of share private/);
  const bobPull = await runCli(['--home', b.home, 'pull', 'alice:private', path.join(work, 'bob-private')]);
  t.equal(bobPull.code, 3);
  await runCli(['--home', c.home, 'pair', 'add', a.id, '--name', 'alice', '--addr', `127.0.0.1:${listener.port}`]);
  const carol = await runCli(['--home', c.home, 'push', src, 'alice:private']);
  t.equal(carol.code, 0, carol.stderr);
  t.same((await readdir(privShare)).filter((n) => n !== '.clawpeer'), ['allowed.txt']);
  const badAllow = await runCli(['--home', a.home, 'listen', '--port', '0', '--share', `x=${work}`, '--allow', 'x=nobody']);
  t.equal(badAllow.code, 2);
  t.match(badAllow.stderr, /"nobody" is not a paired peer/);
});

t.test('a tampered DATA frame is refused and nothing is published', async (t) => {
  const src = path.join(work, 'tamper');
  await mkdir(src);
  await writeFile(path.join(src, 'data.bin'), randomBytes(2 << 20));
  const r = await runCli(['--home', b.home, 'push', src, 'alice'], { env: { CLAWPEER_TEST_TAMPER_FRAME: '2' } });
  t.not(r.code, 0);
  t.match(r.stderr, /authentic|decrypt|tag/i);
  const names = await readdir(path.join(work, 'inbox', 'tamper')).catch(() => [] as string[]);
  t.notOk(names.includes('data.bin'), 'no file at the final path');
  const ok = await runCli(['--home', b.home, 'push', src, 'alice']);
  t.equal(ok.code, 0, 'the listener still serves');
});

/** Runs a push with a per-chunk delay and SIGKILLs `victim` once some bytes have gone. */
async function interruptedPush(src: string, victim: 'sender' | 'receiver'): Promise<void> {
  const child = spawn(process.execPath, [CLI, '--home', b.home, 'push', src, 'alice', '--json', '--streams', '1', '--window', '2'], {
    env: { ...process.env, CLAWPEER_TEST_DELAY_PER_CHUNK_MS: '15' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  await new Promise<void>((resolve) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      const e = JSON.parse(line) as Record<string, unknown>;
      if (e['event'] === 'progress' && e['phase'] === 'sending' && (e['bytes'] as number) > (6 << 20)) resolve();
    });
    child.on('close', () => resolve());
  });
  if (victim === 'receiver') await listener.stop('SIGKILL');
  // The sender goes too (for the receiver case it would only wait for its idle timeout).
  const closed = new Promise((r) => child.on('close', r));
  child.kill('SIGKILL');
  await closed;
}

for (const victim of ['sender', 'receiver'] as const) {
  t.test(`resume after SIGKILL of the ${victim}`, async (t) => {
    const src = path.join(work, `resume-${victim}`);
    await mkdir(src);
    await writeFile(path.join(src, 'big.bin'), randomBytes(24 << 20));
    await interruptedPush(src, victim);
    t.same((await readdir(path.join(work, 'inbox', `resume-${victim}`)).catch(() => [])).filter((n) => !n.startsWith('.clawpeer')), [], 'no partial file at the final path');
    if (victim === 'receiver') {
      listener = await startListener(a.home, shareArgs);
      await pairAlice();
    }
    const rerun = await runCli(['--home', b.home, 'push', src, 'alice', '--json']);
    t.equal(rerun.code, 0, rerun.stderr);
    const d = done(rerun.stdout);
    t.ok((d['chunksSkipped'] as number) > 0, `chunks already there were skipped (${String(d['chunksSkipped'])})`);
    // How much the first attempt got in depends on scheduling on a loaded 2-core machine; what
    // must hold is that the rerun skips what the receiver verified and sends less than the file.
    t.ok((d['wireBytes'] as number) < 0.95 * (24 << 20), `the rerun sent ${String(d['wireBytes'])} bytes, below ${24 << 20}`);
    t.same(await snapshot(path.join(work, 'inbox', `resume-${victim}`)), await snapshot(src));
  });
}

t.test('push --files-from sends what a list names, each at its path below the base, with the directories it lies in (rsync)', async (t) => {
  const base = path.join(work, 'listed-base');
  await mkdir(path.join(base, 'src', 'lib'), { recursive: true });
  await mkdir(path.join(base, 'docs'), { recursive: true });
  await writeFile(path.join(base, 'src', 'lib', 'a.ts'), randomBytes(3000));
  await writeFile(path.join(base, 'src', 'left-out.ts'), 'not listed');
  await writeFile(path.join(base, 'docs', 'guide.md'), '# guide\n');
  await writeFile(path.join(base, 'docs', 'notes.tmp'), 'excluded');
  await writeFile(path.join(base, 'top.txt'), 'top');
  const when = new Date('2021-05-06T07:08:09Z');
  await utimes(path.join(base, 'src', 'lib'), when, when);
  const list = path.join(work, 'files.txt');
  await writeFile(list, '# what changed\n/src/lib/a.ts\n\ndocs\n./top.txt\n');
  const push = await runCli(['--home', b.home, 'push', '--files-from', list, base, 'alice:inbox/listed', '--exclude', '*.tmp', '--json']);
  t.equal(push.code, 0, push.stderr);
  t.match(done(push.stdout), { files: 3 });
  const landed = await snapshot(path.join(work, 'inbox', 'listed'));
  t.same(landed.map((i) => `${i.kind} ${i.path}`), ['dir docs', 'file docs/guide.md', 'dir src', 'dir src/lib', 'file src/lib/a.ts', 'file top.txt'], 'the listed paths and the directories they lie in, nothing else');
  const source = await snapshot(base);
  for (const p of ['src/lib', 'src/lib/a.ts', 'docs/guide.md', 'top.txt']) t.same(landed.find((i) => i.path === p), source.find((i) => i.path === p), `${p} byte-identical, mode and mtime kept`);

  // --from0 on standard input (find -print0), with --remove-source-files: only what was listed goes.
  const piped = await runCli(['--home', b.home, 'push', '--files-from', '-', '--from0', base, 'alice:inbox/listed0', '--remove-source-files', '--json'], { stdin: Buffer.from('src/left-out.ts\0top.txt\0') });
  t.equal(piped.code, 0, piped.stderr);
  t.same((await snapshot(path.join(work, 'inbox', 'listed0'))).map((i) => i.path), ['src', 'src/left-out.ts', 'top.txt']);
  t.notOk(existsSync(path.join(base, 'top.txt')), 'the sent file was removed');
  t.ok(existsSync(path.join(base, 'src', 'lib', 'a.ts')), 'what was not listed stays');

  // An empty list is nothing to do (as rsync), not an error; bad lists and flags are usage errors naming the problem.
  const empty = await runCli(['--home', b.home, 'push', '--files-from', '-', base, 'alice:inbox/none'], { stdin: Buffer.from('# nothing\n') });
  t.equal(empty.code, 0, empty.stderr);
  t.match(empty.stdout, /nothing to push: standard input lists no paths/);
  t.notOk(existsSync(path.join(work, 'inbox', 'none')));
  const to = 'alice:inbox/bad';
  const cases: [string[], string, RegExp][] = [
    [[base, to], '../secret\n', /--files-from entry 1 \("\.\.\/secret"\) climbs above the base directory/],
    [[base, to], 'missing.txt\n', /--files-from lists missing\.txt, which does not exist/],
    [[path.join(base, 'docs', 'guide.md'), to], 'x\n', /guide\.md is not a directory \(the listed paths are relative to it\)/],
    [[base, base, to], 'docs\n', /takes one base directory/],
    [[base, to, '--delete'], 'docs\n', /--delete with --files-from/],
    [[base, to, '--exclude-from', '-'], 'docs\n', /--exclude-from - and --files-from - both read standard input/],
  ];
  for (const [words, stdin, message] of cases) {
    const r = await runCli(['--home', b.home, 'push', '--files-from', '-', ...words], { stdin: Buffer.from(stdin) });
    t.equal(r.code, 2, `${words.join(' ')}: ${r.stderr}`);
    t.match(r.stderr, message);
  }
  t.notOk(existsSync(path.join(work, 'inbox', 'bad')), 'nothing was written for any of them');

  // And back: pull --files-from asks the listener for the listed paths, relative to the remote
  // directory, each landing at its relative path directly in the local directory.
  const back = path.join(work, 'listed-back');
  const pull = await runCli(['--home', b.home, 'pull', '--files-from', '-', 'alice:inbox/listed', back, '--json'], { stdin: Buffer.from('src/lib/a.ts\ndocs\n') });
  t.equal(pull.code, 0, pull.stderr);
  const pulled = await snapshot(back);
  t.same(pulled.map((i) => `${i.kind} ${i.path}`), ['dir docs', 'file docs/guide.md', 'dir src', 'dir src/lib', 'file src/lib/a.ts']);
  t.same(pulled.find((i) => i.path === 'src/lib'), landed.find((i) => i.path === 'src/lib'), 'the implied directory keeps its mode and mtime');
  t.same(pulled.find((i) => i.path === 'src/lib/a.ts'), source.find((i) => i.path === 'src/lib/a.ts'), 'byte-identical');
  const outside = await runCli(['--home', b.home, 'pull', '--files-from', '-', 'alice:inbox/listed', path.join(work, 'listed-bad')], { stdin: Buffer.from('top.txt\n.clawpeer/index.bin\n') });
  t.equal(outside.code, 1, outside.stderr);
  t.match(outside.stderr, /lists \.clawpeer\/index\.bin: \.clawpeer directories and temp files are clawpeer's own state, never sent/);
  const missing = await runCli(['--home', b.home, 'pull', '--files-from', '-', 'alice:inbox/listed', path.join(work, 'listed-bad')], { stdin: Buffer.from('nothing/here\n') });
  t.equal(missing.code, 1, missing.stderr);
  t.match(missing.stderr, /lists nothing\/here, but nothing does not exist in inbox\/listed/, 'the listener names its share, not its local path');
  t.notOk(existsSync(path.join(work, 'listed-bad')), 'nothing was written, not even the destination directory');
  const from0 = await runCli(['--home', b.home, 'push', '--from0', base, 'alice:inbox/bad']);
  t.equal(from0.code, 2);
  t.match(from0.stderr, /--from0 says how the --files-from list is separated/);
});

t.test('push -L sends symlinks as what they point to, --copy-unsafe-links only those leading out of the tree (rsync)', async (t) => {
  const root = path.join(work, 'linked');
  const outside = path.join(work, 'linked-outside');
  await mkdir(path.join(root), { recursive: true });
  await mkdir(path.join(outside, 'assets'), { recursive: true });
  const shared = randomBytes(5000);
  await writeFile(path.join(outside, 'assets', 'logo.png'), shared);
  await writeFile(path.join(root, 'main.txt'), 'main');
  await symlink('main.txt', path.join(root, 'current'));
  await symlink(path.join(outside, 'assets'), path.join(root, 'assets'));
  const plain = await runCli(['--home', b.home, 'push', root, 'alice:inbox/links-plain', '--json']);
  t.equal(plain.code, 0, plain.stderr);
  t.match(plain.stderr, /skipping a symlink that points outside the tree \(--copy-unsafe-links sends what it points to\)/);
  t.notOk(existsSync(path.join(work, 'inbox', 'links-plain', 'linked', 'assets')), 'by default the escaping link is left out');
  const unsafe = await runCli(['--home', b.home, 'push', root, 'alice:inbox/links-unsafe', '--copy-unsafe-links', '--json']);
  t.equal(unsafe.code, 0, unsafe.stderr);
  const u = await snapshot(path.join(work, 'inbox', 'links-unsafe', 'linked'));
  t.same(u.map((i) => `${i.kind} ${i.path}`), ['dir assets', 'file assets/logo.png', 'symlink current', 'file main.txt']);
  t.same(await readFile(path.join(work, 'inbox', 'links-unsafe', 'linked', 'assets', 'logo.png')), shared, 'what the link pointed to, byte-identical');
  const all = await runCli(['--home', b.home, 'push', root, 'alice:inbox/links-all', '-L', '--json']);
  t.equal(all.code, 0, all.stderr);
  t.same((await snapshot(path.join(work, 'inbox', 'links-all', 'linked'))).map((i) => `${i.kind} ${i.path}`), ['dir assets', 'file assets/logo.png', 'file current', 'file main.txt']);
  t.equal(await readFile(path.join(work, 'inbox', 'links-all', 'linked', 'current'), 'utf8'), 'main');
  const both = await runCli(['--home', b.home, 'push', root, 'alice:inbox/x', '-L', '--copy-unsafe-links']);
  t.equal(both.code, 2);
  t.match(both.stderr, /give one/);
  const moving = await runCli(['--home', b.home, 'push', root, 'alice:inbox/x', '-L', '--remove-source-files']);
  t.equal(moving.code, 2);
  t.match(moving.stderr, /--remove-source-files with --copy-links/);
});

t.test('--chmod sets the permissions things land with (rsync): a push announces them so, a pull applies them here', async (t) => {
  const src = path.join(work, 'modes');
  await mkdir(path.join(src, 'bin'), { recursive: true });
  await writeFile(path.join(src, 'bin', 'run.sh'), '#!/bin/sh\n');
  await writeFile(path.join(src, 'notes.txt'), 'notes');
  await chmod(path.join(src, 'bin', 'run.sh'), 0o700);
  await chmod(path.join(src, 'notes.txt'), 0o600);
  await chmod(path.join(src, 'bin'), 0o700);
  const modes = async (root: string): Promise<string[]> => (await snapshot(root)).map((i) => `${i.path} ${i.mode.toString(8)}`);
  const push = await runCli(['--home', b.home, 'push', src, 'alice:inbox/modes', '--chmod', 'D755,Fgo+r', '--chmod', 'a+X']);
  t.equal(push.code, 0, push.stderr);
  t.same(await modes(path.join(work, 'inbox', 'modes', 'modes')), ['bin 755', 'bin/run.sh 755', 'notes.txt 644'], 'directories 755, files readable by all, executable ones by all');
  t.same(await modes(src), ['bin 700', 'bin/run.sh 700', 'notes.txt 600'], 'the source keeps its own');
  const dest = path.join(work, 'modes-pulled');
  const pull = await runCli(['--home', b.home, 'pull', 'alice:inbox/modes/modes', dest, '--chmod', 'go=']);
  t.equal(pull.code, 0, pull.stderr);
  t.same(await modes(path.join(dest, 'modes')), ['bin 700', 'bin/run.sh 700', 'notes.txt 600']);
  const bad = await runCli(['--home', b.home, 'push', src, 'alice:inbox/modes', '--chmod', 'F64x']);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /--chmod "F64x": "F64x" is not a chmod clause/);
});

t.test('a sparse file lands sparse, pushed and pulled: its zeros are holes, not written blocks (cp, rsync -S)', async (t) => {
  const src = path.join(work, 'sparse');
  await mkdir(src);
  const bytes = Buffer.concat([randomBytes(1 << 20), Buffer.alloc(10 << 20), randomBytes(1 << 20)]);
  await writeFile(path.join(src, 'vm.img'), bytes);
  const push = await runCli(['--home', b.home, 'push', src, 'alice', '--json']);
  t.equal(push.code, 0, push.stderr);
  t.ok((done(push.stdout)['wireBytes'] as number) < 4 << 20, 'the zeros travel once, as one repeated chunk');
  const there = path.join(work, 'inbox', 'sparse', 'vm.img');
  const pulledDir = path.join(work, 'sparse-pulled');
  t.equal((await runCli(['--home', b.home, 'pull', 'alice:inbox/sparse/vm.img', pulledDir])).code, 0);
  for (const [side, file] of [['pushed', there], ['pulled', path.join(pulledDir, 'vm.img')]] as const) {
    const st = await stat(file);
    t.equal(st.size, bytes.length, `${side}: its size`);
    t.ok(st.blocks * 512 < 4 << 20, `${side}: ${st.blocks * 512} bytes allocated for ${bytes.length}`);
    t.same(await readFile(file), bytes, `${side}: byte-identical`);
  }
});

t.test('pull -L fetches symlinks as what they point to inside the listener\'s share, never what lies outside it', async (t) => {
  // In the share: a tree with a link to a file beside it, one to a directory elsewhere in the
  // share, and two to what lies outside the share (a file and a directory of the test's).
  const tree = path.join(work, 'inbox', 'pl-links', 'tree');
  const elsewhere = path.join(work, 'inbox', 'pl-links', 'elsewhere');
  const secret = path.join(work, 'pl-secret');
  await mkdir(tree, { recursive: true });
  await mkdir(elsewhere, { recursive: true });
  await mkdir(secret, { recursive: true });
  await writeFile(path.join(tree, 'main.txt'), 'main');
  await writeFile(path.join(elsewhere, 'e.txt'), 'elsewhere');
  await writeFile(path.join(secret, 'key.txt'), 'not for peers');
  await symlink('main.txt', path.join(tree, 'current'));
  await symlink('../elsewhere', path.join(tree, 'near'));
  await symlink(path.join(secret, 'key.txt'), path.join(tree, 'key'));
  await symlink('../../../pl-secret', path.join(tree, 'vault'));
  const kinds = async (dir: string): Promise<string[]> => (await snapshot(dir)).map((i) => `${i.kind} ${i.path}`);
  const pulled = async (flags: readonly string[]): Promise<string> => {
    const dest = path.join(work, `pl-links-dest${flags.join('')}`);
    const r = await runCli(['--home', b.home, 'pull', 'alice:inbox/pl-links/tree', dest, '--json', ...flags]);
    t.equal(r.code, 0, r.stderr);
    return path.join(dest, 'tree');
  };
  t.same(await kinds(await pulled([])), ['symlink current', 'file main.txt'], 'links as links; those leading out of the tree left out');
  const all = await pulled(['-L']);
  t.same(await kinds(all), ['file current', 'file main.txt', 'dir near', 'file near/e.txt'], '-L: what the links inside the share point to; nothing from outside it');
  t.equal(await readFile(path.join(all, 'near', 'e.txt'), 'utf8'), 'elsewhere');
  t.same(await kinds(await pulled(['--copy-unsafe-links'])), ['symlink current', 'file main.txt', 'dir near', 'file near/e.txt'], '--copy-unsafe-links: only the link out of the tree (still inside the share)');
  t.ok(listener.stderr().includes('skipping a symlink that leads out of the share: not sent, not even with -L'), 'the listener says why it left one out');
  const both = await runCli(['--home', b.home, 'pull', 'alice:inbox/pl-links/tree', path.join(work, 'x'), '-L', '--copy-unsafe-links']);
  t.equal(both.code, 2);
});

t.test('--min-size and --max-size leave out files by size (rsync): a push here, a pull by the listener', async (t) => {
  const src = path.join(work, 'sized');
  await mkdir(path.join(src, 'sub'), { recursive: true });
  await writeFile(path.join(src, 'tiny.txt'), 'x');
  await writeFile(path.join(src, 'mid.bin'), randomBytes(3000));
  await writeFile(path.join(src, 'sub', 'big.bin'), randomBytes(300_000));
  const push = await runCli(['--home', b.home, 'push', src, 'alice:inbox/sized-push', '--max-size', '100K', '--json']);
  t.equal(push.code, 0, push.stderr);
  t.match(done(push.stdout), { files: 2 });
  t.same((await snapshot(path.join(work, 'inbox', 'sized-push', 'sized'))).map((i) => `${i.kind} ${i.path}`), ['file mid.bin', 'dir sub', 'file tiny.txt'], 'the big file left out; its directory still made');
  const full = await runCli(['--home', b.home, 'push', src, 'alice:inbox/sized-all', '--json']);
  t.equal(full.code, 0, full.stderr);
  const dest = path.join(work, 'sized-pulled');
  const pull = await runCli(['--home', b.home, 'pull', 'alice:inbox/sized-all/sized', dest, '--min-size', '1K', '--max-size', '0', '--json']);
  t.equal(pull.code, 0, pull.stderr);
  t.same((await snapshot(path.join(dest, 'sized'))).filter((i) => i.kind === 'file').map((i) => i.path), ['mid.bin', 'sub/big.bin'], 'the listener left out the 1-byte file; --max-size 0 is no limit');
  t.same(await readFile(path.join(dest, 'sized', 'sub', 'big.bin')), await readFile(path.join(src, 'sub', 'big.bin')));
  const cases: [string[], RegExp][] = [
    [['--min-size', 'lots'], /--min-size "lots": expected a size such as 4096, 64K, 1\.5MiB or 2GB/],
    [['--min-size', '2M', '--max-size', '1M'], /--min-size 2M is more than --max-size 1M: no file would go/],
    [['--max-size', '1M', '--delete'], /--delete with --min-size\/--max-size/],
  ];
  for (const [flags, message] of cases) {
    const r = await runCli(['--home', b.home, 'push', src, 'alice:inbox/sized-bad', ...flags]);
    t.equal(r.code, 2, `${flags.join(' ')}: ${r.stderr}`);
    t.match(r.stderr, message);
  }
  const toStdout = await runCli(['--home', b.home, 'pull', 'alice:inbox/sized-all/sized/mid.bin', '-', '--max-size', '1M']);
  t.equal(toStdout.code, 2);
  t.match(toStdout.stderr, /--max-size with the destination -/);
});

t.test('a pull the listener refuses leaves no destination directory; one that cannot be created is an IO error naming it', async (t) => {
  const dest = path.join(work, 'refused-dest');
  const missing = await runCli(['--home', b.home, 'pull', 'alice:inbox/no-such-thing', dest]);
  t.equal(missing.code, 1, missing.stderr);
  t.match(missing.stderr, /inbox\/no-such-thing does not exist/);
  t.notOk(existsSync(dest), 'no empty directory left behind');
  const blocker = path.join(work, 'a-file');
  await writeFile(blocker, 'x');
  const bad = await runCli(['--home', b.home, 'pull', 'alice:inbox/tree', path.join(blocker, 'sub')]);
  t.equal(bad.code, 1, bad.stderr);
  t.match(bad.stderr, /cannot create .*a-file\/sub/);
  if (existsSync('/proc/self')) {
    // Node's own recursive mkdir retries forever there (ENOENT under an existing directory).
    const proc = await runCli(['--home', b.home, 'pull', 'alice:inbox/tree', '/proc/clawpeer-no-such/dest'], { timeoutMs: 30_000 });
    t.equal(proc.code, 1, proc.stderr);
    t.match(proc.stderr, /cannot create \/proc\/clawpeer-no-such\/dest: ENOENT/);
  }
  const after = await runCli(['--home', b.home, 'ls', 'alice:inbox']);
  t.equal(after.code, 0, `the listener serves on: ${after.stderr}`);
});

t.test('a re-push brings a changed mode and mtime to identical files without sending their content (rsync -a)', async (t) => {
  const src = path.join(work, 'meta');
  await mkdir(src);
  await writeFile(path.join(src, 'doc.txt'), randomBytes(5000));
  const first = await runCli(['--home', b.home, 'push', src, 'alice:inbox/meta', '--json']);
  t.equal(first.code, 0, first.stderr);
  await chmod(path.join(src, 'doc.txt'), 0o600);
  await utimes(path.join(src, 'doc.txt'), new Date('2020-03-04T05:06:07Z'), new Date('2020-03-04T05:06:07Z'));
  // A dry run says so first, and sets nothing.
  const dry = await runCli(['--home', b.home, 'push', src, 'alice:inbox/meta', '-n', '--json']);
  t.equal(dry.code, 0, dry.stderr);
  t.same(jsonLines(dry.stdout).filter((e) => e['event'] === 'would-update'), [{ event: 'would-update', path: 'meta/meta/doc.txt', time: true, perms: true }]);
  t.match(jsonLines(dry.stdout).find((e) => e['event'] === 'done'), { files: 0, filesUnchanged: 1, filesToUpdate: 1 });
  t.not((await snapshot(path.join(work, 'inbox', 'meta', 'meta'))).find((e) => e.path === 'doc.txt')?.mode, 0o600, 'the dry run set nothing');
  const again = await runCli(['--home', b.home, 'push', src, 'alice:inbox/meta', '-i']);
  t.equal(again.code, 0, again.stderr);
  t.match(again.stdout, /^\.f\.\.tp\.\.\.\.\. meta\/meta\/doc\.txt$/m, 'itemized as rsync does: time and permissions set, nothing transferred');
  t.match(again.stdout, /pushed 0 files/, 'nothing published: the content is identical');
  t.same(await snapshot(path.join(work, 'inbox', 'meta', 'meta')), await snapshot(src), 'mode and mtime now match');
  // A pull does the same on this side.
  const dest = path.join(work, 'meta-pulled');
  t.equal((await runCli(['--home', b.home, 'pull', 'alice:inbox/meta/meta', dest])).code, 0);
  await chmod(path.join(dest, 'meta', 'doc.txt'), 0o644);
  const dryPull = await runCli(['--home', b.home, 'pull', 'alice:inbox/meta/meta', dest, '-n']);
  t.equal(dryPull.code, 0, dryPull.stderr);
  t.match(dryPull.stdout, /^meta\/doc\.txt \(identical: permissions to set\)$/m);
  const pull = await runCli(['--home', b.home, 'pull', 'alice:inbox/meta/meta', dest, '-i', '--json']);
  t.equal(pull.code, 0, pull.stderr);
  t.same(jsonLines(pull.stdout).filter((e) => e['event'] === 'updated'), [{ event: 'updated', path: 'meta/doc.txt', time: false, perms: true }]);
  t.same(await snapshot(path.join(dest, 'meta')), await snapshot(src));
});
