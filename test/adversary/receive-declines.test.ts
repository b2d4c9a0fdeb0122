// A receiver that is not `clawpeer receive`: it proves `send`'s code, pulls one of the two paths
// offered, then parts with DECLINED (an honest receive declines before any pull). The `send`
// said "declined the offer: nothing was sent" (exit 6) though a path had gone: now it reports
// what went (PARTIAL, exit 23, the receiver's word quoted).
import t from 'tap';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateIdentity } from '../../src/crypto/identity.js';
import { publicKeyFromNodeId } from '../../src/crypto/node-id.js';
import { parseHostPort } from '../../src/home/address.js';
import { resolveConfig } from '../../src/home/config.js';
import { MemoryPeerStore } from '../../src/home/memory-peer-store.js';
import { silentLogger } from '../../src/logger.js';
import { joinByCode } from '../../src/ops/pair-code-join.js';
import { parseCode } from '../../src/pairing/code-words.js';
import { pull } from '../../src/push-pull/transfer-client.js';
import { dialPeer } from '../../src/session/dialer.js';
import { tempHome } from '../e2e/cli-harness.js';
import { sending } from '../e2e/send-harness.js';

t.test('DECLINED after a pull: the send says what went, not "nothing was sent"', async (t) => {
  const src = await mkdtemp(join(tmpdir(), 'clawpeer-decline-src-'));
  await writeFile(join(src, 'a.txt'), 'one\n');
  await writeFile(join(src, 'b.txt'), 'two\n');
  const home = join(await tempHome('decline-s'), 'none');
  const send = sending([
    '--home',
    home,
    '--no-lan-discovery',
    'send',
    join(src, 'a.txt'),
    join(src, 'b.txt'),
    '--host',
    '127.0.0.1',
  ]);
  const first = await send.first;
  const identity = generateIdentity();
  const config = resolveConfig({ transport: 'quic' });
  const signal = new AbortController().signal;
  const { entry } = await joinByCode({
    identity,
    peers: new MemoryPeerStore(''),
    code: parseCode(String(first['code'])),
    address: parseHostPort(String(first['addr']), '--addr'),
    directories: [],
    config,
    log: silentLogger,
    signal,
    name: 'sender',
  });
  const session = await dialPeer({
    identity,
    peer: {
      id: entry.id,
      name: entry.id,
      publicKey: publicKeyFromNodeId(entry.id),
      address: parseHostPort(String(first['addr']), '--addr'),
    },
    config,
    log: silentLogger,
    signal,
  });
  const dst = await mkdtemp(join(tmpdir(), 'clawpeer-decline-dst-'));
  await pull({
    session,
    share: 'send-1',
    remotePath: 'a.txt',
    localPath: dst,
    force: false,
    streams: 2,
    window: 8,
    idleTimeoutMs: 5000,
    log: silentLogger,
    signal,
  });
  t.equal(await readFile(join(dst, 'a.txt'), 'utf8'), 'one\n', 'a.txt was sent');
  await session.control.sendError('DECLINED', 'no thanks');
  await session.close('declined');
  const sent = await send.end;
  t.equal(sent.code, 23, sent.stderr);
  t.match(sent.stderr, /left after 1 of 2 paths, saying "no thanks": the rest was not sent/);
  t.notMatch(sent.stderr, /nothing was sent/);
});
