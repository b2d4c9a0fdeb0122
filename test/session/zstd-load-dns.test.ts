// Loading the zstd binding makes no DNS query. Its musl check calls process.report.getReport(),
// which names both ends of every open socket with a synchronous reverse lookup unless
// report.excludeNetwork is set: with a DNS server that never answers (an offline LAN), a
// listener's first handshake blocked ~10 s on its LAN discovery socket (0.0.0.0) and the
// dialer's connection died meanwhile.
//
// The child runs in a mount namespace of its own whose /etc/resolv.conf names a loopback "DNS
// server" of this test that counts what it is asked and never answers; the child opens a UDP
// socket on 0.0.0.0 (as LAN discovery does), loads zstd, and then, as the control that shows a
// lookup would be seen, calls getReport() with the network included.
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import dgram from 'node:dgram';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const DNS_ADDRESS = '127.53.0.1'; // port 53 (resolv.conf names no port): needs root, as the mount does
const hasUnshare = spawnSync('unshare', ['--version']).status === 0;
const skip =
  process.platform !== 'linux'
    ? 'linux only (mount namespaces)'
    : process.getuid?.() !== 0
      ? 'needs root (a mount namespace, a server on port 53)'
      : !hasUnshare
        ? 'needs unshare (util-linux)'
        : false;

const compression = fileURLToPath(new URL('../../src/session/chunk-compression.js', import.meta.url));

const child = `
import dgram from 'node:dgram';
const { zstdCodec } = await import(${JSON.stringify(compression)});
const s = dgram.createSocket('udp4');
await new Promise((resolve) => s.bind(0, '0.0.0.0', resolve));
const loaded = zstdCodec() !== null;
process.stdout.write(JSON.stringify({ loaded, excludeNetwork: process.report.excludeNetwork }) + '\\n');
await new Promise((resolve) => process.stdin.once('data', resolve)); // the parent counted
process.report.excludeNetwork = false;
process.report.getReport();
process.stdout.write('control done\\n');
s.close();
`;

t.test('loading zstd asks DNS nothing, with a socket open on 0.0.0.0', { skip }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-zstd-dns-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  let queries = 0;
  const dns = dgram.createSocket('udp4');
  dns.on('message', () => queries++); // never answered
  await new Promise<void>((resolve) => dns.bind(53, DNS_ADDRESS, resolve));
  t.teardown(() => dns.close());
  const resolv = join(dir, 'resolv.conf');
  await writeFile(resolv, `nameserver ${DNS_ADDRESS}\noptions timeout:1 attempts:1\n`);
  await writeFile(join(dir, 'child.mjs'), child);

  const proc = spawn('unshare', [
    '-m',
    'sh',
    '-c',
    `mount --bind "$0" /etc/resolv.conf && exec "$1" "$2"`,
    resolv,
    process.execPath,
    join(dir, 'child.mjs'),
  ]);
  let out = '';
  let err = '';
  const waiters = new Set<() => void>();
  proc.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    for (const w of waiters) w();
  });
  proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
  /** Resolves with the first match of `re` in the child's output. */
  const line = (re: RegExp): Promise<string> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        const m = re.exec(out);
        if (m === null) return;
        waiters.delete(check);
        resolve(m[0]);
      };
      waiters.add(check);
      proc.once('exit', (code) => reject(new Error(`child exited ${code}: ${err}`)));
      check();
    });
  const first = JSON.parse(await line(/^\{.*\}$/m)) as { loaded: boolean; excludeNetwork: boolean };
  t.equal(queries, 0, 'no DNS query while zstd loaded');
  t.equal(first.excludeNetwork, false, "the process's report setting is as it was");
  if (!first.loaded) t.comment('zstd is not installed here: the check ran without its binding');
  proc.stdin.write('go\n');
  await line(/^control done$/m);
  t.ok(queries > 0, `the control: getReport() with the network asked DNS (${queries} queries)`);
  proc.stdin.end();
});
