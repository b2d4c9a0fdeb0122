// `clawpeer send --expires 1` that nobody receives: after a minute the code expires, the sender
// exits 4 (as `pair invite`), and the code no longer finds it. Long: the shortest expiry is a
// minute.
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { createInterface } from 'node:readline';
import { CLI, tempHome } from '../e2e/cli-harness.js';

t.test('an unused code expires: exit 4', async (t) => {
  const home = join(await tempHome('send-exp'), 'none');
  const src = await mkdtemp(join(tmpdir(), 'clawpeer-send-exp-'));
  await writeFile(join(src, 'a.txt'), 'never received\n');
  const child = spawn(
    process.execPath,
    [
      CLI,
      '--home',
      home,
      '--no-lan-discovery',
      'send',
      join(src, 'a.txt'),
      '--host',
      '127.0.0.1',
      '--expires',
      '1',
      '--json',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  t.teardown(() => child.kill('SIGKILL'));
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const lines: Record<string, unknown>[] = [];
  createInterface({ input: child.stdout }).on('line', (l) => lines.push(JSON.parse(l) as Record<string, unknown>));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  t.equal(code, 4, stderr);
  t.match(lines[0], { event: 'send-code' });
  t.match(lines.at(-1), { event: 'error', code: 'TIMEOUT', message: /expired unused/ });
});
