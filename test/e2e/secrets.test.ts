// Secrets (issue 6): the private key never shows up in anything clawpeer prints or logs, at the
// most verbose level, nor in a process's command line; a key file others can read is refused.
import t from 'tap';
import { createPrivateKey } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { initNode, runCli, startListener } from './cli-harness.js';

/** Every text form the identity's secret could leak in: the seed as hex, base64, base64url, and the PEM body. */
async function secretForms(home: string): Promise<string[]> {
  const pem = await readFile(path.join(home, 'identity.key'), 'utf8');
  const d = createPrivateKey({ key: pem, format: 'pem' }).export({ format: 'jwk' }).d;
  if (typeof d !== 'string') throw new Error('no private scalar in the key');
  const seed = Buffer.from(d, 'base64url');
  const body = pem
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('-----'))
    .join('');
  // Substrings long enough never to occur by chance (a 16-byte window of the seed is 2^-128).
  return [seed.toString('hex').slice(0, 32), seed.toString('base64').slice(0, 22), d.slice(0, 22), body.slice(-40)];
}

t.test('nothing secret in output, logs or command lines; a readable key file is refused', async (t) => {
  const a = await initNode('sec-a');
  const b = await initNode('sec-b');
  const secrets = [...(await secretForms(a.home)), ...(await secretForms(b.home))];
  t.equal(secrets.length, 8);
  await runCli(['--home', a.home, 'pair', 'add', b.id, '--name', 'bob']);
  const share = path.join(a.home, 'share');
  await mkdir(share, { recursive: true });
  const listener = await startListener(a.home, ['-vv', '--share', `docs=${share}`]);
  t.teardown(() => listener.stop('SIGKILL'));
  await runCli(['--home', b.home, 'pair', 'add', a.id, '--name', 'alice', '--addr', `127.0.0.1:${listener.port}`]);

  const local = path.join(b.home, 'files');
  await mkdir(local, { recursive: true });
  await writeFile(path.join(local, 'a.txt'), 'hello\n');
  const outputs: string[] = [];
  for (const args of [
    ['id', '--json'],
    ['pair', 'list', '--json'],
    ['ping', 'alice', '--count', '2'],
    ['push', local, 'alice:docs', '--json'],
    ['sync', local, 'alice:docs'],
    ['doctor', '--json', '--no-peers'],
  ]) {
    const r = await runCli(['--home', b.home, '-vv', ...args]);
    t.ok(r.code === 0 || args[0] === 'doctor', `${args.join(' ')} exits 0: ${r.stderr}`);
    outputs.push(r.stdout, r.stderr);
  }
  const cmdline = await readFile(`/proc/${String(listener.child.pid)}/cmdline`, 'utf8');
  const all = [...outputs, listener.stderr(), listener.lines().join('\n'), cmdline].join('\n');
  t.ok(all.length > 1000, `the commands printed and logged something to search (${all.length} chars)`);
  t.match(listener.stderr(), /push received|sync requested/, 'the listener logged at its most verbose level');
  for (const s of secrets) t.notOk(all.includes(s), `no form of a private key appears (${s.slice(0, 4)}...)`);

  await chmod(path.join(b.home, 'identity.key'), 0o644);
  const refused = await runCli(['--home', b.home, 'id']);
  t.equal(refused.code, 1, 'a group/world-readable key is refused');
  t.match(refused.stderr, /identity\.key has mode 644; run: chmod 600/);
  for (const s of secrets) t.notOk(refused.stderr.includes(s), 'the refusal does not print the key');
});
