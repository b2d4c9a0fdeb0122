// Push and pull through the real CLI over loopback, the transfer itself and its options:
// byte-identical trees, early chunks, compression, excludes, rate caps, dry runs, existing-file
// policies, several sources, moves, --delete and --backup. The rig is push-pull-rig.ts; the
// edges (listing, refusals, special files, tampering, resume) are test/long/push-pull-edges.test.ts.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { jsonLines, runCli, startListener } from './cli-harness.js';
import { makeTree, snapshot } from './tree-helpers.js';
import { EARLY_MAX_BYTES } from '../../src/exchange/transfer-send.js';
import { zstdCodec } from '../../src/session/chunk-compression.js';
import { startPushPullRig } from './push-pull-rig.js';

const rig = await startPushPullRig();
const { a, b, work, done } = rig;
t.teardown(() => rig.listener.stop('SIGKILL'));

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
  t.ok(
    (a['wireBytes'] as number) < EARLY_MAX_BYTES + (64 << 10),
    `the repeat sent ${String(a['wireBytes'])} bytes, at most the early-chunk budget`,
  );

  const dest = path.join(work, 'pulled');
  const pull = await runCli([
    '--home',
    b.home,
    'pull',
    'alice:inbox/tree',
    dest,
    '--json',
    '--streams',
    '2',
    '--window',
    '4',
  ]);
  t.equal(pull.code, 0, pull.stderr);
  t.match(done(pull.stdout), { streams: 2, window: 4 });
  // Receiving progress counts files published: its last event has them all.
  const receiving = jsonLines(pull.stdout).filter((l) => l['event'] === 'progress' && l['phase'] === 'receiving');
  t.ok(receiving.length > 0, 'the pull reported receiving progress');
  const lastEvent = receiving.at(-1)!;
  t.ok(
    (lastEvent['totalFiles'] as number) > 0 && lastEvent['files'] === lastEvent['totalFiles'],
    `last receiving event: ${JSON.stringify(lastEvent)}`,
  );
  // Its byte total is what the pull lacked, known once it looked: all of it arrived.
  t.ok(
    (lastEvent['totalBytes'] as number) > 0 && lastEvent['bytes'] === lastEvent['totalBytes'],
    `receiving bytes of a known total: ${JSON.stringify(lastEvent)}`,
  );
  t.same(await snapshot(path.join(dest, 'tree')), await snapshot(src));
  t.notOk(existsSync(path.join(dest, '.clawpeer')), 'a completed pull leaves no state in a plain destination');
  // As push, pull without a share means the listener's default share, inbox.
  const whole = path.join(work, 'pulled-inbox');
  const bare = await runCli(['--home', b.home, 'pull', 'alice', whole]);
  t.equal(bare.code, 0, bare.stderr);
  t.same(await snapshot(path.join(whole, 'tree')), await snapshot(src));
});

t.test(
  'early chunks: a stream sends its first window before the Want; the listener drops the ones it holds',
  async (t) => {
    const src = path.join(work, 'pages');
    await mkdir(src);
    for (let i = 0; i < 30; i++)
      await writeFile(path.join(src, `p${String(i).padStart(2, '0')}.bin`), randomBytes(4096));
    // Without compression: its attempts are async hops that let the Want overtake the early window.
    const args = [
      '--home',
      b.home,
      'push',
      src,
      'alice',
      '--json',
      '--streams',
      '1',
      '--window',
      '16',
      '--no-compress',
    ];
    const first = await runCli(args);
    t.equal(first.code, 0, first.stderr);
    t.match(done(first.stdout), { files: 30, chunksSent: 30, chunksSkipped: 0 });
    const sending = jsonLines(first.stdout).filter((l) => l['event'] === 'progress' && l['phase'] === 'sending');
    t.match(
      sending.at(-1),
      { files: 30, totalFiles: 30, bytes: 30 * 4096, totalBytes: 30 * 4096 },
      'the last sending event: the listener holds all 30 files, all bytes sent',
    );
    t.same(await snapshot(path.join(work, 'inbox', 'pages')), await snapshot(src));
    // Again: the listener holds every chunk. One stream, window 16, 4 KiB chunks: exactly the
    // first window goes early (64 KiB, inside the budget), the Want then says nothing is lacking.
    const again = await runCli(args);
    t.equal(again.code, 0, again.stderr);
    t.match(done(again.stdout), { files: 0, chunksSent: 16, chunksSkipped: 30 });
    // Its total shrank to what went anyway, once the Want said the listener holds everything.
    const resent = jsonLines(again.stdout).filter((l) => l['event'] === 'progress' && l['phase'] === 'sending');
    t.match(resent.at(-1), { files: 30, totalBytes: 16 * 4096 }, "the repeat's total: the early window only");
    t.same(
      await snapshot(path.join(work, 'inbox', 'pages')),
      await snapshot(src),
      'nothing changed at the destination',
    );
  },
);

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

t.test(
  'zstd: text travels compressed both ways, random bytes raw; --no-compress sends everything raw',
  { skip: zstdCodec() === null ? '@mongodb-js/zstd (optional) is not installed' : false },
  async (t) => {
    const src = path.join(work, 'zlogs');
    await mkdir(path.join(src, 'old'), { recursive: true });
    const lines = (n: number, tag: string): string =>
      Array.from(
        { length: n },
        (_, i) => `2026-11-30T12:${String(i % 60).padStart(2, '0')}:00Z ${tag} request ${i} served in ${i % 97} ms\n`,
      ).join('');
    await writeFile(path.join(src, 'app.log'), lines(40_000, 'INFO')); // ~2.2 MB
    await writeFile(path.join(src, 'old', 'app.1.log'), lines(5_000, 'WARN'));
    await writeFile(path.join(src, 'noise.bin'), randomBytes(1 << 20));
    const push = await runCli(['--home', b.home, 'push', src, 'alice:inbox/z1', '--json']);
    t.equal(push.code, 0, push.stderr);
    const d = done(push.stdout);
    const bytes = d['bytes'] as number;
    t.ok(
      (d['wireBytes'] as number) < 0.6 * bytes,
      `compressed push: ${String(d['wireBytes'])} wire bytes for ${bytes}`,
    );
    t.ok((d['wireBytes'] as number) > 1 << 20, 'the random megabyte still crossed whole');
    t.ok(
      (d['chunksCompressed'] as number) >= 1 && (d['chunksCompressed'] as number) < (d['chunksSent'] as number),
      `${String(d['chunksCompressed'])} of ${String(d['chunksSent'])} chunks went compressed (not the random ones)`,
    );
    t.same(await snapshot(path.join(work, 'inbox', 'z1', 'zlogs')), await snapshot(src));

    // Other text (the listener would deduplicate the same): with --no-compress, all of it crosses.
    const other = path.join(work, 'zraw');
    await mkdir(other);
    await writeFile(path.join(other, 'app.log'), lines(40_000, 'DBUG'));
    const raw = await runCli(['--home', b.home, 'push', other, 'alice:inbox/z2', '--json', '--no-compress']);
    t.equal(raw.code, 0, raw.stderr);
    const r = done(raw.stdout);
    t.equal(r['chunksCompressed'], 0, '--no-compress: no chunk compressed');
    t.ok(
      (r['wireBytes'] as number) >= (r['bytes'] as number),
      `--no-compress: ${String(r['wireBytes'])} wire bytes for ${String(r['bytes'])}`,
    );
    t.same(await snapshot(path.join(work, 'inbox', 'z2', 'zraw')), await snapshot(other));

    // Pull: the listener is the sender and compresses too.
    const dest = path.join(work, 'zpulled');
    const pull = await runCli(['--home', b.home, 'pull', 'alice:inbox/z1/zlogs', dest, '--json']);
    t.equal(pull.code, 0, pull.stderr);
    t.ok((done(pull.stdout)['wireBytes'] as number) < 0.6 * bytes, 'the pull came compressed');
    t.same(await snapshot(path.join(dest, 'zlogs')), await snapshot(src));
  },
);

t.test('--exclude leaves out matching files and directories on push and pull (rsync-style patterns)', async (t) => {
  const src = path.join(work, 'exc');
  for (const d of ['sub', 'node_modules/x', 'build', 'src/build', 'tmp/deep'])
    await mkdir(path.join(src, d), { recursive: true });
  const files: Record<string, string> = {
    'keep.txt': 'kept',
    'a.log': 'log',
    'sub/b.log': 'log',
    'sub/keep.md': 'kept',
    'node_modules/x/y.js': 'dep',
    'build/out.bin': 'built',
    'src/build/inner.txt': 'kept: /build is anchored',
    cache: 'a file named cache',
    'tmp/deep/t.txt': 'scratch',
  };
  for (const [rel, text] of Object.entries(files)) await writeFile(path.join(src, rel), text);
  const r = await runCli([
    '--home',
    b.home,
    'push',
    src,
    'alice:inbox/ex',
    '--json',
    '--exclude',
    '*.log',
    '--exclude',
    'node_modules',
    '--exclude',
    '/build',
    '--exclude',
    'tmp/',
    '--exclude',
    'cache/',
  ]);
  t.equal(r.code, 0, r.stderr);
  t.match(done(r.stdout), { files: 4 });
  const got = (await snapshot(path.join(work, 'inbox', 'ex', 'exc'))).map((i) => i.path).sort();
  t.same(
    got,
    ['cache', 'keep.txt', 'src', 'src/build', 'src/build/inner.txt', 'sub', 'sub/keep.md'].sort(),
    'only what no pattern matched arrived',
  );
  // Pull applies the same patterns on the listener's side: push the whole tree, pull it back filtered.
  const full = await runCli(['--home', b.home, 'push', src, 'alice:inbox/exfull', '--json']);
  t.equal(full.code, 0, full.stderr);
  t.match(done(full.stdout), { files: 9 });
  const dest = path.join(work, 'expulled');
  const pull = await runCli([
    '--home',
    b.home,
    'pull',
    'alice:inbox/exfull/exc',
    dest,
    '--json',
    '--exclude',
    '*.log',
    '--exclude',
    'node_modules',
    '--exclude',
    '/build',
    '--exclude',
    'tmp/',
    '--exclude',
    'cache/',
  ]);
  t.equal(pull.code, 0, pull.stderr);
  t.match(done(pull.stdout), { files: 4 });
  t.same(
    (await snapshot(path.join(dest, 'exc'))).map((i) => i.path).sort(),
    got,
    'a filtered pull brings the same files a filtered push sent',
  );
  const bad = await runCli(['--home', b.home, 'push', src, 'alice:inbox/ex2', '--exclude', '[oops']);
  t.equal(bad.code, 2, bad.stderr);
  t.match(bad.stderr, /--exclude "\[oops": has a \[ without its \]/);

  // --include among the excludes, in order (the first that matches decides): only the .txt files, in every directory.
  const onlyText = ['--include=*/', '--include', '*.txt', '--exclude', '*'];
  const inc = await runCli(['--home', b.home, 'push', src, 'alice:inbox/exinc', '--json', ...onlyText]);
  t.equal(inc.code, 0, inc.stderr);
  t.match(done(inc.stdout), { files: 3 });
  const incGot = (await snapshot(path.join(work, 'inbox', 'exinc', 'exc')))
    .filter((i) => i.kind === 'file')
    .map((i) => i.path)
    .sort();
  t.same(incGot, ['keep.txt', 'src/build/inner.txt', 'tmp/deep/t.txt']);
  // A pull sends the rules in order (feature 'filter'); the listener applies them to what it sends.
  const incDest = path.join(work, 'exinc-pulled');
  const incPull = await runCli(['--home', b.home, 'pull', 'alice:inbox/exfull/exc', incDest, '--json', ...onlyText]);
  t.equal(incPull.code, 0, incPull.stderr);
  t.same(
    (await snapshot(path.join(incDest, 'exc')))
      .filter((i) => i.kind === 'file')
      .map((i) => i.path)
      .sort(),
    incGot,
  );
  // The same rules from files (rsync's --include-from/--exclude-from), each where its flag stands.
  const rulesDir = await mkdtemp(path.join(tmpdir(), 'clawpeer-rules-'));
  await writeFile(path.join(rulesDir, 'include'), '# directories, then text\n*/\n\n*.txt\n');
  await writeFile(path.join(rulesDir, 'exclude'), '; everything else\n*\n');
  const fromDest = path.join(work, 'exinc-from');
  const fromPull = await runCli([
    '--home',
    b.home,
    'pull',
    'alice:inbox/exfull/exc',
    fromDest,
    '--json',
    '--include-from',
    path.join(rulesDir, 'include'),
    `--exclude-from=${path.join(rulesDir, 'exclude')}`,
  ]);
  t.equal(fromPull.code, 0, fromPull.stderr);
  t.same(
    (await snapshot(path.join(fromDest, 'exc')))
      .filter((i) => i.kind === 'file')
      .map((i) => i.path)
      .sort(),
    incGot,
    'the files read as the flags were',
  );
  const missing = await runCli([
    '--home',
    b.home,
    'push',
    src,
    'alice:inbox/ex3',
    '--exclude-from',
    path.join(rulesDir, 'nope'),
  ]);
  t.equal(missing.code, 2, missing.stderr);
  t.match(missing.stderr, /--exclude-from .*nope: cannot read it/);
});

t.test(
  '--bwlimit caps what a push sends, what the listener sends a pull, and listen --bwlimit all it sends; a bad rate is a usage error',
  async (t) => {
    const src = path.join(work, 'capped');
    await mkdir(src);
    await writeFile(path.join(src, 'one.bin'), randomBytes(512 << 10));
    // 512 KiB at 512 KiB/s, less the limiter's burst (a tenth of a second's worth): >= 0.9 s. The
    // listener's publish deadline is cut to 0.3 s: a push that is slow to send is not late.
    const minSeconds = 0.75;
    const push = await runCli(['--home', b.home, 'push', src, 'alice:inbox', '--json', '--bwlimit', '512KiB'], {
      env: { CLAWPEER_TEST_PUBLISH_TIMEOUT_MS: '300' },
    });
    t.equal(push.code, 0, push.stderr);
    const pushed = done(push.stdout);
    t.match(pushed, { files: 1, bytes: 512 << 10 });
    t.ok(
      Number(pushed['seconds']) >= minSeconds,
      `the push took ${String(pushed['seconds'])} s, no less than the cap allows`,
    );
    t.same(await snapshot(path.join(work, 'inbox', 'capped')), await snapshot(src), 'byte-identical');
    const dest = path.join(work, 'capped-pulled');
    const pull = await runCli(['--home', b.home, 'pull', 'alice:inbox/capped', dest, '--json', '--bwlimit', '4mbit']);
    t.equal(pull.code, 0, pull.stderr);
    const pulled = done(pull.stdout);
    t.ok(
      Number(pulled['seconds']) >= minSeconds,
      `the pull took ${String(pulled['seconds'])} s: the listener sent within 4 Mbit/s`,
    );
    t.same(await snapshot(path.join(dest, 'capped')), await snapshot(src), 'byte-identical');
    const bad = await runCli(['--home', b.home, 'push', src, 'alice:inbox/c2', '--bwlimit', 'fast']);
    t.equal(bad.code, 2, bad.stderr);
    t.match(bad.stderr, /--bwlimit "fast": expected a rate such as 500 \(KiB\/s\), 2MiB, 10MB\/s or 100mbit/);

    // listen --bwlimit caps what the listener sends, though the pull asks for no cap.
    const capped = await startListener(a.home, ['--share', `inbox=${path.join(work, 'inbox')}`, '--bwlimit', '512KiB']);
    t.teardown(() => capped.stop('SIGKILL'));
    const dest2 = path.join(work, 'capped-pulled-2');
    const pull2 = await runCli([
      '--home',
      b.home,
      'pull',
      'alice:inbox/capped',
      dest2,
      '--json',
      '--addr',
      `127.0.0.1:${capped.port}`,
    ]);
    t.equal(pull2.code, 0, pull2.stderr);
    t.ok(
      Number(done(pull2.stdout)['seconds']) >= minSeconds,
      `the pull took ${String(done(pull2.stdout)['seconds'])} s: the listener kept to its own cap`,
    );
    t.same(await snapshot(path.join(dest2, 'capped')), await snapshot(src), 'byte-identical');
    const badListen = await runCli(['--home', a.home, 'listen', '--port', '0', '--bwlimit', '0']);
    t.equal(badListen.code, 2, badListen.stderr);
    t.match(badListen.stderr, /--bwlimit "0": must be between 1 KiB\/s and 4 GiB\/s/);
  },
);

t.test('--dry-run (-n) lists what push and pull would publish and send, and writes nothing', async (t) => {
  const src = path.join(work, 'dry');
  await mkdir(path.join(src, 'sub'), { recursive: true });
  const big = randomBytes(2 << 20);
  await writeFile(path.join(src, 'big.bin'), big);
  await writeFile(path.join(src, 'note.txt'), 'first\n');
  await writeFile(path.join(src, 'sub', 'small.bin'), randomBytes(300 << 10));
  await symlink('note.txt', path.join(src, 'link'));
  const inbox = path.join(work, 'inbox');
  const events = (stdout: string): Record<string, unknown>[] =>
    jsonLines(stdout).filter((e) => e['event'] === 'would-publish');
  const created = (stdout: string): string[] =>
    jsonLines(stdout)
      .filter((e) => e['event'] === 'would-create')
      .map(
        (e) =>
          `${String(e['kind'])} ${String(e['path'])}${e['kind'] === 'symlink' ? ` -> ${String(e['target'])}` : ''}`,
      )
      .sort();

  // Nothing there yet: every file, every byte.
  const before = await snapshot(inbox);
  const first = await runCli(['--home', b.home, 'push', src, 'alice', '--json', '-n']);
  t.equal(first.code, 0, first.stderr);
  t.same(
    events(first.stdout)
      .map((e) => e['path'])
      .sort(),
    ['dry/big.bin', 'dry/note.txt', 'dry/sub/small.bin'],
  );
  t.match(done(first.stdout), {
    dryRun: true,
    files: 3,
    filesUnchanged: 0,
    bytesToSend: (2 << 20) + 6 + (300 << 10),
    dirsToCreate: 2,
    symlinksToCreate: 1,
  });
  t.same(
    created(first.stdout),
    ['dir dry', 'dir dry/sub', 'symlink dry/link -> note.txt'],
    'the directories and the symlink it would create',
  );
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
  t.ok(
    bigSend > 0 && bigSend <= (2 << 20) >> 1,
    `only the changed chunks of big.bin would travel (${bigSend} of ${2 << 20} bytes)`,
  );
  t.match(done(second.stdout), { dryRun: true, files: 2, filesUnchanged: 2, dirsToCreate: 0, symlinksToCreate: 0 });
  t.same(created(second.stdout), [], 'the directories and the link are there already');
  t.same(await snapshot(inbox), pushed, 'still nothing written');
  // Without --force the changed file is refused, as the real push would be.
  // Listed where they would land: under the remote path.
  const under = await runCli(['--home', b.home, 'push', src, 'alice:inbox/elsewhere', '--json', '-n']);
  t.equal(under.code, 0, under.stderr);
  t.same(
    events(under.stdout)
      .map((e) => e['path'])
      .sort(),
    ['elsewhere/dry/big.bin', 'elsewhere/dry/note.txt', 'elsewhere/dry/sub/new.txt', 'elsewhere/dry/sub/small.bin'],
  );
  t.same(created(under.stdout), [
    'dir elsewhere/dry',
    'dir elsewhere/dry/sub',
    'symlink elsewhere/dry/link -> note.txt',
  ]);
  t.equal(done(under.stdout)['bytesToSend'], bigSend + 4, 'a copy elsewhere sends only what the share holds nowhere');
  const clash = await runCli(['--home', b.home, 'push', src, 'alice', '-n']);
  t.equal(clash.code, 5, clash.stderr);
  t.match(
    clash.stderr,
    /big\.bin exists and is a file with different content: not replaced \(use --force, --update or --ignore-existing\)/,
  );

  // Pull: into a copy holding the old big.bin, and into a directory that does not exist.
  const local = path.join(work, 'dry-local');
  t.equal((await runCli(['--home', b.home, 'pull', 'alice:inbox/dry', local])).code, 0);
  await writeFile(path.join(local, 'dry', 'note.txt'), 'changed here\n');
  const localBefore = await snapshot(local);
  const pull = await runCli(['--home', b.home, 'pull', 'alice:inbox/dry', local, '--json', '-n', '--force']);
  t.equal(pull.code, 0, pull.stderr);
  t.same(
    events(pull.stdout).map((e) => e['path']),
    ['dry/note.txt'],
  );
  t.same(created(pull.stdout), []);
  t.match(done(pull.stdout), { dryRun: true, files: 1, filesUnchanged: 2, bytesToSend: 6 });
  t.same(await snapshot(local), localBefore, 'the local copy is untouched');
  t.equal(await readFile(path.join(local, 'dry', 'note.txt'), 'utf8'), 'changed here\n');
  const nowhere = path.join(work, 'dry-nowhere');
  const fresh = await runCli(['--home', b.home, 'pull', 'alice:inbox/dry', nowhere, '--json', '-n']);
  t.equal(fresh.code, 0, fresh.stderr);
  t.match(done(fresh.stdout), { dryRun: true, files: 3 });
  t.same(
    created(fresh.stdout),
    ['dir dry', 'dir dry/sub', 'symlink dry/link -> note.txt'],
    'into nothing: every directory and link is new',
  );
  t.notOk(existsSync(nowhere), 'the missing destination was not created');
});

t.test(
  '--ignore-existing keeps different files already there; --update (-u) replaces only those not newer; both exclude --force',
  async (t) => {
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
    t.same(
      [await text(copy, 'a.txt'), await text(copy, 'b.txt')],
      ['dest a', 'new b.txt'],
      'the newer a.txt kept, the older b.txt replaced',
    );

    // A pull's own receiver applies it: here a.txt is newer than the share's, b.txt older.
    const local = path.join(work, 'ex-pulled');
    t.equal((await runCli(['--home', b.home, 'pull', 'alice:inbox/ex-keep/exist', local])).code, 0);
    await at(path.join(local, 'exist', 'a.txt'), 'local a', T + 7200_000);
    await at(path.join(local, 'exist', 'b.txt'), 'local b', T - 7200_000);
    const pulled = await runCli(['--home', b.home, 'pull', 'alice:inbox/ex-keep/exist', local, '--update', '--json']);
    t.equal(pulled.code, 0, pulled.stderr);
    t.match(done(pulled.stdout), { files: 1, kept: 1 });
    t.same(
      [await text(path.join(local, 'exist'), 'a.txt'), await text(path.join(local, 'exist'), 'b.txt')],
      ['local a', 'new b.txt'],
    );

    const both = await runCli(['--home', b.home, 'push', src, 'alice:inbox/ex-keep', '--force', '-u']);
    t.equal(both.code, 2, both.stderr);
    t.match(both.stderr, /--force and --update exclude each other/);
  },
);

t.test(
  'push of several sources (LOCAL... REMOTE): each lands under its own name in one transfer; two of the same name are refused',
  async (t) => {
    const one = path.join(work, 'multi-1');
    const two = path.join(work, 'multi-2');
    await mkdir(path.join(one, 'tree'), { recursive: true });
    await mkdir(two);
    await writeFile(path.join(one, 'a.txt'), 'a');
    await writeFile(path.join(one, 'tree', 'b.txt'), 'b');
    await writeFile(path.join(two, 'c.txt'), 'c');
    await writeFile(path.join(two, 'a.txt'), 'other a');
    const r = await runCli([
      '--home',
      b.home,
      'push',
      path.join(one, 'a.txt'),
      path.join(one, 'tree'),
      path.join(two, 'c.txt'),
      'alice:inbox/multi',
      '--json',
    ]);
    t.equal(r.code, 0, r.stderr);
    t.match(done(r.stdout), { files: 3 });
    const dest = path.join(work, 'inbox', 'multi');
    t.same(
      (await snapshot(dest)).map((i) => `${i.kind} ${i.path}`),
      ['file a.txt', 'file c.txt', 'dir tree', 'file tree/b.txt'],
    );
    const clash = await runCli([
      '--home',
      b.home,
      'push',
      path.join(one, 'a.txt'),
      path.join(two, 'a.txt'),
      'alice:inbox/multi',
    ]);
    t.equal(clash.code, 2, clash.stderr);
    t.match(clash.stderr, /would both land as a\.txt: push them separately/);
    const lone = await runCli(['--home', b.home, 'push', 'alice:inbox']);
    t.equal(lone.code, 2, lone.stderr);
    t.match(lone.stderr, /push needs what to send and where/);
    // --remove-source-files removes what was sent from each source.
    const moved = await runCli([
      '--home',
      b.home,
      'push',
      path.join(one, 'tree'),
      path.join(two, 'c.txt'),
      'alice:inbox/multi-moved',
      '--remove-source-files',
      '--json',
    ]);
    t.equal(moved.code, 0, moved.stderr);
    t.match(done(moved.stdout), { files: 2, sourceRemoved: 2 });
    t.notOk(existsSync(path.join(one, 'tree', 'b.txt')) || existsSync(path.join(two, 'c.txt')));
    t.ok(existsSync(path.join(two, 'a.txt')), 'what was not sent stays');
  },
);

t.test(
  'pull of several remote paths (REMOTE... LOCAL): each lands under its own name, reported as one; other peers or clashing names are refused',
  async (t) => {
    const local = path.join(work, 'multi-pulled');
    const r = await runCli([
      '--home',
      b.home,
      'pull',
      'alice:inbox/multi/tree',
      'alice:inbox/multi/c.txt',
      'alice:ro/readme.txt',
      local,
      '-i',
      '--json',
    ]);
    t.equal(r.code, 0, r.stderr);
    t.match(done(r.stdout), { files: 3 });
    t.same(
      jsonLines(r.stdout)
        .filter((e) => e['event'] === 'published')
        .map((e) => e['path'])
        .sort(),
      ['c.txt', 'readme.txt', 'tree/b.txt'],
    );
    t.same(
      (await snapshot(local)).map((i) => `${i.kind} ${i.path}`),
      ['file c.txt', 'file readme.txt', 'dir tree', 'file tree/b.txt'],
    );
    // One count up across the three pulls: the last file of each is told at once.
    const progress = jsonLines(r.stdout).filter((e) => e['event'] === 'progress');
    const files = progress.map((e) => Number(e['files']));
    t.same(
      files,
      [...files].sort((x, y) => x - y),
      `files done never go back: ${files.join(',')}`,
    );
    t.equal(Math.max(...files), 3, 'and reach all three');
    t.equal(Math.max(...progress.map((e) => Number(e['totalFiles']))), 3);
    const twoPeers = await runCli(['--home', b.home, 'pull', 'alice:inbox/multi/c.txt', 'carol:x/y', local]);
    t.equal(twoPeers.code, 2, twoPeers.stderr);
    t.match(twoPeers.stderr, /pull from one peer at a time: alice, carol/);
    const clash = await runCli([
      '--home',
      b.home,
      'pull',
      'alice:inbox/multi/c.txt',
      'alice:inbox/multi-moved/c.txt',
      local,
    ]);
    t.equal(clash.code, 2, clash.stderr);
    t.match(clash.stderr, /would both land as c\.txt/);
  },
);

t.test(
  'push --remove-source-files moves: the sent files and links go once the listener has them, directories stay',
  async (t) => {
    const src = path.join(work, 'moving');
    await mkdir(path.join(src, 'sub'), { recursive: true });
    await writeFile(path.join(src, 'a.txt'), 'a');
    await writeFile(path.join(src, 'sub', 'b.bin'), randomBytes(100_000));
    const before = await snapshot(src);
    const r = await runCli(['--home', b.home, 'push', src, 'alice:inbox/moved', '--remove-source-files', '--json']);
    t.equal(r.code, 0, r.stderr);
    t.match(done(r.stdout), { files: 2, sourceRemoved: 2 });
    t.same(await snapshot(path.join(work, 'inbox', 'moved', 'moving')), before, 'the listener has the tree');
    t.same(
      (await snapshot(src)).map((i) => `${i.kind} ${i.path}`),
      ['dir sub'],
      'only the directories stay here',
    );
    const pull = await runCli([
      '--home',
      b.home,
      'pull',
      'alice:inbox/moved',
      path.join(work, 'moved-back'),
      '--remove-source-files',
    ]);
    t.equal(pull.code, 2, pull.stderr);
    t.match(pull.stderr, /--remove-source-files applies to push/);
  },
);

t.test(
  '--delete removes what the pushed or pulled directories hold beyond the source, after a dry run shows it',
  async (t) => {
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
    const listed = (stdout: string, event: string): unknown[] =>
      jsonLines(stdout)
        .filter((e) => e['event'] === event)
        .map((e) => e['path']);
    const before = await snapshot(path.join(work, 'inbox', 'm'));
    const dry = await runCli([
      '--home',
      b.home,
      'push',
      src,
      'alice:inbox/m',
      '--delete',
      '--exclude',
      '*.log',
      '-n',
      '--json',
    ]);
    t.equal(dry.code, 0, dry.stderr);
    t.same(
      listed(dry.stdout, 'would-delete'),
      ['m/mirror/extra.txt', 'm/mirror/sub/b.txt', 'm/mirror/sub'],
      'contents before their directory; the excluded file and the sibling are not listed',
    );
    t.match(done(dry.stdout), { dryRun: true, deleted: 3 });
    t.same(await snapshot(path.join(work, 'inbox', 'm')), before, 'the dry run removed nothing');
    const real = await runCli([
      '--home',
      b.home,
      'push',
      src,
      'alice:inbox/m',
      '--delete',
      '--exclude',
      '*.log',
      '--json',
    ]);
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
    const capped = await runCli([
      '--home',
      b.home,
      'push',
      src,
      'alice:inbox/m',
      '--delete',
      '--exclude',
      '*.log',
      '--max-delete',
      '1',
      '--json',
    ]);
    t.equal(capped.code, 1, capped.stderr);
    t.match(
      done(
        capped.stdout
          .split('\n')
          .filter((l) => !l.includes('"event":"error"'))
          .join('\n'),
      ),
      { deleted: 0 },
    );
    t.match(capped.stderr, /--delete would remove 2 paths, more than --max-delete 1: none was removed/);
    t.same((await readdir(copy)).sort(), ['a.txt', 'notes.log', 'x1.txt', 'x2.txt'], 'nothing removed');
    const cappedPull = await runCli([
      '--home',
      b.home,
      'pull',
      'alice:inbox/m/mirror',
      local,
      '--delete',
      '--max-delete',
      '0',
    ]);
    t.equal(cappedPull.code, 0, 'nothing to remove here: within any cap');
    await writeFile(path.join(local, 'mirror', 'junk2.txt'), 'local only');
    const overPull = await runCli([
      '--home',
      b.home,
      'pull',
      'alice:inbox/m/mirror',
      local,
      '--delete',
      '--max-delete',
      '0',
    ]);
    t.equal(overPull.code, 1, overPull.stderr);
    t.match(overPull.stderr, /more than --max-delete 0/);
    t.ok(existsSync(path.join(local, 'mirror', 'junk2.txt')));
    const within = await runCli([
      '--home',
      b.home,
      'push',
      src,
      'alice:inbox/m',
      '--delete',
      '--exclude',
      '*.log',
      '--max-delete',
      '2',
      '--json',
    ]);
    t.equal(within.code, 0, within.stderr);
    t.match(done(within.stdout), { deleted: 2 });
    const noDelete = await runCli(['--home', b.home, 'push', src, 'alice:inbox/m', '--max-delete', '2']);
    t.equal(noDelete.code, 2);
    t.match(noDelete.stderr, /--max-delete limits --delete: give --delete too/);

    // A share served with :nodelete takes pushes, but not --delete (nor its dry run).
    t.match(rig.listener.ready['shares'], [{}, {}, {}, { name: 'keep', noDelete: true }]);
    t.equal((await runCli(['--home', b.home, 'push', src, 'alice:keep'])).code, 0, 'a plain push is taken');
    const refused = await runCli(['--home', b.home, 'push', src, 'alice:keep', '--delete', '-n']);
    t.equal(refused.code, 3, refused.stderr);
    t.match(refused.stderr, /share keep refuses push --delete \(it is served with :nodelete\)/);
  },
);

t.test(
  '--backup keeps what --force, --update and --delete replace or remove: beside it (NAME~) or under --backup-dir; --delete spares backups',
  async (t) => {
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
    const beside = await runCli([
      '--home',
      b.home,
      'push',
      src,
      'alice:inbox/bk',
      '--force',
      '--delete',
      '-b',
      '--json',
    ]);
    t.equal(beside.code, 0, beside.stderr);
    t.match(done(beside.stdout), { files: 1, deleted: 1, backedUp: 2 });
    t.same(
      [
        await text(path.join(copy, 'a.txt')),
        await text(path.join(copy, 'a.txt~')),
        await text(path.join(copy, 'sub', 'b.txt~')),
      ],
      ['a2', 'a1', 'b1'],
    );
    t.notOk(existsSync(path.join(copy, 'sub', 'b.txt')));

    // Again: --delete spares the backups (rsync's protect rule for the suffix); the older backup is replaced.
    await writeFile(path.join(src, 'a.txt'), 'a3');
    const again = await runCli([
      '--home',
      b.home,
      'push',
      src,
      'alice:inbox/bk',
      '--force',
      '--delete',
      '--backup',
      '--json',
    ]);
    t.equal(again.code, 0, again.stderr);
    t.match(done(again.stdout), { files: 1, deleted: 0, backedUp: 1 });
    t.same(
      [
        await text(path.join(copy, 'a.txt')),
        await text(path.join(copy, 'a.txt~')),
        await text(path.join(copy, 'sub', 'b.txt~')),
      ],
      ['a3', 'a2', 'b1'],
    );

    // --backup-dir (relative to the destination, here inside the pushed directory) with a suffix; --delete spares that directory.
    await writeFile(path.join(src, 'a.txt'), 'a4');
    const dir = await runCli([
      '--home',
      b.home,
      'push',
      src,
      'alice:inbox/bk',
      '--force',
      '--delete',
      '--backup-dir',
      'bk/old',
      '--suffix',
      '.bak',
      '--json',
    ]);
    t.equal(dir.code, 0, dir.stderr);
    t.match(done(dir.stdout), { files: 1, backedUp: 3 }, 'a.txt replaced; the two ~ files removed, so kept there too');
    t.same([await text(path.join(copy, 'a.txt')), await text(path.join(copy, 'old', 'bk', 'a.txt.bak'))], ['a4', 'a3']);
    t.same(await text(path.join(copy, 'old', 'bk', 'sub', 'b.txt~.bak')), 'b1');
    const dirAgain = await runCli([
      '--home',
      b.home,
      'push',
      src,
      'alice:inbox/bk',
      '--delete',
      '--backup-dir',
      'bk/old',
      '--json',
    ]);
    t.equal(dirAgain.code, 0, dirAgain.stderr);
    t.match(done(dirAgain.stdout), { deleted: 0, backedUp: 0 }, 'the backup directory is not extraneous');

    // A pull keeps its own backups, under a directory of LOCAL.
    const local = path.join(work, 'bk-pulled');
    t.equal((await runCli(['--home', b.home, 'pull', 'alice:inbox/bk/bk/a.txt', local])).code, 0);
    await writeFile(path.join(local, 'a.txt'), 'local edit');
    const pulled = await runCli([
      '--home',
      b.home,
      'pull',
      'alice:inbox/bk/bk/a.txt',
      local,
      '--force',
      '--backup-dir',
      'saved',
      '--json',
    ]);
    t.equal(pulled.code, 0, pulled.stderr);
    t.match(done(pulled.stdout), { files: 1, backedUp: 1 });
    t.same(
      [await text(path.join(local, 'a.txt')), await text(path.join(local, 'saved', 'a.txt'))],
      ['a4', 'local edit'],
    );

    const bad = await runCli(['--home', b.home, 'push', src, 'alice:inbox/bk', '--force', '--backup-dir', '../out']);
    t.equal(bad.code, 2, bad.stderr);
    t.match(bad.stderr, /--backup-dir "\.\.\/out" must be a relative path inside the destination/);
    const lone = await runCli(['--home', b.home, 'push', src, 'alice:inbox/bk', '--suffix', '.old']);
    t.equal(lone.code, 2, lone.stderr);
    t.match(lone.stderr, /--suffix names backups: give --backup or --backup-dir too/);
  },
);
