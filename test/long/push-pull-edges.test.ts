// Push and pull through the real CLI over loopback, the edges: ls, --itemize, special files,
// stdin, no-clobber, read-only and allow-listed shares, refused paths, a tampered frame, resume
// after SIGKILL of either side, --files-from, -L, --chmod, sparse files, size filters. The rig
// is push-pull-rig.ts; the transfer's options are push-pull.test.ts.
import t from 'tap';
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readdir, readFile, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { CLI, jsonLines, runCli, startListener } from '../e2e/cli-harness.js';
import { snapshot } from '../e2e/tree-helpers.js';
import { startPushPullRig } from '../e2e/push-pull-rig.js';

const rig = await startPushPullRig();
const { a, b, c, work, roShare, privShare, shareArgs, pairAlice, done } = rig;
t.teardown(() => rig.listener.stop('SIGKILL'));

t.test(
  "-i: a listener names a path with a bidi character escaped and a link's odd target blanked, and the push succeeds",
  async (t) => {
    // A manifest path may hold U+202E (only C0/C1 controls are refused), a link target anything:
    // the TransferDone lists the CLI prints carry neither raw (the peer would refuse the paths).
    const src = path.join(work, 'odd');
    await mkdir(src, { recursive: true });
    await writeFile(path.join(src, 'a\u202eb.txt'), 'x');
    await symlink('t\u001b[2J', path.join(src, 'link'));
    const pushed = await runCli(['--home', b.home, 'push', src, 'alice:inbox/odd', '-i', '--json']);
    t.equal(pushed.code, 0, pushed.stderr);
    const lines = jsonLines(pushed.stdout);
    t.same(
      lines.filter((e) => e['event'] === 'published'),
      [{ event: 'published', path: 'odd/odd/a\\u202eb.txt', replaced: false }],
      'the path escaped',
    );
    t.same(
      lines.filter((e) => e['event'] === 'created' && e['kind'] === 'symlink'),
      [{ event: 'created', path: 'odd/odd/link', kind: 'symlink', target: 't [2J', replaced: false }],
      'the target blanked',
    );
    t.notOk(pushed.stdout.includes('\u001b') || pushed.stdout.includes('\u202e'), 'nothing raw reaches the terminal');
    // Pulled back, the link's target comes in the listener's manifest: blanked in what is shown.
    const pulled = await runCli(['--home', b.home, 'pull', 'alice:inbox/odd/odd', path.join(work, 'odd-back'), '-i']);
    t.equal(pulled.code, 0, pulled.stderr);
    t.match(pulled.stdout, /^cL\+{9} odd\/link -> t \[2J$/m, 'a pull shows the target blanked');
    // The peer's bidi-named file: written under its real name, shown escaped.
    t.match(pulled.stdout, /^>f\+{9} odd\/a\\u202eb\.txt$/m, 'a pull shows the name escaped');
    t.ok(existsSync(path.join(work, 'odd-back', 'odd', 'a\u202eb.txt')), 'and writes it under its real name');
    t.notOk(pulled.stdout.includes('\u001b') || pulled.stdout.includes('\u202e'), 'nothing raw reaches the terminal');
    const dry = await runCli(['--home', b.home, 'pull', 'alice:inbox/odd/odd', path.join(work, 'odd-dry'), '-n']);
    t.equal(dry.code, 0, dry.stderr);
    t.match(dry.stdout, /^odd\/link -> t \[2J \(symlink\)$/m, 'and so does a dry run');
    t.match(dry.stdout, /^odd\/a\\u202eb\.txt \(/m, 'the name escaped in a dry run');
    const listed = await runCli(['--home', b.home, 'ls', 'alice:inbox/odd', '-r']);
    t.equal(listed.code, 0, listed.stderr);
    t.match(listed.stdout, / odd\/a\\u202eb\.txt$/m, 'ls -r shows it escaped');
    t.notOk(dry.stdout.includes('\u202e') || listed.stdout.includes('\u202e'), 'neither shows it raw');
  },
);

t.test(
  'ls lists the shares this node may use, a directory, or (-r) everything below it; names and metadata only',
  async (t) => {
    const shares = await runCli(['--home', b.home, 'ls', 'alice', '--json']);
    t.equal(shares.code, 0, shares.stderr);
    t.same(
      jsonLines(shares.stdout).filter((e) => e['event'] === 'share'),
      [
        { event: 'share', name: 'inbox', readOnly: false, noDelete: false },
        { event: 'share', name: 'ro', readOnly: true, noDelete: false },
        { event: 'share', name: 'keep', readOnly: false, noDelete: true },
      ],
      'not the private share, which allows carol only',
    );

    const src = path.join(work, 'listed');
    await mkdir(path.join(src, 'sub'), { recursive: true });
    await writeFile(path.join(src, 'a.txt'), 'abc');
    await writeFile(path.join(src, 'sub', 'b.bin'), randomBytes(5000));
    await symlink('a.txt', path.join(src, 'link'));
    await utimes(path.join(src, 'a.txt'), new Date(1_700_000_000_000), new Date(1_700_000_000_000));
    t.equal((await runCli(['--home', b.home, 'push', src, 'alice:inbox/ls'])).code, 0);
    const entries = (stdout: string): Record<string, unknown>[] =>
      jsonLines(stdout).filter((e) => e['event'] === 'entry');
    const top = await runCli(['--home', b.home, 'ls', 'alice:inbox/ls/listed', '--json']);
    t.equal(top.code, 0, top.stderr);
    t.same(
      entries(top.stdout).map((e) => `${String(e['kind'])} ${String(e['path'])}`),
      ['file a.txt', 'symlink link', 'dir sub'],
      "the directory's own entries, in name order",
    );
    t.match(entries(top.stdout)[0], { size: 3, mode: 0o644, mtimeMs: 1_700_000_000_000 });
    t.match(entries(top.stdout)[1], { target: 'a.txt' });
    const all = await runCli(['--home', b.home, 'ls', 'alice:inbox/ls', '-r', '--json']);
    t.same(
      entries(all.stdout).map((e) => e['path']),
      ['listed', 'listed/a.txt', 'listed/link', 'listed/sub', 'listed/sub/b.bin'],
    );
    t.match(jsonLines(all.stdout).at(-1), { event: 'done', entries: 5 });
    const root = await runCli(['--home', b.home, 'ls', 'alice:inbox', '-r', '--json']);
    t.notOk(
      entries(root.stdout).some((e) => String(e['path']).startsWith('.clawpeer')),
      "clawpeer's own state is never listed",
    );
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
  },
);

t.test(
  '--itemize-changes (-i) lists each file published, new or replacing a different one, and each directory and symlink created, for push and pull',
  async (t) => {
    const src = path.join(work, 'items');
    await mkdir(path.join(src, 'd'), { recursive: true });
    await writeFile(path.join(src, 'a.txt'), 'a1');
    await writeFile(path.join(src, 'd', 'b.txt'), 'b1');
    await symlink('a.txt', path.join(src, 'link'));
    const events = (stdout: string, event: string): unknown[] => jsonLines(stdout).filter((e) => e['event'] === event);
    const first = await runCli(['--home', b.home, 'push', src, 'alice:inbox/it', '-i', '--json']);
    t.equal(first.code, 0, first.stderr);
    const byPath = (list: unknown[]): unknown[] =>
      [...list].sort((x, y) => (String((x as { path: string }).path) < String((y as { path: string }).path) ? -1 : 1));
    t.same(
      byPath(events(first.stdout, 'published')),
      [
        { event: 'published', path: 'it/items/a.txt', replaced: false },
        { event: 'published', path: 'it/items/d/b.txt', replaced: false },
      ],
      'both, new',
    );
    t.same(
      events(first.stdout, 'created'),
      [
        { event: 'created', path: 'it/items', kind: 'dir' },
        { event: 'created', path: 'it/items/d', kind: 'dir' },
        { event: 'created', path: 'it/items/link', kind: 'symlink', target: 'a.txt', replaced: false },
      ],
      'the directories, then the symlink',
    );
    await writeFile(path.join(src, 'a.txt'), 'a2');
    const again = await runCli(['--home', b.home, 'push', src, 'alice:inbox/it', '-i', '--force']);
    t.equal(again.code, 0, again.stderr);
    t.match(again.stdout, /^>fc\.{8} it\/items\/a\.txt$/m, "the replaced file, rsync's code");
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
  },
);

t.test(
  'a FIFO in a pushed or pulled tree is skipped with a warning, as rsync skips non-regular files; the rest goes',
  async (t) => {
    const src = path.join(work, 'special');
    await mkdir(src);
    await writeFile(path.join(src, 'a.txt'), 'a');
    execFileSync('mkfifo', [path.join(src, 'pipe')]);
    const push = await runCli(['--home', b.home, 'push', src, 'alice:inbox', '--json']);
    t.equal(push.code, 0, push.stderr);
    t.match(done(push.stdout), { files: 1 });
    t.match(push.stderr, /skipping a non-regular file path=.*special\/pipe kind=a FIFO/);
    t.same(
      (await snapshot(path.join(work, 'inbox', 'special'))).map((i) => i.path),
      ['a.txt'],
      'the file arrived, the FIFO did not',
    );
    // The listener's share holds one too: a pull skips it there (the listener logs it).
    execFileSync('mkfifo', [path.join(work, 'inbox', 'special', 'pipe2')]);
    const local = path.join(work, 'special-pulled');
    const pull = await runCli(['--home', b.home, 'pull', 'alice:inbox/special', local, '--json']);
    t.equal(pull.code, 0, pull.stderr);
    t.same(
      (await snapshot(path.join(local, 'special'))).map((i) => i.path),
      ['a.txt'],
    );
    // -q (rsync's): no summary and no warning; errors still say what went wrong.
    const quiet = await runCli(['--home', b.home, 'push', src, 'alice:inbox/quiet', '-q']);
    t.equal(quiet.code, 0, quiet.stderr);
    t.equal(quiet.stdout, '', 'nothing on stdout');
    t.equal(quiet.stderr, '', 'not even the skipped FIFO');
    t.same(
      (await snapshot(path.join(work, 'inbox', 'quiet', 'special'))).map((i) => i.path),
      ['a.txt'],
      'and it did push',
    );
    const quietJson = await runCli(['--home', b.home, 'push', src, 'alice:inbox/quiet', '-q', '--json']);
    t.match(done(quietJson.stdout), { files: 0 }, '--json keeps its done record');
    const fifo = await runCli(['--home', b.home, 'push', path.join(src, 'pipe'), 'alice:inbox', '--quiet']);
    t.equal(fifo.code, 1, 'a FIFO named on the command line is an error, not a silent no-op');
    t.match(fifo.stderr, /pipe is a FIFO: only files, directories and symlinks are sent/);
  },
);

t.test(
  "push - sends what is piped in as one file, named by --stdin-name (croc's pipe); nothing is left in the temp dir",
  async (t) => {
    const data = randomBytes(300_000);
    const spoolsBefore = (await readdir(tmpdir())).filter((n) => n.startsWith('clawpeer-stdin-')).length;
    const r = await runCli(['--home', b.home, 'push', '-', 'alice:inbox/piped', '--stdin-name', 'data.bin', '--json'], {
      stdin: data,
    });
    t.equal(r.code, 0, r.stderr);
    t.match(done(r.stdout), { files: 1, bytes: data.length });
    t.same(await readFile(path.join(work, 'inbox', 'piped', 'data.bin')), data, 'byte-identical');
    const plain = await runCli(['--home', b.home, 'push', '-', 'alice:inbox/piped'], { stdin: Buffer.from('hi\n') });
    t.equal(plain.code, 0, plain.stderr);
    t.equal(
      await readFile(path.join(work, 'inbox', 'piped', 'stdin'), 'utf8'),
      'hi\n',
      'named stdin without --stdin-name',
    );
    t.equal(
      (await readdir(tmpdir())).filter((n) => n.startsWith('clawpeer-stdin-')).length,
      spoolsBefore,
      'the spool is removed',
    );
    // --exclude-from - reads standard input too (yargs alone would take the lone - for a flag).
    const rules = await runCli(
      ['--home', b.home, 'push', path.join(work, 'items'), 'alice:inbox/fromstdin', '--exclude-from', '-', '--json'],
      { stdin: Buffer.from('*.txt\n') },
    );
    t.equal(rules.code, 0, rules.stderr);
    t.notOk(
      existsSync(path.join(work, 'inbox', 'fromstdin', 'items', 'a.txt')),
      'the pattern read from standard input applied',
    );
    const both = await runCli(['--home', b.home, 'push', '-', 'alice', '--exclude-from', '-'], {
      stdin: Buffer.from('x'),
    });
    t.equal(both.code, 2);
    t.match(both.stderr, /--exclude-from - and the source - both read standard input/);
    const bad = await runCli(['--home', b.home, 'push', '-', 'alice', '--stdin-name', 'a/b'], {
      stdin: Buffer.from('x'),
    });
    t.equal(bad.code, 2);
    t.match(bad.stderr, /--stdin-name "a\/b": a file name, not a path/);
    const stray = await runCli(['--home', b.home, 'push', path.join(work, 'items'), 'alice', '--stdin-name', 'x']);
    t.equal(stray.code, 2);
    t.match(stray.stderr, /give - as a source/);
    // And back: pull PEER:SHARE/FILE - writes the file's bytes, and nothing else, on stdout.
    const out = await new Promise<Buffer>((resolve, reject) => {
      const child = spawn(process.execPath, [CLI, '--home', b.home, 'pull', 'alice:inbox/piped/data.bin', '-'], {
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      const parts: Buffer[] = [];
      child.stdout.on('data', (d: Buffer) => parts.push(d));
      child.on('error', reject);
      child.on('close', (code) =>
        code === 0 ? resolve(Buffer.concat(parts)) : reject(new Error(`pull - exited ${String(code)}`)),
      );
    });
    t.same(out, data, 'the pulled file on standard output, byte-identical');
    const dir = await runCli(['--home', b.home, 'pull', 'alice:inbox/piped', '-']);
    t.equal(dir.code, 2);
    t.match(dir.stderr, /piped is a directory: pull it into a directory/);
    t.equal(dir.stdout, '');
  },
);

t.test('no-clobber exits 5 naming the file; --force replaces', async (t) => {
  const src = path.join(work, 'clash');
  await mkdir(src);
  await writeFile(path.join(src, 'f.txt'), 'one');
  t.equal((await runCli(['--home', b.home, 'push', src, 'alice'])).code, 0);
  await writeFile(path.join(src, 'f.txt'), 'two!');
  const refused = await runCli(['--home', b.home, 'push', src, 'alice']);
  t.equal(refused.code, 5, refused.stderr);
  t.match(refused.stderr, /clash\/f\.txt exists .*use --force/);
  t.same(
    (await snapshot(path.join(work, 'inbox', 'clash'))).map((i) => i.size),
    [3],
    'old content kept',
  );
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
  t.same(
    (await readdir(roShare)).filter((n) => n !== '.clawpeer'),
    ['readme.txt'],
  );
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
  t.match(rig.listener.ready['shares'], [{ name: 'inbox' }, { name: 'ro' }, { name: 'private', allow: [c.id] }]);
  const src = path.join(work, 'allowed.txt');
  await writeFile(src, 'for carol');
  const bob = await runCli(['--home', b.home, 'push', src, 'alice:private']);
  t.equal(bob.code, 3, bob.stderr);
  t.match(bob.stderr, /not on the allow list of share private/);
  const bobPull = await runCli(['--home', b.home, 'pull', 'alice:private', path.join(work, 'bob-private')]);
  t.equal(bobPull.code, 3);
  await runCli(['--home', c.home, 'pair', 'add', a.id, '--name', 'alice', '--addr', `127.0.0.1:${rig.listener.port}`]);
  const carol = await runCli(['--home', c.home, 'push', src, 'alice:private']);
  t.equal(carol.code, 0, carol.stderr);
  t.same(
    (await readdir(privShare)).filter((n) => n !== '.clawpeer'),
    ['allowed.txt'],
  );
  const badAllow = await runCli([
    '--home',
    a.home,
    'listen',
    '--port',
    '0',
    '--share',
    `x=${work}`,
    '--allow',
    'x=nobody',
  ]);
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

/**
 * The resumed file, and how much of it has gone when the kill lands: a quarter. A file this size
 * is cut into ~32 chunks (the listener's 256 KiB average), each held 150 ms before it goes: ~5 s
 * of sending, while --json tells progress every 500 ms. At 15 ms a chunk the whole push could end
 * before the progress line that triggers the kill (a fresh-clone run saw the file published).
 */
const RESUME_BYTES = 8 << 20;
const RESUME_KILL_AT = RESUME_BYTES / 4;
const RESUME_DELAY_PER_CHUNK_MS = 150;

/**
 * Runs a push with a per-chunk delay and SIGKILLs `victim` once some bytes have gone; resolves
 * to how the push process ended (the signal when the kill landed first).
 */
async function interruptedPush(src: string, victim: 'sender' | 'receiver'): Promise<string> {
  const child = spawn(
    process.execPath,
    [CLI, '--home', b.home, 'push', src, 'alice', '--json', '--streams', '1', '--window', '2'],
    {
      env: { ...process.env, CLAWPEER_TEST_DELAY_PER_CHUNK_MS: String(RESUME_DELAY_PER_CHUNK_MS) },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const closed = new Promise<string>((r) => child.on('close', (code, signal) => r(signal ?? `exit ${code}`)));
  await new Promise<void>((resolve) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      const e = JSON.parse(line) as Record<string, unknown>;
      if (e['event'] === 'progress' && e['phase'] === 'sending' && (e['bytes'] as number) > RESUME_KILL_AT) resolve();
    });
    child.on('close', () => resolve());
  });
  if (victim === 'receiver') await rig.listener.stop('SIGKILL');
  // The sender goes too (for the receiver case it would only wait for its idle timeout).
  child.kill('SIGKILL');
  return closed;
}

for (const victim of ['sender', 'receiver'] as const) {
  t.test(`resume after SIGKILL of the ${victim}`, async (t) => {
    const src = path.join(work, `resume-${victim}`);
    await mkdir(src);
    await writeFile(path.join(src, 'big.bin'), randomBytes(RESUME_BYTES));
    t.equal(await interruptedPush(src, victim), 'SIGKILL', 'the push was killed before it finished');
    t.same(
      (await readdir(path.join(work, 'inbox', `resume-${victim}`)).catch(() => [])).filter(
        (n) => !n.startsWith('.clawpeer'),
      ),
      [],
      'no partial file at the final path',
    );
    if (victim === 'receiver') {
      rig.listener = await startListener(a.home, shareArgs);
      await pairAlice();
    }
    const rerun = await runCli(['--home', b.home, 'push', src, 'alice', '--json']);
    t.equal(rerun.code, 0, rerun.stderr);
    const d = done(rerun.stdout);
    t.ok((d['chunksSkipped'] as number) > 0, `chunks already there were skipped (${String(d['chunksSkipped'])})`);
    // How much the first attempt got in depends on scheduling on a loaded 2-core machine; what
    // must hold is that the rerun skips what the receiver verified and sends less than the file.
    t.ok(
      (d['wireBytes'] as number) < 0.95 * RESUME_BYTES,
      `the rerun sent ${String(d['wireBytes'])} bytes, below ${RESUME_BYTES}`,
    );
    t.same(await snapshot(path.join(work, 'inbox', `resume-${victim}`)), await snapshot(src));
  });
}

t.test(
  'push --files-from sends what a list names, each at its path below the base, with the directories it lies in (rsync)',
  async (t) => {
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
    const push = await runCli([
      '--home',
      b.home,
      'push',
      '--files-from',
      list,
      base,
      'alice:inbox/listed',
      '--exclude',
      '*.tmp',
      '--json',
    ]);
    t.equal(push.code, 0, push.stderr);
    t.match(done(push.stdout), { files: 3 });
    const landed = await snapshot(path.join(work, 'inbox', 'listed'));
    t.same(
      landed.map((i) => `${i.kind} ${i.path}`),
      ['dir docs', 'file docs/guide.md', 'dir src', 'dir src/lib', 'file src/lib/a.ts', 'file top.txt'],
      'the listed paths and the directories they lie in, nothing else',
    );
    const source = await snapshot(base);
    for (const p of ['src/lib', 'src/lib/a.ts', 'docs/guide.md', 'top.txt'])
      t.same(
        landed.find((i) => i.path === p),
        source.find((i) => i.path === p),
        `${p} byte-identical, mode and mtime kept`,
      );

    // --from0 on standard input (find -print0), with --remove-source-files: only what was listed goes.
    const piped = await runCli(
      [
        '--home',
        b.home,
        'push',
        '--files-from',
        '-',
        '--from0',
        base,
        'alice:inbox/listed0',
        '--remove-source-files',
        '--json',
      ],
      { stdin: Buffer.from('src/left-out.ts\0top.txt\0') },
    );
    t.equal(piped.code, 0, piped.stderr);
    t.same(
      (await snapshot(path.join(work, 'inbox', 'listed0'))).map((i) => i.path),
      ['src', 'src/left-out.ts', 'top.txt'],
    );
    t.notOk(existsSync(path.join(base, 'top.txt')), 'the sent file was removed');
    t.ok(existsSync(path.join(base, 'src', 'lib', 'a.ts')), 'what was not listed stays');

    // An empty list is nothing to do (as rsync), not an error; bad lists and flags are usage errors naming the problem.
    const empty = await runCli(['--home', b.home, 'push', '--files-from', '-', base, 'alice:inbox/none'], {
      stdin: Buffer.from('# nothing\n'),
    });
    t.equal(empty.code, 0, empty.stderr);
    t.match(empty.stdout, /nothing to push: standard input lists no paths/);
    t.notOk(existsSync(path.join(work, 'inbox', 'none')));
    const to = 'alice:inbox/bad';
    const cases: [string[], string, RegExp][] = [
      [[base, to], '../secret\n', /--files-from entry 1 \("\.\.\/secret"\) climbs above the base directory/],
      [[base, to], 'missing.txt\n', /--files-from lists missing\.txt, which does not exist/],
      [
        [path.join(base, 'docs', 'guide.md'), to],
        'x\n',
        /guide\.md is not a directory \(the listed paths are relative to it\)/,
      ],
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
    const pull = await runCli(['--home', b.home, 'pull', '--files-from', '-', 'alice:inbox/listed', back, '--json'], {
      stdin: Buffer.from('src/lib/a.ts\ndocs\n'),
    });
    t.equal(pull.code, 0, pull.stderr);
    const pulled = await snapshot(back);
    t.same(
      pulled.map((i) => `${i.kind} ${i.path}`),
      ['dir docs', 'file docs/guide.md', 'dir src', 'dir src/lib', 'file src/lib/a.ts'],
    );
    t.same(
      pulled.find((i) => i.path === 'src/lib'),
      landed.find((i) => i.path === 'src/lib'),
      'the implied directory keeps its mode and mtime',
    );
    t.same(
      pulled.find((i) => i.path === 'src/lib/a.ts'),
      source.find((i) => i.path === 'src/lib/a.ts'),
      'byte-identical',
    );
    const outside = await runCli(
      ['--home', b.home, 'pull', '--files-from', '-', 'alice:inbox/listed', path.join(work, 'listed-bad')],
      { stdin: Buffer.from('top.txt\n.clawpeer/index.bin\n') },
    );
    t.equal(outside.code, 1, outside.stderr);
    t.match(
      outside.stderr,
      /lists \.clawpeer\/index\.bin: \.clawpeer directories and temp files are clawpeer's own state, never sent/,
    );
    const missing = await runCli(
      ['--home', b.home, 'pull', '--files-from', '-', 'alice:inbox/listed', path.join(work, 'listed-bad')],
      { stdin: Buffer.from('nothing/here\n') },
    );
    t.equal(missing.code, 1, missing.stderr);
    t.match(
      missing.stderr,
      /lists nothing\/here, but nothing does not exist in inbox\/listed/,
      'the listener names its share, not its local path',
    );
    t.notOk(existsSync(path.join(work, 'listed-bad')), 'nothing was written, not even the destination directory');
    const from0 = await runCli(['--home', b.home, 'push', '--from0', base, 'alice:inbox/bad']);
    t.equal(from0.code, 2);
    t.match(from0.stderr, /--from0 says how the --files-from list is separated/);
  },
);

t.test(
  'push -L sends symlinks as what they point to, --copy-unsafe-links only those leading out of the tree (rsync)',
  async (t) => {
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
    t.match(
      plain.stderr,
      /skipping a symlink that points outside the tree \(--copy-unsafe-links sends what it points to\)/,
    );
    t.notOk(
      existsSync(path.join(work, 'inbox', 'links-plain', 'linked', 'assets')),
      'by default the escaping link is left out',
    );
    const unsafe = await runCli([
      '--home',
      b.home,
      'push',
      root,
      'alice:inbox/links-unsafe',
      '--copy-unsafe-links',
      '--json',
    ]);
    t.equal(unsafe.code, 0, unsafe.stderr);
    const u = await snapshot(path.join(work, 'inbox', 'links-unsafe', 'linked'));
    t.same(
      u.map((i) => `${i.kind} ${i.path}`),
      ['dir assets', 'file assets/logo.png', 'symlink current', 'file main.txt'],
    );
    t.same(
      await readFile(path.join(work, 'inbox', 'links-unsafe', 'linked', 'assets', 'logo.png')),
      shared,
      'what the link pointed to, byte-identical',
    );
    const all = await runCli(['--home', b.home, 'push', root, 'alice:inbox/links-all', '-L', '--json']);
    t.equal(all.code, 0, all.stderr);
    t.same(
      (await snapshot(path.join(work, 'inbox', 'links-all', 'linked'))).map((i) => `${i.kind} ${i.path}`),
      ['dir assets', 'file assets/logo.png', 'file current', 'file main.txt'],
    );
    t.equal(await readFile(path.join(work, 'inbox', 'links-all', 'linked', 'current'), 'utf8'), 'main');
    const both = await runCli(['--home', b.home, 'push', root, 'alice:inbox/x', '-L', '--copy-unsafe-links']);
    t.equal(both.code, 2);
    t.match(both.stderr, /give one/);
    const moving = await runCli(['--home', b.home, 'push', root, 'alice:inbox/x', '-L', '--remove-source-files']);
    t.equal(moving.code, 2);
    t.match(moving.stderr, /--remove-source-files with --copy-links/);
  },
);

t.test(
  '--chmod sets the permissions things land with (rsync): a push announces them so, a pull applies them here',
  async (t) => {
    const src = path.join(work, 'modes');
    await mkdir(path.join(src, 'bin'), { recursive: true });
    await writeFile(path.join(src, 'bin', 'run.sh'), '#!/bin/sh\n');
    await writeFile(path.join(src, 'notes.txt'), 'notes');
    await chmod(path.join(src, 'bin', 'run.sh'), 0o700);
    await chmod(path.join(src, 'notes.txt'), 0o600);
    await chmod(path.join(src, 'bin'), 0o700);
    const modes = async (root: string): Promise<string[]> =>
      (await snapshot(root)).map((i) => `${i.path} ${i.mode.toString(8)}`);
    const push = await runCli([
      '--home',
      b.home,
      'push',
      src,
      'alice:inbox/modes',
      '--chmod',
      'D755,Fgo+r',
      '--chmod',
      'a+X',
    ]);
    t.equal(push.code, 0, push.stderr);
    t.same(
      await modes(path.join(work, 'inbox', 'modes', 'modes')),
      ['bin 755', 'bin/run.sh 755', 'notes.txt 644'],
      'directories 755, files readable by all, executable ones by all',
    );
    t.same(await modes(src), ['bin 700', 'bin/run.sh 700', 'notes.txt 600'], 'the source keeps its own');
    const dest = path.join(work, 'modes-pulled');
    const pull = await runCli(['--home', b.home, 'pull', 'alice:inbox/modes/modes', dest, '--chmod', 'go=']);
    t.equal(pull.code, 0, pull.stderr);
    t.same(await modes(path.join(dest, 'modes')), ['bin 700', 'bin/run.sh 700', 'notes.txt 600']);
    const bad = await runCli(['--home', b.home, 'push', src, 'alice:inbox/modes', '--chmod', 'F64x']);
    t.equal(bad.code, 2);
    t.match(bad.stderr, /--chmod "F64x": "F64x" is not a chmod clause/);
  },
);

t.test(
  'a sparse file lands sparse, pushed and pulled: its zeros are holes, not written blocks (cp, rsync -S)',
  async (t) => {
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
    for (const [side, file] of [
      ['pushed', there],
      ['pulled', path.join(pulledDir, 'vm.img')],
    ] as const) {
      const st = await stat(file);
      t.equal(st.size, bytes.length, `${side}: its size`);
      t.ok(st.blocks * 512 < 4 << 20, `${side}: ${st.blocks * 512} bytes allocated for ${bytes.length}`);
      t.same(await readFile(file), bytes, `${side}: byte-identical`);
    }
  },
);

t.test(
  "pull -L fetches symlinks as what they point to inside the listener's share, never what lies outside it",
  async (t) => {
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
    t.same(
      await kinds(await pulled([])),
      ['symlink current', 'file main.txt'],
      'links as links; those leading out of the tree left out',
    );
    const all = await pulled(['-L']);
    t.same(
      await kinds(all),
      ['file current', 'file main.txt', 'dir near', 'file near/e.txt'],
      '-L: what the links inside the share point to; nothing from outside it',
    );
    t.equal(await readFile(path.join(all, 'near', 'e.txt'), 'utf8'), 'elsewhere');
    t.same(
      await kinds(await pulled(['--copy-unsafe-links'])),
      ['symlink current', 'file main.txt', 'dir near', 'file near/e.txt'],
      '--copy-unsafe-links: only the link out of the tree (still inside the share)',
    );
    t.ok(
      rig.listener.stderr().includes('skipping a symlink that leads out of the share: not sent, not even with -L'),
      'the listener says why it left one out',
    );
    const both = await runCli([
      '--home',
      b.home,
      'pull',
      'alice:inbox/pl-links/tree',
      path.join(work, 'x'),
      '-L',
      '--copy-unsafe-links',
    ]);
    t.equal(both.code, 2);
  },
);

t.test('--min-size and --max-size leave out files by size (rsync): a push here, a pull by the listener', async (t) => {
  const src = path.join(work, 'sized');
  await mkdir(path.join(src, 'sub'), { recursive: true });
  await writeFile(path.join(src, 'tiny.txt'), 'x');
  await writeFile(path.join(src, 'mid.bin'), randomBytes(3000));
  await writeFile(path.join(src, 'sub', 'big.bin'), randomBytes(300_000));
  const push = await runCli(['--home', b.home, 'push', src, 'alice:inbox/sized-push', '--max-size', '100K', '--json']);
  t.equal(push.code, 0, push.stderr);
  t.match(done(push.stdout), { files: 2 });
  t.same(
    (await snapshot(path.join(work, 'inbox', 'sized-push', 'sized'))).map((i) => `${i.kind} ${i.path}`),
    ['file mid.bin', 'dir sub', 'file tiny.txt'],
    'the big file left out; its directory still made',
  );
  const full = await runCli(['--home', b.home, 'push', src, 'alice:inbox/sized-all', '--json']);
  t.equal(full.code, 0, full.stderr);
  const dest = path.join(work, 'sized-pulled');
  const pull = await runCli([
    '--home',
    b.home,
    'pull',
    'alice:inbox/sized-all/sized',
    dest,
    '--min-size',
    '1K',
    '--max-size',
    '0',
    '--json',
  ]);
  t.equal(pull.code, 0, pull.stderr);
  t.same(
    (await snapshot(path.join(dest, 'sized'))).filter((i) => i.kind === 'file').map((i) => i.path),
    ['mid.bin', 'sub/big.bin'],
    'the listener left out the 1-byte file; --max-size 0 is no limit',
  );
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
  const toStdout = await runCli([
    '--home',
    b.home,
    'pull',
    'alice:inbox/sized-all/sized/mid.bin',
    '-',
    '--max-size',
    '1M',
  ]);
  t.equal(toStdout.code, 2);
  t.match(toStdout.stderr, /--max-size with the destination -/);
});

t.test(
  'a pull the listener refuses leaves no destination directory; one that cannot be created is an IO error naming it',
  async (t) => {
    const dest = path.join(work, 'refused-dest');
    const missing = await runCli(['--home', b.home, 'pull', 'alice:inbox/no-such-thing', dest]);
    t.equal(missing.code, 1, missing.stderr);
    t.match(missing.stderr, /inbox\/no-such-thing does not exist/);
    t.notOk(existsSync(dest), 'no empty directory left behind');
    const blocker = path.join(work, 'a-file');
    await writeFile(blocker, 'x');
    await mkdir(path.join(work, 'inbox', 'tree'), { recursive: true }); // something the listener has
    await writeFile(path.join(work, 'inbox', 'tree', 'f.txt'), 'f\n');
    const bad = await runCli(['--home', b.home, 'pull', 'alice:inbox/tree', path.join(blocker, 'sub')]);
    t.equal(bad.code, 1, bad.stderr);
    t.match(bad.stderr, /cannot create .*a-file\/sub/);
    if (existsSync('/proc/self')) {
      // Node's own recursive mkdir retries forever there (ENOENT under an existing directory).
      const proc = await runCli(['--home', b.home, 'pull', 'alice:inbox/tree', '/proc/clawpeer-no-such/dest'], {
        timeoutMs: 30_000,
      });
      t.equal(proc.code, 1, proc.stderr);
      t.match(proc.stderr, /cannot create \/proc\/clawpeer-no-such\/dest: ENOENT/);
    }
    const after = await runCli(['--home', b.home, 'ls', 'alice:inbox']);
    t.equal(after.code, 0, `the listener serves on: ${after.stderr}`);
  },
);

t.test(
  'a re-push brings a changed mode and mtime to identical files without sending their content (rsync -a)',
  async (t) => {
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
    t.same(
      jsonLines(dry.stdout).filter((e) => e['event'] === 'would-update'),
      [{ event: 'would-update', path: 'meta/meta/doc.txt', time: true, perms: true }],
    );
    t.match(
      jsonLines(dry.stdout).find((e) => e['event'] === 'done'),
      { files: 0, filesUnchanged: 1, filesToUpdate: 1 },
    );
    t.not(
      (await snapshot(path.join(work, 'inbox', 'meta', 'meta'))).find((e) => e.path === 'doc.txt')?.mode,
      0o600,
      'the dry run set nothing',
    );
    const again = await runCli(['--home', b.home, 'push', src, 'alice:inbox/meta', '-i']);
    t.equal(again.code, 0, again.stderr);
    t.match(
      again.stdout,
      /^\.f\.\.tp\.\.\.\.\. meta\/meta\/doc\.txt$/m,
      'itemized as rsync does: time and permissions set, nothing transferred',
    );
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
    t.same(
      jsonLines(pull.stdout).filter((e) => e['event'] === 'updated'),
      [{ event: 'updated', path: 'meta/doc.txt', time: false, perms: true }],
    );
    t.same(await snapshot(path.join(dest, 'meta')), await snapshot(src));
  },
);
