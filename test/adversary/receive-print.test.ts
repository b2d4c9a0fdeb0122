// The names `send` offers are the sender's, and `receive` printed them raw in its `received`
// line (and `send` in its `sent` lines): a file named `invoice<U+202E>fdp.txt`, a name an
// honest sender offers and a pull takes, read on the receiver's terminal as `invoicetxt.pdf`.
// Both now print it as `invoice\u202efdp.txt`, as push, pull and ls show paths (escapeToShow).
import t from 'tap';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, runCli, tempHome } from '../e2e/cli-harness.js';

const NAME = 'invoice\u202efdp.txt';

t.test('a bidi name the sender offers prints escaped on both sides', async (t) => {
  const home = join(await tempHome('send-bidi'), 'none'); // no init: keys for this transfer only
  const src = await mkdtemp(join(tmpdir(), 'clawpeer-bidi-src-'));
  const dst = await mkdtemp(join(tmpdir(), 'clawpeer-bidi-dst-'));
  await writeFile(join(src, NAME), 'not a pdf\n');
  const args = ['--home', home, '--no-lan-discovery', 'send', join(src, NAME), '--host', '127.0.0.1'];
  const send = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => send.kill('SIGKILL'));
  let sent = '';
  const lines = createInterface({ input: send.stdout });
  const hint = await new Promise<string>((resolve, reject) => {
    lines.on('line', (line) => {
      sent += `${line}\n`;
      if (line.startsWith('on the other machine run: ')) resolve(line.slice('on the other machine run: '.length));
    });
    send.once('close', () => reject(new Error(`send ended before its code: ${sent}`)));
  });
  const [code, , addr] = hint.replace('clawpeer receive ', '').split(' ');
  const got = await runCli(['--home', home, 'receive', code ?? '', dst, '--addr', addr ?? '']);
  t.equal(got.code, 0, got.stderr);
  const ended = new Promise<void>((resolve) => send.once('close', () => resolve()));
  await ended;
  t.same(await readdir(dst), [NAME], 'the file arrived under its name');
  t.notOk(got.stdout.includes('\u202e'), 'receive printed no raw bidi character');
  t.match(got.stdout, /received invoice\\u202efdp\.txt/);
  t.notOk(sent.includes('\u202e'), 'send printed no raw bidi character');
  t.match(sent, /sent invoice\\u202efdp\.txt/);
});
