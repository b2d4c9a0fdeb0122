// The initiating side's checks against what the listener announced: a pull or sync that needs a feature
// the listener lacks is refused before anything is asked, instead of being silently ignored.
import t from 'tap';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { silentLogger } from '../../src/logger.js';
import { PeerSession } from '../../src/session/session.js';
import { pull, push } from '../../src/push-pull/transfer-client.js';
import { syncFolder } from '../../src/folder-sync/sync-client.js';
import { compileFilter } from '../../src/transfer/exclude.js';
import type { FeatureName } from '../../src/protocol/capabilities.js';
import { memoryHandshake } from '../session/memory-session.js';

/** A client session whose listener announced every feature but `missing`; the listener side stays silent. */
async function sessionWithout(missing: FeatureName): Promise<{ session: PeerSession; sent: () => Promise<boolean> }> {
  const { client, handshake, serverControl: serverStream } = await memoryHandshake();
  const caps = { ...handshake.caps, features: handshake.caps.features.filter((f) => f !== missing) };
  // Anything the client sends after the handshake would be readable on the server's control stream.
  let reading: Promise<Uint8Array | null> | undefined; // one read at a time, kept across calls
  const sent = async (): Promise<boolean> => {
    reading ??= serverStream.read().catch(() => null);
    const bytes = await Promise.race([reading, new Promise<null>((r) => setTimeout(() => r(null), 200))]);
    if (bytes !== null) reading = undefined;
    return bytes !== null;
  };
  return { session: new PeerSession(client, { ...handshake, caps }), sent };
}

/** A push of a fresh directory holding one file into the share 'inbox', with `extra` options. */
async function pushFrom(session: PeerSession, extra: Partial<Parameters<typeof push>[0]>): Promise<void> {
  const localPath = await mkdtemp(path.join(tmpdir(), 'clawpeer-client-'));
  await writeFile(path.join(localPath, 'a.txt'), 'a');
  await push({
    session,
    share: 'inbox',
    remotePath: '',
    localPath,
    force: false,
    streams: 1,
    window: 4,
    idleTimeoutMs: 5000,
    log: silentLogger,
    signal: new AbortController().signal,
    ...extra,
  });
}

/** A pull of the whole share 'inbox' into a fresh directory, with `extra` options. */
async function pullInto(session: PeerSession, extra: Partial<Parameters<typeof pull>[0]>): Promise<void> {
  const localPath = await mkdtemp(path.join(tmpdir(), 'clawpeer-client-'));
  await pull({
    session,
    share: 'inbox',
    remotePath: '',
    localPath,
    force: false,
    streams: 1,
    window: 4,
    idleTimeoutMs: 5000,
    log: silentLogger,
    signal: new AbortController().signal,
    ...extra,
  });
}

t.test('pull --bwlimit from a listener without rate-limit is refused before the request', async (t) => {
  const { session, sent } = await sessionWithout('rate-limit');
  await t.rejects(pullInto(session, { bwlimit: 65536 }), {
    code: 'USAGE',
    message: /cannot cap the rate it sends a pull at \(an older clawpeer\): pull without --bwlimit/,
  });
  t.notOk(await sent(), 'no request went out');
  await session.connection.close();
});

t.test('without --bwlimit the same pull does send its request (what the check above watches for)', async (t) => {
  const { session, sent } = await sessionWithout('rate-limit');
  const abort = new AbortController();
  const pulling = pullInto(session, { signal: abort.signal });
  pulling.catch(() => undefined);
  t.ok(await sent(), 'the request went out');
  abort.abort();
  await session.connection.close();
});

t.test(
  'sync --bwlimit from a listener without rate-limit is refused before the request, unless nothing comes back',
  async (t) => {
    const { session, sent } = await sessionWithout('rate-limit');
    const dir = await mkdtemp(path.join(tmpdir(), 'clawpeer-client-'));
    const o = {
      session,
      dir,
      share: 'docs',
      nodeId: 'n',
      log: silentLogger,
      signal: new AbortController().signal,
      bwlimit: 65536,
    };
    await t.rejects(syncFolder({ ...o, mode: 'two-way' }), {
      code: 'USAGE',
      message: /cannot cap the rate it sends a sync at \(an older clawpeer\)/,
    });
    t.notOk(await sent(), 'no request went out');
    // send-only: the peer sends no content, so only our own cap matters and the request goes.
    const abort = new AbortController();
    const sending = syncFolder({ ...o, mode: 'send-only', signal: abort.signal });
    sending.catch(() => undefined);
    t.ok(await sent(), 'a send-only sync does send its request');
    abort.abort();
    await session.connection.close();
  },
);

t.test('pull --dry-run from a listener without dry-run is refused before the request', async (t) => {
  const { session, sent } = await sessionWithout('dry-run');
  await t.rejects(pullInto(session, { dryRun: true }), {
    code: 'USAGE',
    message: /cannot do a dry run \(an older clawpeer\): run without --dry-run/,
  });
  t.notOk(await sent(), 'no request went out');
  await session.connection.close();
});

t.test(
  'sync --dry-run from a listener without sync-dry-run is refused before the request (it would carry the sync out)',
  async (t) => {
    const { session, sent } = await sessionWithout('sync-dry-run');
    const dir = await mkdtemp(path.join(tmpdir(), 'clawpeer-client-'));
    await t.rejects(
      syncFolder({
        session,
        dir,
        share: 'docs',
        nodeId: 'n',
        mode: 'two-way',
        log: silentLogger,
        signal: new AbortController().signal,
        dryRun: true,
      }),
      {
        code: 'USAGE',
        message: /cannot plan a sync without carrying it out \(an older clawpeer\): sync without --dry-run/,
      },
    );
    t.notOk(await sent(), 'no request went out');
    await session.connection.close();
  },
);

t.test(
  'push --delete to a listener without delete is refused before the request (it would leave the extra files)',
  async (t) => {
    const { session, sent } = await sessionWithout('delete');
    await t.rejects(pushFrom(session, { delete: true }), {
      code: 'USAGE',
      message: /cannot remove what the source lacks \(an older clawpeer\): push without --delete/,
    });
    t.notOk(await sent(), 'no request went out');
    await session.connection.close();
  },
);

t.test(
  'pull --include from a listener without filter is refused before the request (it knows plain excludes only)',
  async (t) => {
    const { session, sent } = await sessionWithout('filter');
    await t.rejects(
      pullInto(session, {
        excludeRules: compileFilter([
          { pattern: '*.txt', include: true },
          { pattern: '*', include: false },
        ]),
      }),
      { code: 'USAGE', message: /does not take --include rules \(an older clawpeer\): run without --include/ },
    );
    t.notOk(await sent(), 'no request went out');
    await session.connection.close();
  },
);

t.test('push --ignore-existing / --update to a listener without existing is refused before the scan', async (t) => {
  const { session, sent } = await sessionWithout('existing');
  await t.rejects(pushFrom(session, { existing: 'update' }), {
    code: 'USAGE',
    message: /cannot keep existing files \(--ignore-existing, --update\) \(an older clawpeer\)/,
  });
  t.notOk(await sent(), 'no request went out');
  await session.connection.close();
});

t.test('push --backup to a listener without backup is refused before the scan', async (t) => {
  const { session, sent } = await sessionWithout('backup');
  await t.rejects(pushFrom(session, { force: true, backup: { suffix: '~' } }), {
    code: 'USAGE',
    message: /cannot keep backups \(--backup, --backup-dir\) \(an older clawpeer\): push without them/,
  });
  t.notOk(await sent(), 'no request went out');
  await session.connection.close();
});

t.test('push --delete --max-delete to a listener without max-delete is refused before the scan', async (t) => {
  const { session, sent } = await sessionWithout('max-delete');
  await t.rejects(pushFrom(session, { delete: true, maxDelete: 10 }), {
    code: 'USAGE',
    message: /cannot cap --delete \(--max-delete\) \(an older clawpeer\)/,
  });
  t.notOk(await sent(), 'no request went out');
  await session.connection.close();
});

t.test('push --itemize-changes to a listener without itemize is refused before the scan', async (t) => {
  const { session, sent } = await sessionWithout('itemize');
  await t.rejects(pushFrom(session, { itemize: true }), {
    code: 'USAGE',
    message: /cannot list the files it publishes \(--itemize\) \(an older clawpeer\)/,
  });
  t.notOk(await sent(), 'no request went out');
  await session.connection.close();
});
