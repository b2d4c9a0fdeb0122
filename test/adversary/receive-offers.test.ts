// `clawpeer receive` against a sender that is not `clawpeer send`: a listener whose shares list
// what an honest `send` never offers (one name in two shares, a name with control characters, a
// symlink at the root, `..`, clawpeer's own names, more names than a command line holds). The
// receiver pulled every listed entry into DIR as it came (the second `a.txt` over the first
// with --force); now the listing is checked first and the receive refused (PROTOCOL) with
// nothing received. A bidi name an honest sender may offer passes (and is printed escaped:
// receive-print.test.ts).
import t, { type Test } from 'tap';
import { mkdir, mkdtemp, readdir, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { generateIdentity, type Identity } from '../../src/crypto/identity.js';
import { publicKeyFromNodeId } from '../../src/crypto/node-id.js';
import { resolveConfig } from '../../src/home/config.js';
import { MemoryPeerStore } from '../../src/home/memory-peer-store.js';
import type { Share } from '../../src/home/shares.js';
import { Listener } from '../../src/listener/listener.js';
import { sharesOfPaths } from '../../src/listener/send-by-code.js';
import { silentLogger } from '../../src/logger.js';
import { offeredNameProblem, offeredPaths } from '../../src/push-pull/offered-paths.js';
import { pullAllFromPinned } from '../../src/push-pull/transfer-with-peer.js';
import { memoryListener } from '../listener/memory-listener.js';

const tempDir = (label: string): Promise<string> => mkdtemp(path.join(tmpdir(), `clawpeer-${label}-`));

/** A share `name` in a fresh directory holding `files` (name: content). */
async function shareOf(name: string, files: Record<string, string>): Promise<Share> {
  const dir = await tempDir(`offer-${name}`);
  for (const [f, content] of Object.entries(files)) await writeFile(path.join(dir, f), content);
  return { name, dir, readOnly: true };
}

/** A listener on loopback serving `shares` to `receiver` alone (pinned in memory, as `send` does). */
async function hostileSender(
  t: Test,
  receiver: Identity,
  shares: readonly Share[],
): Promise<{ id: string; port: number }> {
  const identity = generateIdentity();
  const peers = new MemoryPeerStore('');
  await peers.add(receiver.nodeId, 'receiver');
  const listener = await Listener.start({
    identity,
    peers,
    shares,
    host: '127.0.0.1',
    port: 0,
    config: resolveConfig({ transport: 'quic' }),
    log: silentLogger,
  });
  t.teardown(() => listener.close());
  return { id: identity.nodeId, port: listener.port };
}

async function receiveFrom(receiver: Identity, sender: { id: string; port: number }, dst: string): Promise<unknown> {
  return pullAllFromPinned({
    identity: receiver,
    peer: {
      id: sender.id,
      name: sender.id,
      publicKey: publicKeyFromNodeId(sender.id),
      address: { host: '127.0.0.1', port: sender.port },
    },
    config: resolveConfig({ transport: 'quic' }),
    log: silentLogger,
    signal: new AbortController().signal,
    localPath: dst,
    force: true,
    streams: 2,
    window: 8,
  });
}

t.test('names an honest send never lists are refused, one by one', async (t) => {
  for (const name of ['..', '.', 'a/b', '/etc', '.clawpeer', '.ClawPeer', '.clawpeer-tmp-p1-x', 'a\nb', 'a\u001b[2Jb'])
    t.ok(offeredNameProblem({ path: name, kind: 'file' }), `${JSON.stringify(name)} refused`);
  t.match(offeredNameProblem({ path: 'link', kind: 'symlink' }), /symlink/);
  t.equal(offeredNameProblem({ path: 'a.txt', kind: 'file' }), undefined);
  t.equal(offeredNameProblem({ path: 'photos', kind: 'dir' }), undefined);
  t.equal(offeredNameProblem({ path: 'invoice\u202efdp.txt', kind: 'file' }), undefined, 'a bidi name is a name');
});

t.test('one name in two shares: refused before the second could land over the first', async (t) => {
  const receiver = generateIdentity();
  const sender = await hostileSender(t, receiver, [
    await shareOf('send-1', { 'a.txt': 'first' }),
    await shareOf('send-2', { 'a.txt': 'second, over the first' }),
  ]);
  const dst = await tempDir('offer-dst');
  await t.rejects(receiveFrom(receiver, sender, dst), { code: 'PROTOCOL', message: /offers "a\.txt" twice/ });
  t.same(await readdir(dst), [], 'nothing received');
});

t.test('a symlink at a share root, more names or shares than allowed', async (t) => {
  const linked = await shareOf('send-1', { 'a.txt': 'x' });
  await mkdir(path.join(linked.dir, 'inner'));
  await symlink('inner', path.join(linked.dir, 'link'));
  const l = await memoryListener([linked]);
  t.teardown(() => l.stop());
  await t.rejects(offeredPaths(l.session, new AbortController().signal), {
    code: 'PROTOCOL',
    message: /"link", which is a symlink/,
  });

  const many = await memoryListener([await shareOf('send-1', { a: '1', b: '2', c: '3' })]);
  t.teardown(() => many.stop());
  await t.rejects(offeredPaths(many.session, new AbortController().signal, 2), {
    code: 'PROTOCOL',
    message: /more than 2 paths/,
  });
  const shares = await memoryListener(await Promise.all(['s1', 's2', 's3'].map((n) => shareOf(n, {}))));
  t.teardown(() => shares.stop());
  await t.rejects(offeredPaths(shares.session, new AbortController().signal, 2), {
    code: 'PROTOCOL',
    message: /offers 3 shares, more than 2/,
  });
});

t.test("an honest send's shares pass as they are", async (t) => {
  const src = await tempDir('offer-src');
  await writeFile(path.join(src, 'a.txt'), 'a');
  await writeFile(path.join(src, 'invoice\u202efdp.txt'), 'b');
  await writeFile(path.join(src, 'sibling'), 'never offered');
  const l = await memoryListener(
    await sharesOfPaths([path.join(src, 'a.txt'), path.join(src, 'invoice\u202efdp.txt')]),
  );
  t.teardown(() => l.stop());
  const offered = await offeredPaths(l.session, new AbortController().signal);
  t.same(offered.map((o) => o.path).sort(), ['a.txt', 'invoice\u202efdp.txt']);
});
