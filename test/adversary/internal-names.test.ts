// Internal names in any spelling (issue 27, item 8): `.clawpeer` (a share's index, partials and
// history) and the publisher's `.clawpeer-tmp-*` files were compared case-sensitively, so on a
// case-insensitive volume (macOS, Windows) a hostile peer could push into, or pull from, the
// share's state by naming `.CLAWPEER/...`. Names are now folded (NFKC, case, Windows' trailing
// dots and spaces) on every platform. A real CLI listener; the hostile client speaks the real
// protocol from the project's own modules. On this (case-sensitive) volume a `.CLAWPEER`
// directory planted in the share stands for what a case-insensitive one would show.
import t, { type Test } from 'tap';
import { mkdir, readdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { resolveConfig } from '../../src/home/config.js';
import { dialPeer } from '../../src/session/dialer.js';
import { loadIdentity } from '../../src/home/identity-store.js';
import { foldName, isInternalDirName, isInternalPath, isTempFileName } from '../../src/store/internal-names.js';
import { PeerStore } from '../../src/home/peer-store.js';
import { resolvePeer } from '../../src/home/peer-resolve.js';
import { pingPeer } from '../../src/session/ping.js';
import type { PeerSession } from '../../src/session/session.js';
import { expectMessage, manifestMessages, sessionChunking } from '../../src/exchange/transfer-control.js';
import { scanSource } from '../../src/exchange/transfer-source.js';
import { scanTree } from '../../src/store/tree-scan.js';
import { withTimeout } from '../../src/support/timeouts.js';
import { silentLogger } from '../../src/logger.js';
import { startRig } from '../fault/fault-harness.js';

/** Spellings a case- or normalisation-insensitive volume (or Windows' name rules) takes for `.clawpeer`. */
const HOSTILE_DIRS = [
  '.CLAWPEER',
  '.Clawpeer',
  '.clawPEER',
  '\uFF0E\uFF43\uFF4C\uFF41\uFF57\uFF50\uFF45\uFF45\uFF52',
  '.clawpeer.',
  '.clawpeer ',
];

t.test('the folding itself', async (t) => {
  for (const name of HOSTILE_DIRS) {
    t.ok(isInternalDirName(name), `${JSON.stringify(name)} is the internal directory`);
    t.ok(isInternalPath(`${name}/index`), `${JSON.stringify(name)}/index is internal`);
  }
  t.equal(foldName('.CLAWPEER'), '.clawpeer');
  t.equal(foldName('\uFF0ECLAWPEER'), '.clawpeer', 'fullwidth (NFKC) spellings fold');
  t.equal(foldName('\u017F'), 's', 'long s folds as a case-insensitive volume folds it');
  t.ok(isTempFileName('.CLAWPEER-TMP-p1-00-x'), 'a temp name in capitals is a temp name');
  t.ok(isInternalPath('a/b/.Clawpeer-tmp-p1-00-x'));
  for (const ok of [
    'clawpeer',
    '.clawpeerx',
    'a/.clawpeer/x',
    'docs/.CLAWPEER',
    'x.clawpeer',
    '.clawpeerignore',
    '\u00e9t\u00e9/.clawpeer-notes',
  ]) {
    t.notOk(isInternalPath(ok), `${JSON.stringify(ok)} is content`);
  }
});

const rig = await startRig('names');
t.teardown(() => rig.close());
const identityB = await loadIdentity(path.join(rig.b.home, 'identity.key'));
const peersB = new PeerStore(path.join(rig.b.home, 'peers.json'));

async function dial(): Promise<PeerSession> {
  const peer = await resolvePeer(peersB, 'alice', `127.0.0.1:${rig.listener.port}`);
  return dialPeer({ identity: identityB, peer, config: resolveConfig({ transport: 'quic' }), log: silentLogger });
}

/** Settles with what the listener says next on the control channel (an Error for its error). */
function nextControl(session: PeerSession): Promise<unknown> {
  return withTimeout(session.control.receive(), 20_000, "the listener's answer").then(
    (m) => m,
    (e: unknown) => e,
  );
}

/** The test's own check, independent of the code under test: a first segment `.clawpeer` in any ASCII case or fullwidth. */
function namesState(relPath: string): boolean {
  return relPath.split('/')[0]?.normalize('NFKC').toLowerCase() === '.clawpeer';
}

async function legitPing(t: Test): Promise<void> {
  const session = await dial();
  try {
    let pongs = 0;
    for await (const p of pingPeer(session, { count: 1, intervalMs: 0, timeoutMs: 10_000 })) if (p.seq === 1) pongs++;
    t.equal(pongs, 1, 'the listener still answers a ping');
  } finally {
    await session.close().catch(() => undefined);
  }
}

// What a case-insensitive volume would show as the share's own state.
const planted = path.join(rig.share, '.CLAWPEER');
await mkdir(planted, { recursive: true });
await writeFile(path.join(planted, 'secret.txt'), 'state\n');
await mkdir(path.join(rig.share, '.clawpeer'), { recursive: true });
await symlink('.clawpeer', path.join(rig.share, 'state-link'));
await writeFile(path.join(rig.share, 'content.txt'), 'content\n');

t.test('a push naming .clawpeer in another spelling is refused, nothing written', async (t) => {
  const src = path.join(rig.work, 'src');
  await mkdir(src, { recursive: true });
  await writeFile(path.join(src, 'index'), 'planted by a peer\n');
  for (const [i, name] of HOSTILE_DIRS.entries()) {
    const session = await dial();
    const source = await scanSource(src, { chunking: sessionChunking(session), log: silentLogger, rootName: null });
    const transferId = session.allocateTransferId();
    await session.control.send({
      type: 'transfer-request',
      transferId,
      direction: 'push',
      share: 'inbox',
      path: '',
      force: true,
      streams: 1,
      window: 4,
    });
    await expectMessage(session, 'transfer-accept', transferId, 10_000);
    const lying = source.entries.map((e) => ({ ...e, path: `${name}/${e.path}` }));
    await session.control.sendAll(manifestMessages(session, transferId, lying));
    const answer = await nextControl(session);
    t.ok(
      answer instanceof Error,
      `#${i} ${JSON.stringify(name)}: the listener answers with an error (${String(answer)})`,
    );
    // A push's names may end with a dot or space off Windows: the internal-name check folds them.
    t.match(
      String(answer),
      /refusing to write .*reserved for clawpeer's own files|ends with a dot or space/,
      'naming why',
    );
    await session.connection.close().catch(() => undefined);
  }
  const top = await readdir(rig.share);
  t.same(
    top.filter((n) => isInternalDirName(n) && n !== '.CLAWPEER' && n !== '.clawpeer'),
    [],
    'no spelling of .clawpeer was created',
  );
  t.same(await readdir(planted), ['secret.txt'], 'nothing was written into the planted one');
  await legitPing(t);
});

t.test('a pull or listing of .clawpeer in another spelling is refused; scans of the share skip it', async (t) => {
  // A trailing dot or space passes a push or pull's path rules off Windows: folded here too.
  for (const name of ['.CLAWPEER', '.Clawpeer/secret.txt', 'state-link', '.clawpeer./secret.txt', '.CLAWPEER /x']) {
    const session = await dial();
    await session.control.send({
      type: 'transfer-request',
      transferId: session.allocateTransferId(),
      direction: 'pull',
      share: 'inbox',
      path: name,
      force: false,
      streams: 1,
      window: 4,
    });
    const answer = await nextControl(session);
    t.ok(answer instanceof Error, `pull of ${name}: refused (${String(answer)})`);
    t.match(String(answer), /clawpeer's own state/);
    await session.connection.close().catch(() => undefined);
  }
  const session = await dial();
  try {
    await session.control.send({
      type: 'list-request',
      requestId: 1,
      share: 'inbox',
      path: '.CLAWPEER',
      recursive: true,
    });
    const refused = await nextControl(session);
    t.ok(refused instanceof Error, `listing .CLAWPEER: refused (${String(refused)})`);
    t.match(String(refused), /clawpeer's own state/);
  } finally {
    await session.connection.close().catch(() => undefined);
  }
  const lister = await dial();
  try {
    await lister.control.send({ type: 'list-request', requestId: 2, share: 'inbox', path: '', recursive: true });
    const listed: string[] = [];
    for (;;) {
      const m = await nextControl(lister);
      if (m instanceof Error || (m as { type?: string }).type !== 'list-reply')
        throw new Error(`unexpected answer ${String(m)}`);
      const reply = m as { entries: { path: string }[]; last: boolean };
      listed.push(...reply.entries.map((e) => e.path));
      if (reply.last) break;
    }
    t.ok(listed.includes('content.txt'), `the listing has the content: ${listed.join(' ')}`);
    t.notOk(listed.some(namesState), 'and no internal name in any spelling');
  } finally {
    await lister.connection.close().catch(() => undefined);
  }
  // The client-side scans skip them too.
  const pushed = await scanSource(rig.share, {
    chunking: sessionChunking(await dial()),
    log: silentLogger,
    rootName: null,
  });
  t.notOk(
    pushed.entries.some((e) => namesState(e.path)),
    `a push of the share sends no internal name (${pushed.entries.map((e) => e.path).join(' ')})`,
  );
  const walked: string[] = [];
  for await (const e of scanTree(rig.share, {
    rootName: null,
    onIssue: () => undefined,
    skipDir: (rel) => isInternalDirName(rel),
  }))
    walked.push(e.relPath);
  t.notOk(walked.some(namesState), 'the tree scan with the internal skip enters no spelling of it');
  await legitPing(t);
});
