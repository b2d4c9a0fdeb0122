// `clawpeer receive` tells what is offered before it writes anything, and asks a person (croc's
// "Accept 2 files (68.4 KiB)? (Y/n)"): a no at a terminal (a pseudo-terminal by util-linux
// `script`) declines, exit 6 on both sides and nothing written; --yes at a terminal asks
// nothing. An offer bigger than DIR's free space (less pull's 1% margin) is refused before any
// path lands, where each pull alone fitted. A name sent in NFD (as macOS makes them; Linux keeps
// its bytes) arrives, beside its NFC twin's kind: it was listed in NFC and refused as not sent.
import t from 'tap';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, readdir, statfs, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, jsonLines, runCli, tempHome } from '../e2e/cli-harness.js';
import { sending } from '../e2e/send-harness.js';

const SCRIPT = '/usr/bin/script';
/** Skips a test that needs a pseudo-terminal where util-linux `script` is missing. */
const needsTerminal = { skip: existsSync(SCRIPT) ? false : 'no util-linux script for a pseudo-terminal' };

/** A `send` of `names` (files in a fresh directory: name -> content) on loopback, its code and address. */
async function offering(names: Record<string, string | Buffer>): Promise<{
  code: string;
  addr: string;
  home: string;
  end: ReturnType<typeof sending>['end'];
}> {
  const src = await mkdtemp(join(tmpdir(), 'clawpeer-offer-src-'));
  for (const [name, content] of Object.entries(names)) await writeFile(join(src, name), content);
  const home = join(await tempHome('offer-s'), 'none');
  const send = sending([
    '--home',
    home,
    '--no-lan-discovery',
    'send',
    ...Object.keys(names).map((n) => join(src, n)),
    '--host',
    '127.0.0.1',
  ]);
  const first = await send.first;
  // A receive that failed before it proved the code would leave the send waiting for its expiry.
  const end = new Promise<Awaited<typeof send.end>>((resolve) => {
    const timer = setTimeout(() => send.child.kill('SIGKILL'), 60_000);
    void send.end.then((e) => {
      clearTimeout(timer);
      resolve(e);
    });
  });
  return { code: String(first['code']), addr: String(first['addr']), home, end };
}

/** `receive` at a pseudo-terminal (`script`), typing `answer` once the question shows (none: never). */
function receiveAtTerminal(args: readonly string[], answer?: string): Promise<{ code: number | null; out: string }> {
  const quoted = [process.execPath, CLI, ...args].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  const child = spawn(SCRIPT, ['-qec', quoted, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'] });
  t.teardown(() => child.kill('SIGKILL'));
  let out = '';
  let answered = false;
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    if (answer !== undefined && !answered && out.includes('(Y/n)')) {
      answered = true;
      child.stdin.write(`${answer}\n`);
    }
  });
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) =>
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    }),
  );
}

t.test(
  'a no at the terminal declines: exit 6 on both sides, the sender told, nothing written',
  needsTerminal,
  async (t) => {
    const s = await offering({ 'a.txt': 'one\n', 'b.txt': 'two\n' });
    const dst = await mkdtemp(join(tmpdir(), 'clawpeer-offer-dst-'));
    const home = join(await tempHome('offer-r'), 'none');
    const got = await receiveAtTerminal(['--home', home, 'receive', s.code, dst, '--addr', s.addr], 'n');
    t.match(got.out, /offered: 2 files \(8 B\): a\.txt, b\.txt/);
    t.match(got.out, /Accept 2 files \(8 B\)\? \(Y\/n\)/);
    t.equal(got.code, 6, got.out);
    t.match(got.out, /declined what the sender \S+ offers: nothing was received/);
    const sent = await s.end;
    t.equal(sent.code, 6, sent.stderr);
    t.match(sent.stderr, /the receiver \S+ declined the offer: nothing was sent/);
    t.same(await readdir(dst), [], 'nothing written');
  },
);

t.test('--yes at a terminal asks nothing and receives', needsTerminal, async (t) => {
  const s = await offering({ 'a.txt': 'one\n' });
  const dst = await mkdtemp(join(tmpdir(), 'clawpeer-offer-dst-'));
  const home = join(await tempHome('offer-y'), 'none');
  const got = await receiveAtTerminal(['--home', home, 'receive', s.code, dst, '--addr', s.addr, '-y']);
  t.equal(got.code, 0, got.out);
  t.match(got.out, /offered: 1 file \(4 B\): a\.txt/);
  t.notMatch(got.out, /\(Y\/n\)/, 'not asked');
  t.equal((await s.end).code, 0);
  t.equal(await readFile(join(dst, 'a.txt'), 'utf8'), 'one\n');
});

t.test('an offer bigger than the free space is refused before anything lands', async (t) => {
  const dst = await mkdtemp(join(tmpdir(), 'clawpeer-offer-dst-'));
  const fs = await statfs(dst);
  const margin = Math.ceil(fs.blocks * fs.bsize * 0.01);
  // Room for one 70 KB file beside the margin, not for two: each pull alone would fit.
  const free = margin + 100_000;
  if (fs.bavail * fs.bsize < free) {
    t.comment('too little disk space here for the pretence: not checked');
    return;
  }
  const s = await offering({ 'a.bin': Buffer.alloc(70_000, 1), 'b.bin': Buffer.alloc(70_000, 2) });
  const home = join(await tempHome('offer-f'), 'none');
  const got = await runCli(['--home', home, 'receive', s.code, dst, '--addr', s.addr, '--json'], {
    env: { CLAWPEER_TEST_FREE_BYTES: String(free) },
  });
  t.equal(got.code, 1, got.stderr);
  t.match(got.stderr, /not enough disk space for what the sender offers: it writes 136\.7 KiB and \S+ \S+ are free/);
  t.match(
    jsonLines(got.stdout).find((l) => l['event'] === 'offer'),
    { files: 2, dirs: 0, bytes: 140_000 },
  );
  t.same(await readdir(dst), [], 'nothing written');
  const sent = await s.end;
  t.equal(sent.code, 23, sent.stderr);
  t.match(sent.stderr, /left after 0 of 2 paths, saying "not enough disk space/);
});

t.test('a name sent in NFD arrives (in NFC, the wire form), beside an NFC one', async (t) => {
  const nfd = 'cafe\u0301.txt';
  const s = await offering({ [nfd]: 'décomposé\n', 'na\u00efve.txt': 'composé\n' });
  const dst = await mkdtemp(join(tmpdir(), 'clawpeer-offer-dst-'));
  const home = join(await tempHome('offer-n'), 'none');
  const got = await runCli(['--home', home, 'receive', s.code, dst, '--addr', s.addr, '--json']);
  t.equal(got.code, 0, got.stderr);
  t.match(
    jsonLines(got.stdout).find((l) => l['event'] === 'received'),
    { paths: ['caf\u00e9.txt', 'na\u00efve.txt'] },
  );
  const sent = await s.end;
  t.equal(sent.code, 0, sent.stderr);
  t.same(
    sent.lines.filter((l) => l['event'] === 'sent').map((l) => [l['path'], l['files']]),
    [
      ['caf\u00e9.txt', 1],
      ['na\u00efve.txt', 1],
    ],
  );
  t.equal(await readFile(join(dst, 'caf\u00e9.txt'), 'utf8'), 'décomposé\n');
  t.equal(await readFile(join(dst, 'na\u00efve.txt'), 'utf8'), 'composé\n');
});
