// `clawpeer send` / `receive` through the real CLI on loopback: one transfer by a short code
// with no running listener and no lasting pairing. A file and a directory arrive whole (found by
// --addr, and by the code's nameplate on a loopback-only LAN), nothing is written to peers.json
// on either side, a fresh machine with no `init` sends and receives, a wrong code burns the
// code (exit 3 on both sides) with nothing received, and Ctrl-C withdraws it.
import t from 'tap';
import { mkdir, mkdtemp, readFile, readdir, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { initNode, jsonLines, runCli, tempHome } from './cli-harness.js';
import { sending } from './send-harness.js';

/** A source tree: a.txt, a sibling beside it, and a directory with a nested file. */
async function sourceTree(): Promise<string> {
  const src = await mkdtemp(join(tmpdir(), 'clawpeer-send-src-'));
  await writeFile(join(src, 'a.txt'), 'sent once by a short code\n');
  await writeFile(join(src, 'sibling.txt'), 'never asked for\n');
  await mkdir(join(src, 'photos', '2026'), { recursive: true });
  await writeFile(join(src, 'photos', '2026', 'p.jpg'), Buffer.alloc(70_000, 7));
  return src;
}

t.test('send a file and a directory by --addr: both arrive, nothing pinned on either side', async (t) => {
  const sender = await initNode('send-s');
  const receiverHome = join(await tempHome('send-r'), 'never-made'); // a fresh machine: no init
  const src = await sourceTree();
  const dst = await mkdtemp(join(tmpdir(), 'clawpeer-recv-'));
  const send = sending([
    '--home',
    sender.home,
    '--no-lan-discovery',
    'send',
    join(src, 'a.txt'),
    join(src, 'photos'),
    '--host',
    '127.0.0.1',
  ]);
  const first = await send.first;
  t.match(first, { event: 'send-code', code: /^[1-9][0-9]*-[a-z]+-[a-z]+$/, id: sender.id, addr: /^127\.0\.0\.1:/ });
  const got = await runCli([
    '--home',
    receiverHome,
    'receive',
    String(first['code']),
    dst,
    '--addr',
    String(first['addr']),
    '--json',
  ]);
  t.equal(got.code, 0, got.stderr);
  const lines = jsonLines(got.stdout);
  t.match(lines[0], { event: 'sender', id: sender.id });
  // stdin is no terminal: the offer is told, not asked about (as croc --yes).
  t.same(lines[1], {
    event: 'offer',
    paths: ['a.txt', 'photos'],
    files: 2,
    dirs: 2,
    bytes: 'sent once by a short code\n'.length + 70_000,
  });
  t.match(
    lines.find((l) => l['event'] === 'received'),
    { paths: ['a.txt', 'photos'] },
  );
  t.match(lines.at(-1), { event: 'done', files: 2 });
  const ended = await send.end;
  t.equal(ended.code, 0, ended.stderr);
  t.notMatch(ended.stderr, /paired by code/, 'no "paired" warning for a pin of one transfer');
  t.same(
    ended.lines.map((l) => l['event']),
    ['send-code', 'receiver', 'sent', 'sent', 'done'],
  );
  t.match(ended.lines.at(-1), { event: 'done', paths: 2, files: 2 });
  t.equal(await readFile(join(dst, 'a.txt'), 'utf8'), 'sent once by a short code\n');
  t.same(await readFile(join(dst, 'photos', '2026', 'p.jpg')), Buffer.alloc(70_000, 7));
  t.same((await readdir(dst)).sort(), ['a.txt', 'photos'], 'the sibling of a.txt did not come');
  t.notOk(existsSync(join(sender.home, 'peers.json')), 'the sender pinned nothing');
  t.notOk(existsSync(receiverHome), 'the receiver made no home: its key lived for this transfer only');
});

/** One `send` of a.txt on loopback and a `receive` of it into `dst` (with `extra` flags). */
async function sendReceiveA(
  home: string,
  src: string,
  dst: string,
  extra: readonly string[] = [],
): Promise<{ received: { code: number | null; stderr: string }; sent: { code: number | null; stderr: string } }> {
  const send = sending(['--home', home, '--no-lan-discovery', 'send', join(src, 'a.txt'), '--host', '127.0.0.1']);
  const first = await send.first;
  const received = await runCli([
    '--home',
    home,
    'receive',
    String(first['code']),
    dst,
    '--addr',
    String(first['addr']),
    ...extra,
  ]);
  return { received, sent: await send.end };
}

t.test('receive refuses to replace an existing different file', async (t) => {
  const home = join(await tempHome('send-f'), 'none');
  const src = await sourceTree();
  const dst = await mkdtemp(join(tmpdir(), 'clawpeer-recv-'));
  await writeFile(join(dst, 'a.txt'), 'mine\n');
  const { received, sent } = await sendReceiveA(home, src, dst);
  t.equal(received.code, 5, 'FILE_EXISTS, as pull');
  t.match(received.stderr, /a\.txt exists and is a different file/);
  t.equal(await readFile(join(dst, 'a.txt'), 'utf8'), 'mine\n');
  t.equal(sent.code, 23, 'the sender says the path did not go');
});

t.test('receive --force replaces it', async (t) => {
  const home = join(await tempHome('send-g'), 'none');
  const src = await sourceTree();
  const dst = await mkdtemp(join(tmpdir(), 'clawpeer-recv-'));
  await writeFile(join(dst, 'a.txt'), 'mine\n');
  const { received, sent } = await sendReceiveA(home, src, dst, ['--force']);
  t.equal(received.code, 0, received.stderr);
  t.equal(sent.code, 0, sent.stderr);
  t.equal(await readFile(join(dst, 'a.txt'), 'utf8'), 'sent once by a short code\n');
});

t.test('receive finds the sender by the code on a loopback-only LAN', async (t) => {
  const lanDiscoveryPort = 40_000 + Math.floor(Math.random() * 20_000);
  const config = JSON.stringify({ lanDiscoveryPort, lanInterfaces: ['lo'], lanDiscoveryTimeoutMs: 800 });
  const s = await tempHome('send-lan-s');
  const r = await tempHome('send-lan-r');
  await writeFile(join(s, 'config.json'), config);
  await writeFile(join(r, 'config.json'), config);
  const src = await sourceTree();
  const dst = await mkdtemp(join(tmpdir(), 'clawpeer-recv-'));
  const send = sending(['--home', s, 'send', join(src, 'a.txt'), '--host', '127.0.0.1']);
  const first = await send.first;
  const got = await runCli(['--home', r, 'receive', String(first['code']), dst]);
  t.equal(got.code, 0, got.stderr);
  t.equal((await send.end).code, 0);
  t.equal(await readFile(join(dst, 'a.txt'), 'utf8'), 'sent once by a short code\n');
  t.notOk(existsSync(join(s, 'peers.json')));
  t.notOk(existsSync(join(r, 'peers.json')));
});

t.test('a wrong code burns it: exit 3 on both sides, nothing received', async (t) => {
  const src = await sourceTree();
  const dst = await mkdtemp(join(tmpdir(), 'clawpeer-recv-'));
  const home = join(await tempHome('send-w'), 'none');
  const send = sending(['--home', home, '--no-lan-discovery', 'send', join(src, 'a.txt'), '--host', '127.0.0.1']);
  const first = await send.first;
  const [nameplate] = String(first['code']).split('-');
  const wrong = `${nameplate}-zzzz-zzzz`.replace('zzzz-zzzz', 'acid-zebra');
  const got = await runCli(['--home', home, 'receive', wrong, dst, '--addr', String(first['addr'])]);
  // One chance in 1,677,025 that acid-zebra was the code.
  t.equal(got.code, 3, got.stderr);
  const ended = await send.end;
  t.equal(ended.code, 3, ended.stderr);
  t.match(ended.stderr, /burnt/);
  t.same(await readdir(dst), [], 'nothing received');
});

t.test('Ctrl-C withdraws the code: exit 130, nothing left behind', async (t) => {
  const sender = await initNode('send-c');
  const src = await sourceTree();
  const send = sending([
    '--home',
    sender.home,
    '--no-lan-discovery',
    'send',
    join(src, 'a.txt'),
    '--host',
    '127.0.0.1',
  ]);
  await send.first;
  send.child.kill('SIGINT');
  const ended = await send.end;
  t.equal(ended.code, 130, ended.stderr);
  t.match(ended.stderr, /withdrawn/);
  t.same((await readdir(sender.home)).sort(), ['identity.key'], 'nothing written to the home');
});
