// A man in the middle of a short-code pairing, found through a nameplate directory (a test
// double that answers the nameplate's lookup with the attacker's address), over real loopback
// QUIC: one that relays the PAKE messages unchanged while terminating TLS with its own key, and
// one that runs its own PAKE with each side with a guessed code. Both are detected: the joiner
// fails, the inviter's code is burnt, and nobody pins anybody. And a truthful directory: pairs.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { generateIdentity } from '../../src/crypto/identity.js';
import { CodeInviteStore } from '../../src/home/code-invites.js';
import { resolveConfig } from '../../src/home/config.js';
import { PeerStore } from '../../src/home/peer-store.js';
import { silentLogger } from '../../src/logger.js';
import { joinByCode } from '../../src/ops/pair-code-join.js';
import { generateCode, parseCode } from '../../src/pairing/code-words.js';
import { pickNameplate, type NameplateDirectory } from '../../src/pairing/nameplate-directory.js';
import { encodeControlFrame } from '../../src/protocol/messages.js';
import { readLoneMessage } from '../../src/session/control-channel.js';
import { backendByName } from '../../src/transport/backends.js';
import { initNode, runCli, startListener } from '../e2e/cli-harness.js';

const a = await initNode('mitm-a');
const inviter = await startListener(a.home);
t.teardown(() => inviter.stop('SIGKILL'));
const aAddr = { host: '127.0.0.1', port: inviter.port };
const aCodes = new CodeInviteStore(join(a.home, 'invites'));
const random = (n: number): Uint8Array => new Uint8Array(randomBytes(n));

/** A directory test double that answers every lookup of `nameplate` with these ports on loopback. */
function lyingDirectory(nameplate: number, ...ports: number[]): NameplateDirectory {
  return {
    name: 'test double',
    claim: () => Promise.reject(new Error('not used')),
    lookup: async (n) =>
      n === nameplate
        ? ports.map((port) => ({
            address: { host: '127.0.0.1', port },
            describe: `127.0.0.1:${port} (test)`,
            release: () => undefined,
          }))
        : [],
  };
}

/** A code invite of the inviter's home, opened as `pair invite --no-wait` does (its listener reads them). */
async function openInvite(): Promise<string> {
  const used = await aCodes.usedNameplates();
  const code = generateCode(pickNameplate(new Set([...used].map(Number)), random), 2, random);
  await aCodes.create({ code, ttlMs: 60_000 });
  return code.text;
}

async function joiner(): Promise<{ identity: ReturnType<typeof generateIdentity>; peers: PeerStore }> {
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-mitm-j-'));
  return { identity: generateIdentity(), peers: new PeerStore(join(dir, 'peers.json')) };
}

async function aPeerIds(): Promise<string[]> {
  return (await new PeerStore(join(a.home, 'peers.json')).list()).map((p) => p.id);
}

t.test('a directory that tells the truth: the joiner finds the inviter by nameplate alone and both pin', async (t) => {
  const code = parseCode(await openInvite());
  const j = await joiner();
  const r = await joinByCode({
    identity: j.identity,
    peers: j.peers,
    code,
    directories: [lyingDirectory(99_999, 1), lyingDirectory(Number(code.nameplate), inviter.port)],
    config: resolveConfig({}),
    log: silentLogger,
  });
  t.equal(r.entry.id, a.id, 'the joiner pinned the inviter');
  t.ok((await aPeerIds()).includes(j.identity.nodeId), 'the inviter pinned the joiner');
  t.equal(r.entry.addr, `127.0.0.1:${inviter.port}`, 'pinned at the address the directory gave');
  t.match(await aCodes.status(code.nameplate), {
    state: 'settled',
    outcome: 'paired',
    id: j.identity.nodeId,
    verify: r.verify,
  });
});

t.test('a relay that terminates TLS with its own key and forwards the PAKE messages is detected', async (t) => {
  const before = await aPeerIds();
  const code = parseCode(await openInvite());
  const mallory = generateIdentity();
  const quic = await backendByName('quic');
  const trap = await quic.listen({ host: '127.0.0.1', port: 0, identity: mallory, idleTimeoutMs: 10_000 });
  t.teardown(() => trap.close());
  const relay = (async () => {
    const fromJoiner = await trap.accept();
    if (fromJoiner === null) return;
    const jStream = await fromJoiner.acceptStream();
    const toInviter = await quic.connect({ ...aAddr, identity: mallory, idleTimeoutMs: 10_000 });
    const aStream = await toInviter.openStream();
    try {
      const start = await readLoneMessage(jStream!, 5_000);
      await aStream.write(encodeControlFrame(start!));
      const reply = await readLoneMessage(aStream, 5_000);
      await jStream!.write(encodeControlFrame(reply!));
      // Then whatever the joiner says (its verdict), byte for byte.
      for (
        let piece = await jStream!.read().catch(() => null);
        piece !== null;
        piece = await jStream!.read().catch(() => null)
      )
        await aStream.write(piece);
      await aStream.finish().catch(() => undefined);
      await readLoneMessage(aStream, 5_000).catch(() => null);
    } finally {
      await toInviter.close().catch(() => undefined);
      await fromJoiner.close().catch(() => undefined);
    }
  })();
  const j = await joiner();
  await t.rejects(
    joinByCode({
      identity: j.identity,
      peers: j.peers,
      code,
      directories: [lyingDirectory(Number(code.nameplate), trap.address.port)],
      config: resolveConfig({}),
      log: silentLogger,
    }),
    { code: 'AUTH_FAILED', message: /someone may have tried to guess it/ },
  );
  await relay.catch(() => undefined);
  t.same(await j.peers.list(), [], 'the joiner pinned nothing');
  for (let i = 0; i < 50 && (await aCodes.status(code.nameplate)).state !== 'settled'; i++)
    await new Promise((r) => setTimeout(r, 100));
  t.match(await aCodes.status(code.nameplate), { state: 'settled', outcome: 'burnt' }, 'the inviter burnt the code');
  t.same(await aPeerIds(), before, 'the inviter pinned nobody');
});

t.test(
  'a man in the middle running its own PAKE with each side (a guessed code) pins nothing and is detected',
  async (t) => {
    const before = await aPeerIds();
    const code = parseCode(await openInvite());
    const m = await initNode('mitm-m');
    const guess = parseCode(`${code.nameplate}-${code.words[0] === 'acid' ? 'acorn' : 'acid'}-${code.words[1]}`);
    await new CodeInviteStore(join(m.home, 'invites')).create({ code: guess, ttlMs: 60_000 });
    const mallory = await startListener(m.home);
    t.teardown(() => mallory.stop('SIGKILL'));
    // Toward the inviter, Mallory joins with its guess; toward the joiner, it is the inviter.
    const towardInviter = await runCli([
      '--home',
      m.home,
      'pair',
      'join',
      guess.text,
      '--addr',
      `127.0.0.1:${inviter.port}`,
    ]);
    t.equal(towardInviter.code, 3, towardInviter.stderr);
    const j = await joiner();
    await t.rejects(
      joinByCode({
        identity: j.identity,
        peers: j.peers,
        code,
        directories: [lyingDirectory(Number(code.nameplate), mallory.port)],
        config: resolveConfig({}),
        log: silentLogger,
      }),
      { code: 'AUTH_FAILED' },
    );
    t.same(await j.peers.list(), [], 'the joiner pinned nothing');
    t.same(await aPeerIds(), before, 'the inviter pinned nobody');
    t.same(
      await new PeerStore(join(m.home, 'peers.json')).list(),
      [],
      'Mallory got pinned by nobody and pinned nobody',
    );
    t.match(await aCodes.status(code.nameplate), { state: 'settled', outcome: 'burnt' });
    t.match(inviter.stderr(), /pairing code burnt/);
    // A stale candidate first (Mallory holds no open code now): the joiner goes on to the next one.
    const later = parseCode(await openInvite());
    const j2 = await joiner();
    const r = await joinByCode({
      identity: j2.identity,
      peers: j2.peers,
      code: later,
      directories: [lyingDirectory(Number(later.nameplate), mallory.port, inviter.port)],
      config: resolveConfig({}),
      log: silentLogger,
    });
    t.equal(r.entry.id, a.id, 'a candidate that holds no such code is skipped, nothing used up there');
  },
);

t.test(
  'a CodePairStart with the identity element as its share burns the code; the listener keeps serving',
  async (t) => {
    const code = parseCode(await openInvite());
    const quic = await backendByName('quic');
    const conn = await quic.connect({ ...aAddr, identity: generateIdentity(), idleTimeoutMs: 10_000 });
    t.teardown(() => conn.close());
    const stream = await conn.openStream();
    await stream.write(
      encodeControlFrame({ type: 'code-pair-start', nameplate: code.nameplate, share: new Uint8Array(32) }),
    );
    await t.rejects(readLoneMessage(stream, 5_000), { code: 'AUTH_FAILED', message: /code is burnt/ });
    t.match(await aCodes.status(code.nameplate), { state: 'settled', outcome: 'burnt', reason: /invalid PAKE share/ });
    const next = parseCode(await openInvite());
    const j = await joiner();
    const r = await joinByCode({
      identity: j.identity,
      peers: j.peers,
      code: next,
      address: aAddr,
      directories: [],
      config: resolveConfig({}),
      log: silentLogger,
    });
    t.equal(r.entry.id, a.id, 'the next code pairs as usual');
  },
);
