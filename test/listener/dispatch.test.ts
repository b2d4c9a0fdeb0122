// listener/dispatch.ts over the in-memory transport: each request type reaches its service,
// what it runs is counted for `status`, and a bad request, an unpaired peer or an idle session
// ends that session with an error the client reads (never a hang, never the listener).
import t from 'tap';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { resolveConfig } from '../../src/home/config.js';
import { silentLogger } from '../../src/logger.js';
import { listRemote } from '../../src/push-pull/list-client.js';
import { pull, push } from '../../src/push-pull/transfer-client.js';
import { pingPeer } from '../../src/session/ping.js';
import { ListenerActivity } from '../../src/session/listener-activity.js';
import type { PeerSession } from '../../src/session/session.js';
import { memoryListener, shareIn, tempDir } from './memory-listener.js';

const base = { force: false, streams: 2, window: 8, idleTimeoutMs: 5000, log: silentLogger } as const;
const signal = (): AbortSignal => new AbortController().signal;

async function listAll(session: PeerSession, share: string): Promise<string[]> {
  const names: string[] = [];
  for await (const batch of listRemote({ session, share, path: '', recursive: true, signal: signal() })) {
    names.push(...batch.shares.map((s) => `share:${s.name}`), ...batch.entries.map((e) => e.path));
  }
  return names.sort();
}

t.test('ping, push, ls and pull on one session each reach their service', async (t) => {
  const inbox = await shareIn('inbox');
  const activity = new ListenerActivity();
  const l = await memoryListener([inbox], { activity });
  t.teardown(() => l.stop());
  let pongs = 0;
  for await (const p of pingPeer(l.session, { count: 2, intervalMs: 0, timeoutMs: 5000 })) if (p.seq > 0) pongs++;
  t.equal(pongs, 2, 'each ping answered');

  const src = await tempDir('src');
  await mkdir(path.join(src, 'docs'));
  await writeFile(path.join(src, 'docs', 'a.txt'), 'alpha');
  await writeFile(path.join(src, 'docs', 'b.txt'), 'beta');
  const pushed = await push({
    ...base,
    session: l.session,
    share: 'inbox',
    remotePath: '',
    localPath: path.join(src, 'docs'),
    signal: signal(),
  });
  t.equal(pushed.files, 2);
  t.equal(await readFile(path.join(inbox.dir, 'docs', 'a.txt'), 'utf8'), 'alpha', 'published in the share');

  t.same(await listAll(l.session, ''), ['share:inbox'], 'ls without a share lists the shares');
  t.same(
    await listAll(l.session, 'inbox'),
    ['docs', 'docs/a.txt', 'docs/b.txt'],
    'ls of the share lists what the push put there',
  );
  // A folder synced inside the share keeps its state in `.clawpeer/`, which a pull never sends.
  await mkdir(path.join(inbox.dir, 'docs', '.clawpeer', 'revlog'), { recursive: true });
  await writeFile(path.join(inbox.dir, 'docs', '.clawpeer', 'revlog', 'data.mdb'), 'state');
  t.same(
    await listAll(l.session, 'inbox'),
    ['docs', 'docs/a.txt', 'docs/b.txt'],
    "ls leaves a .clawpeer/ below the share's root out, as a pull does",
  );

  const dest = await tempDir('dest');
  const pulled = await pull({
    ...base,
    session: l.session,
    share: 'inbox',
    remotePath: 'docs',
    localPath: dest,
    signal: signal(),
  });
  t.equal(pulled.files, 2);
  t.equal(await readFile(path.join(dest, 'docs', 'b.txt'), 'utf8'), 'beta', 'pulled back');

  const totals = activity.totals();
  t.equal(totals.push.count, 1, 'the push counted for status');
  t.equal(totals.pull.count, 1, 'the pull counted for status');
  t.equal(activity.snapshot().length, 0, 'nothing left running');
});

t.test(
  'a request for a share the listener lacks: the client hears which, the session ends, the listener lives',
  async (t) => {
    const inbox = await shareIn('inbox');
    const l = await memoryListener([inbox]);
    t.teardown(() => l.stop());
    const src = await tempDir('src');
    await writeFile(path.join(src, 'x.txt'), 'x');
    await t.rejects(
      push({
        ...base,
        session: l.session,
        share: 'nope',
        remotePath: '',
        localPath: path.join(src, 'x.txt'),
        signal: signal(),
      }),
      { message: /nope/ },
    );
    await t.rejects(
      l.served,
      { message: /nope/ },
      "serveSession ends with the request's error (the server logs it and goes on)",
    );
  },
);

t.test('a message that is no request is a protocol error', async (t) => {
  const l = await memoryListener([await shareIn('inbox')]);
  t.teardown(() => l.stop());
  await l.session.control.send({ type: 'pong', seq: 1, echoedTimeUs: 0 });
  await l.session.control.send({
    type: 'transfer-done',
    transferId: 1,
    files: 0,
    bytes: 0,
    chunksReceived: 0,
    chunksSkipped: 0,
  });
  await t.rejects(l.served, { code: 'PROTOCOL', message: /unexpected transfer-done/ });
});

t.test('a peer unpaired meanwhile gets NOT_PAIRED for its next request', async (t) => {
  let paired = true;
  const l = await memoryListener([await shareIn('inbox')], {}, { stillPaired: () => Promise.resolve(paired) });
  t.teardown(() => l.stop());
  for await (const p of pingPeer(l.session, { count: 1, intervalMs: 0, timeoutMs: 5000 }))
    t.equal(p.seq, 1, 'served while paired');
  paired = false;
  await t.rejects(pingPeer(l.session, { count: 1, intervalMs: 0, timeoutMs: 5000 }).next(), {
    code: 'NOT_PAIRED',
    message: /unpaired/,
  });
  await l.served;
  t.pass('the session ended without an error of its own');
});

t.test('an idle session is closed with TIMEOUT, told to the client', async (t) => {
  const l = await memoryListener([await shareIn('inbox')], { config: resolveConfig({ sessionIdleTimeoutMs: 150 }) });
  t.teardown(() => l.stop());
  await l.served;
  await t.rejects(l.session.control.receive(), { code: 'TIMEOUT', message: /session idle for 150 ms/ });
});
