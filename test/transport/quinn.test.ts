// quinn backend: the shared compliance suite, plus what only this backend promises: the error
// mapping table, QUIC stream-id parity, and that a process using it exits by itself.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { generateIdentity } from '../../src/crypto/identity.js';
import { ClawpeerError } from '../../src/errors.js';
import { QuinnBackend } from '../../src/transport/quinn.js';
import { mapQuinnError } from '../../src/transport/quinn-connection.js';
import { transportCompliance, within } from './compliance.js';

transportCompliance('quic', () => new QuinnBackend());

void t.test('native error strings map to our codes', async (t) => {
  const cases: [string, string][] = [
    ['timed out', 'TIMEOUT'],
    ['stream reset by peer: error 0', 'REMOTE'],
    ['stopped by peer: error 0', 'REMOTE'],
    ['connection lost', 'CONNECTION_CLOSED'],
    ['closed by peer: 0', 'CONNECTION_CLOSED'],
    ['server closed', 'CONNECTION_CLOSED'],
    ['Address already in use (os error 98)', 'ADDRESS_IN_USE'],
    ['Network is unreachable (os error 101)', 'UNREACHABLE'],
    ['INVALID_PRIVATE_KEY', 'IDENTITY_CORRUPT'],
    ['something new from a future binding', 'CONNECTION_CLOSED'],
  ];
  for (const [text, code] of cases) {
    const e = mapQuinnError(Object.assign(new Error(text), { code: 'Unknown' }), 'ctx');
    t.equal(e instanceof ClawpeerError ? e.code : 'not mapped', code, text);
    t.match(e.message, /^ctx: /, 'message names the operation');
  }
  const bug = new TypeError('x is not a function');
  t.equal(mapQuinnError(bug, 'ctx'), bug, 'programming errors pass through unchanged');
});

void t.test('stream ids follow QUIC numbering (client 4n, server 4n+1) on both ends', async (t) => {
  const backend = new QuinnBackend();
  const listener = await backend.listen({ host: '127.0.0.1', port: 0, identity: generateIdentity() });
  const accepted = listener.accept();
  const client = await backend.connect({
    host: '127.0.0.1',
    port: listener.address.port,
    identity: generateIdentity(),
  });
  const server = await within(accepted, 5_000, 'accept');
  if (server === null) throw new Error('no connection');
  const ids: [number, number][] = [];
  for (const [from, to] of [
    [client, server],
    [client, server],
    [server, client],
    [server, client],
  ] as const) {
    const s = await from.openStream();
    await s.write(Uint8Array.of(1));
    const r = await within(to.acceptStream(), 5_000, 'acceptStream');
    ids.push([s.id, r?.id ?? -1]);
  }
  t.same(ids, [
    [0, 0],
    [4, 4],
    [1, 1],
    [5, 5],
  ]);
  await client.close();
  await server.close();
  await listener.close();
});

void t.test('listener.close() leaves accepted connections up', async (t) => {
  const backend = new QuinnBackend();
  const listener = await backend.listen({ host: '127.0.0.1', port: 0, identity: generateIdentity() });
  const accepted = listener.accept();
  const client = await backend.connect({
    host: '127.0.0.1',
    port: listener.address.port,
    identity: generateIdentity(),
  });
  const server = await within(accepted, 5_000, 'accept');
  if (server === null) throw new Error('no connection');
  await listener.close();
  const s = await client.openStream();
  await s.write(Buffer.from('still here'));
  await s.finish();
  const r = await within(server.acceptStream(), 5_000, 'acceptStream after listener close');
  t.not(r, null);
  t.equal(Buffer.from((await r?.read()) ?? []).toString(), 'still here');
  await client.close();
  await within(server.closed, 5_000, 'server closed');
});

void t.test('a process that used the backend exits by itself after closing', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-quinn-exit-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const quinnUrl = new URL('../../src/transport/quinn.js', import.meta.url).href;
  const identityUrl = new URL('../../src/crypto/identity.js', import.meta.url).href;
  const script = join(dir, 'exit.mjs');
  await writeFile(
    script,
    `import { QuinnBackend } from ${JSON.stringify(quinnUrl)};
import { generateIdentity } from ${JSON.stringify(identityUrl)};
const b = new QuinnBackend();
const l = await b.listen({ host: '127.0.0.1', port: 0, identity: generateIdentity() });
const acc = l.accept();
const c = await b.connect({ host: '127.0.0.1', port: l.address.port, identity: generateIdentity() });
const s = await acc;
const st = await c.openStream();
await st.write(new Uint8Array(100000));
await st.finish();
const r = await s.acceptStream();
let n = 0; for (;;) { const x = await r.read(); if (x === null) break; n += x.length; }
await c.close();
await s.closed;
await l.close();
console.log('done ' + n);
`,
  );
  const { code, out } = await new Promise<{ code: number | null; out: string }>((resolve) => {
    const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.on('exit', (code) => {
      clearTimeout(killer);
      resolve({ code, out });
    });
  });
  t.equal(out.trim(), 'done 100000', 'the script ran');
  t.equal(code, 0, 'node exited by itself (not killed after 15 s)');
});
