// Admission under attack (issue 27, items 1 and 2), against a real CLI listener and, where a
// test must take one safeguard away, an in-process one:
// - a paired peer that stalls its Hello across a `pair remove` gets nothing once its handshake
//   completes: no ping, no pull, no push (QUIC and TCP). In process, with a pair list that
//   changes without the file watcher noticing, the check after the handshake and the check
//   before each request refuse it on their own;
// - an unpaired key is refused as soon as the transport proved it: its silent connection is
//   closed long before the handshake timeout, and unpaired connections never take the room of
//   paired ones under --max-connections;
// - while a pairing invite is open, unpaired connections get a small budget of their own with a
//   short timeout: one over it is told BUSY naming the budget, paired peers still get in, and
//   the invite can still be redeemed once the stalled ones are gone;
// - refusals of unpaired keys are logged once per connection and at most a few per window.
import t from 'tap';
import path from 'node:path';
import { mkdir } from 'node:fs/promises';
import { generateIdentity, type Identity } from '../../src/crypto/identity.js';
import { nodeIdFromPublicKey, publicKeyFromNodeId } from '../../src/crypto/node-id.js';
import { resolveConfig } from '../../src/home/config.js';
import { clientHandshake } from '../../src/session/control-channel.js';
import { loadIdentity } from '../../src/home/identity-store.js';
import { PeerStore, type PeerEntry } from '../../src/home/peer-store.js';
import { dialPeer } from '../../src/session/dialer.js';
import { resolvePeer } from '../../src/home/peer-resolve.js';
import { NodeServer, MAX_PREAUTH_CONNECTIONS } from '../../src/listener/server.js';
import { serveSession } from '../../src/listener/dispatch.js';
import { withTimeout } from '../../src/support/timeouts.js';
import { silentLogger } from '../../src/logger.js';
import { jsonLines, newHome, runCli, startRig, type Rig } from '../fault/fault-harness.js';
import { probePing, rawConnect, sleep, stalledHandshake, tryRequests, type Transport } from './admission-kit.js';

const TRANSPORTS: readonly Transport[] = ['quic', 'tcp'];

/** Resolves once `pattern` appears in the listener's log after offset `from` (false after `ms`). */
async function logShows(rig: Rig, pattern: RegExp, from = 0, ms = 15_000): Promise<boolean> {
  return withTimeout(
    (async () => {
      while (!pattern.test(rig.listener.stderr().slice(from))) await sleep(50);
    })(),
    ms,
    String(pattern),
  ).then(
    () => true,
    () => false,
  );
}

function closedWithin(conn: { closed: Promise<unknown> }, ms: number): Promise<boolean> {
  return withTimeout(conn.closed, ms, 'close').then(
    () => true,
    () => false,
  );
}

t.test(
  'a paired peer stalling its Hello across `pair remove` gets nothing after its handshake (CLI listener)',
  async (t) => {
    const rig = await startRig('adm-stall');
    t.teardown(() => rig.close());
    const identityB = await loadIdentity(path.join(rig.b.home, 'identity.key'));
    const peersA = new PeerStore(path.join(rig.a.home, 'peers.json'));
    const peersB = new PeerStore(path.join(rig.b.home, 'peers.json'));
    const listenerKey = publicKeyFromNodeId(rig.a.id);
    for (const transport of TRANSPORTS) {
      await t.test(transport, async (t) => {
        // A session of the same peer, open across the removal: the listener dropping it shows it
        // has taken the removal in (its pair-file watcher fired).
        const witness = await dialPeer({
          identity: identityB,
          peer: await resolvePeer(peersB, 'alice', `127.0.0.1:${rig.listener.port}`),
          config: resolveConfig({ transport }),
          log: silentLogger,
        });
        const conn = await rawConnect(transport, rig.listener.port, identityB);
        const stalled = await stalledHandshake(conn, identityB, listenerKey);
        await stalled.firstByteSent;
        await sleep(500); // the listener has the control stream and waits for the rest of the Hello
        const from = rig.listener.stderr().length;
        await peersA.remove(rig.b.id);
        t.ok(
          await logShows(rig, new RegExp(`peer unpaired: dropping its connection id=${rig.b.id}`), from),
          'the listener took the removal in (it dropped the open session)',
        );
        stalled.release();
        const handshake = await stalled.result;
        if (handshake instanceof Error) {
          t.pass(`the stalled handshake failed: ${handshake.message}`);
        } else {
          const outcome = await tryRequests(conn, handshake);
          t.match(outcome.ping, /^(refused|closed)/, `no pong (${outcome.ping})`);
          t.match(outcome.pull, /^(refused|closed)/, `no pull (${outcome.pull})`);
          t.match(outcome.push, /^(refused|closed)/, `no push (${outcome.push})`);
        }
        t.ok(await closedWithin(conn, 10_000), 'the listener closed that connection');
        t.match(
          rig.listener.stderr().slice(from),
          new RegExp(`peer unpaired: closing its connection before its handshake completed id=${rig.b.id}`),
          'and logged why',
        );
        await conn.close().catch(() => undefined);
        await witness.connection.close().catch(() => undefined);
        await peersA.add(rig.b.id, 'bob');
        t.equal(
          await probePing(identityB, peersB, 'alice', rig.listener.port, transport),
          'ok',
          're-paired, the peer gets in again',
        );
      });
    }
  },
);

/** A pair list the test edits in memory: the listener's file watcher never hears of a change. */
class SilentPeerStore extends PeerStore {
  entries: PeerEntry[] = [];
  override list(): Promise<PeerEntry[]> {
    return Promise.resolve([...this.entries]);
  }
}

t.test(
  'without the drop, the check after the handshake and the check before each request refuse a removed peer (in process)',
  async (t) => {
    const rig = await startRig('adm-layers'); // for its homes and share only
    t.teardown(() => rig.close());
    const identityA = await loadIdentity(path.join(rig.a.home, 'identity.key'));
    const identityB = await loadIdentity(path.join(rig.b.home, 'identity.key'));
    const peers = new SilentPeerStore(path.join(rig.work, 'never-written-peers.json'));
    const config = resolveConfig({ transport: 'auto' });
    const shares = [{ name: 'inbox', dir: path.join(rig.work, 'layers-inbox'), readOnly: false }];
    await mkdir(shares[0]?.dir ?? '', { recursive: true });
    const server = await NodeServer.start(
      { identity: identityA, peers, shares, host: '127.0.0.1', port: 0, config, log: silentLogger },
      (session, signal) =>
        serveSession(session, { shares, config, log: silentLogger, nodeId: identityA.nodeId }, signal),
    );
    t.teardown(() => server.close());
    const pairB = (): void => void (peers.entries = [{ id: rig.b.id, name: 'bob', addedAt: '' }]);

    for (const transport of TRANSPORTS) {
      await t.test(
        `${transport}: a Hello stalled across the removal completes, and the listener refuses it at once`,
        async (t) => {
          pairB();
          const conn = await rawConnect(transport, server.port, identityB);
          const stalled = await stalledHandshake(conn, identityB, identityA.publicKey);
          await stalled.firstByteSent;
          await sleep(500);
          peers.entries = [];
          stalled.release();
          const handshake = await stalled.result;
          if (handshake instanceof Error) {
            t.match(handshake.message, /unpaired/, `the handshake ends with the reason: ${handshake.message}`);
          } else {
            const outcome = await tryRequests(conn, handshake);
            t.match(
              outcome.ping,
              /refused: .*was unpaired/,
              `the first thing it hears is NOT_PAIRED (${outcome.ping})`,
            );
            t.match(outcome.pull, /^(refused|closed)/, `no pull (${outcome.pull})`);
            t.match(outcome.push, /^(refused|closed)/, `no push (${outcome.push})`);
          }
          t.ok(await closedWithin(conn, 10_000), 'and the connection is closed');
          await conn.close().catch(() => undefined);
        },
      );

      await t.test(
        `${transport}: an open session's next request after the removal is refused with NOT_PAIRED`,
        async (t) => {
          pairB();
          const conn = await rawConnect(transport, server.port, identityB);
          const handshake = await clientHandshake(await conn.openStream(), {
            identity: identityB,
            expectedRemoteKey: identityA.publicKey,
            timeoutMs: 10_000,
          });
          await handshake.channel.send({ type: 'ping', seq: 1, sentTimeUs: 1 });
          t.match(await handshake.channel.receive(), { type: 'pong', seq: 1 }, 'paired: a ping is answered');
          peers.entries = [];
          const outcome = await tryRequests(conn, handshake);
          t.match(
            outcome.ping,
            /refused: .*was unpaired by .*: ping refused/,
            `removed: the next ping is refused (${outcome.ping})`,
          );
          t.match(outcome.pull, /^(refused|closed)/, `no pull (${outcome.pull})`);
          t.ok(await closedWithin(conn, 10_000), 'and the connection is closed');
          await conn.close().catch(() => undefined);
        },
      );
    }
  },
);

t.test('unpaired keys are refused at once and never take the room of paired peers (CLI listener)', async (t) => {
  // A long handshake timeout: the old listener held an unpaired connection that long, counted.
  const rig = await startRig('adm-room', { listenArgs: ['--max-connections', '2', '--handshake-timeout', '60'] });
  t.teardown(() => rig.close());
  const identityB = await loadIdentity(path.join(rig.b.home, 'identity.key'));
  const peersB = new PeerStore(path.join(rig.b.home, 'peers.json'));
  // One whose client speaks gets the reason, not just a closed connection; it is logged once.
  const stranger = generateIdentity();
  const conn = await rawConnect('quic', rig.listener.port, stranger);
  const refused = await clientHandshake(await conn.openStream(), {
    identity: stranger,
    expectedRemoteKey: publicKeyFromNodeId(rig.a.id),
    timeoutMs: 10_000,
  }).then(
    () => 'admitted',
    (e: unknown) => e,
  );
  t.match(
    refused,
    {
      code: 'PEER_NOT_PAIRED',
      message: new RegExp(`node ${nodeIdFromPublicKey(stranger.publicKey)} is not paired with ${rig.a.id}`),
    },
    'a speaking unpaired client is told NOT_PAIRED',
  );
  await conn.close().catch(() => undefined);
  await logShows(rig, new RegExp(`rejected unpaired peer id=${nodeIdFromPublicKey(stranger.publicKey)}`));
  await sleep(200);
  const lines = rig.listener
    .stderr()
    .split('\n')
    .filter((l) => l.includes(`id=${nodeIdFromPublicKey(stranger.publicKey)}`));
  t.equal(lines.length, 1, `its refusal is logged once: ${lines.join(' | ')}`);
  for (const transport of TRANSPORTS) {
    await t.test(transport, async (t) => {
      const silent = await Promise.all(
        Array.from({ length: 6 }, () => rawConnect(transport, rig.listener.port, generateIdentity())),
      );
      const closed = await Promise.all(silent.map((c) => closedWithin(c, 8_000)));
      t.same(
        closed,
        silent.map(() => true),
        'each silent unpaired connection is closed within seconds (handshake timeout 60 s)',
      );
      // Six more, held while the paired peer pings: none counts toward --max-connections 2.
      const held = await Promise.all(
        Array.from({ length: 6 }, () => rawConnect(transport, rig.listener.port, generateIdentity())),
      );
      t.equal(await probePing(identityB, peersB, 'alice', rig.listener.port, transport), 'ok', 'a paired peer gets in');
      await Promise.all(held.map((c) => c.close('done', { linger: false }).catch(() => undefined)));
      await Promise.all(silent.map((c) => c.close('done', { linger: false }).catch(() => undefined)));
    });
  }
});

t.test(
  'while an invite is open: a small pre-auth budget with a short timeout; paired peers and the invite still work',
  async (t) => {
    const rig = await startRig('adm-invite', { listenArgs: ['--max-connections', '2', '--handshake-timeout', '60'] });
    t.teardown(() => rig.close());
    const identityB = await loadIdentity(path.join(rig.b.home, 'identity.key'));
    const peersB = new PeerStore(path.join(rig.b.home, 'peers.json'));
    const invite = await runCli(['--home', rig.a.home, 'pair', 'invite', '--long', '--name', 'dave', '--json']);
    t.equal(invite.code, 0, invite.stderr);
    const code = String(jsonLines(invite.stdout)[0]?.['code']);

    const from = rig.listener.stderr().length;
    const stalled = await Promise.all(
      Array.from({ length: MAX_PREAUTH_CONNECTIONS }, () => rawConnect('quic', rig.listener.port, generateIdentity())),
    );
    await sleep(300); // all of them admitted to the pre-auth budget
    const over: Identity = generateIdentity();
    const overConn = await rawConnect('quic', rig.listener.port, over);
    const refused = await clientHandshake(await overConn.openStream(), {
      identity: over,
      expectedRemoteKey: publicKeyFromNodeId(rig.a.id),
      timeoutMs: 10_000,
    }).then(
      () => 'admitted',
      (e: unknown) => e,
    );
    t.match(
      refused,
      {
        code: 'PEER_BUSY',
        message: new RegExp(
          `too many unpaired connections at once while a pairing invite is open \\(at most ${MAX_PREAUTH_CONNECTIONS}\\)`,
        ),
      },
      'one over the pre-auth budget is told BUSY naming it',
    );
    await overConn.close().catch(() => undefined);
    t.equal(
      await probePing(identityB, peersB, 'alice', rig.listener.port),
      'ok',
      'a paired peer gets in while the pre-auth budget is full',
    );
    const closed = await Promise.all(stalled.map((c) => closedWithin(c, 15_000)));
    t.same(
      closed,
      stalled.map(() => true),
      'the stalled unpaired connections are closed after the short pre-auth timeout (handshake timeout 60 s)',
    );
    t.match(
      rig.listener.stderr().slice(from),
      /refused unpaired connection over the pre-auth budget/,
      'the listener logs the refusal',
    );

    const d = await newHome('adm-invite-d');
    const joined = await runCli([
      '--home',
      d.home,
      'pair',
      'join',
      code,
      '--addr',
      `127.0.0.1:${rig.listener.port}`,
      '--name',
      'alice',
      '--json',
    ]);
    t.equal(joined.code, 0, `the invite is redeemed once the budget has room: ${joined.stderr}`);
    const paired = await new PeerStore(path.join(rig.a.home, 'peers.json')).find('dave');
    t.equal(paired?.id, d.id, "the listener pinned the joiner under the invite's name");
    await Promise.all(stalled.map((c) => c.close('done', { linger: false }).catch(() => undefined)));
  },
);

t.test('refusals of unpaired keys are logged once each, and at most a few per window', async (t) => {
  const rig = await startRig('adm-log');
  t.teardown(() => rig.close());
  const from = rig.listener.stderr().length;
  const conns = await Promise.all(
    Array.from({ length: 30 }, () => rawConnect('tcp', rig.listener.port, generateIdentity())),
  );
  await Promise.all(conns.map((c) => closedWithin(c, 10_000)));
  const logged = (): string[] =>
    rig.listener
      .stderr()
      .slice(from)
      .split('\n')
      .filter((l) => /rejected unpaired peer/.test(l));
  t.ok(
    await logShows(rig, /\d+ more connections of unpaired keys refused \(not logged one by one\)/, from, 20_000),
    `a summary line tells the rest: ${rig.listener.stderr().slice(from)}`,
  );
  t.equal(logged().length, 10, '10 refusals are logged one by one in a window, not all 30');
});
