// peers.json has one writer at a time, across processes (issue 27, item 6): the CLI's `pair
// add/remove` and the listener's invite redemptions used to read, modify and write it unlocked,
// so concurrent pairings were lost and a `pair remove` racing one was undone.
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateIdentity } from '../../src/crypto/identity.js';
import { PeerStore } from '../../src/home/peer-store.js';

const PEER_STORE = new URL('../../src/home/peer-store.js', import.meta.url).href;
const PAIR_INVITE = new URL('../../src/home/pair-invite.js', import.meta.url).href;

/** A separate node process running the ES module `file` with `args`; resolves with its exit code and stderr. */
function runScript(file: string, args: readonly string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

async function script(dir: string, name: string, body: string): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, body);
  return file;
}

/** A process that adds the (id, name) pairs given after the file, one after another. */
function adderScript(dir: string): Promise<string> {
  return script(
    dir,
    'add.mjs',
    `
    import { PeerStore } from ${JSON.stringify(PEER_STORE)};
    const [file, ...pairs] = process.argv.slice(2);
    const store = new PeerStore(file);
    for (let i = 0; i < pairs.length; i += 2) await store.add(pairs[i], pairs[i + 1]);
  `,
  );
}

t.test('concurrent adds from separate processes are all kept', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-peerlock-'));
  const file = join(dir, 'peers.json');
  // Each process adds several peers by name, one after another, all processes at once.
  const adder = await adderScript(dir);
  const PROCESSES = 6;
  const PER_PROCESS = 4;
  const wanted = Array.from({ length: PROCESSES * PER_PROCESS }, (_, i) => ({
    id: generateIdentity().nodeId,
    name: `p${i}`,
  }));
  const runs = [];
  for (let p = 0; p < PROCESSES; p++) {
    const mine = wanted.slice(p * PER_PROCESS, (p + 1) * PER_PROCESS).flatMap((w) => [w.id, w.name]);
    runs.push(runScript(adder, [file, ...mine]));
  }
  for (const r of await Promise.all(runs)) t.equal(r.code, 0, `an adder exits 0 ${r.stderr}`);
  const kept = await new PeerStore(file).list();
  t.equal(kept.length, wanted.length, `all ${wanted.length} peers are kept`);
  t.same(new Set(kept.map((p) => p.id)), new Set(wanted.map((w) => w.id)));
});

t.test('concurrent pairings that suggest one name get distinct names', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-peerlock-'));
  const file = join(dir, 'peers.json');
  // As the listener pins invite redemptions: every joiner suggests the same host name.
  const pairer = await script(
    dir,
    'pair.mjs',
    `
    import { PeerStore } from ${JSON.stringify(PEER_STORE)};
    import { pickPeerName } from ${JSON.stringify(PAIR_INVITE)};
    const [file, id] = process.argv.slice(2);
    await new PeerStore(file).add(id, (taken) => pickPeerName(['twin'], id, taken));
  `,
  );
  const ids = Array.from({ length: 6 }, () => generateIdentity().nodeId);
  for (const r of await Promise.all(ids.map((id) => runScript(pairer, [file, id]))))
    t.equal(r.code, 0, `a pairing exits 0 ${r.stderr}`);
  const kept = await new PeerStore(file).list();
  t.equal(kept.length, ids.length, 'every pairing is kept');
  t.equal(
    new Set(kept.map((p) => p.name)).size,
    ids.length,
    `names are distinct: ${kept.map((p) => p.name).join(', ')}`,
  );
  t.equal(kept.filter((p) => p.name === 'twin').length, 1, 'one got the suggestion, the others a peer-<id> name');
});

t.test('a remove racing adds is never undone', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-peerlock-'));
  const file = join(dir, 'peers.json');
  const adder = await adderScript(dir);
  const remover = await script(
    dir,
    'remove.mjs',
    `
    import { PeerStore } from ${JSON.stringify(PEER_STORE)};
    const [file, ...names] = process.argv.slice(2);
    const store = new PeerStore(file);
    for (const name of names) await store.remove(name);
  `,
  );
  const store = new PeerStore(file);
  const victims = Array.from({ length: 8 }, (_, i) => `victim${i}`);
  for (const name of victims) await store.add(generateIdentity().nodeId, name);
  const newcomers = Array.from({ length: 8 }, (_, i) => [generateIdentity().nodeId, `new${i}`]).flat();
  const [added, removed] = await Promise.all([
    runScript(adder, [file, ...newcomers]),
    runScript(remover, [file, ...victims]),
  ]);
  t.equal(added.code, 0, `the adder exits 0 ${added.stderr}`);
  t.equal(removed.code, 0, `the remover exits 0 (each remove reported success) ${removed.stderr}`);
  const names = (await store.list()).map((p) => p.name).sort();
  t.same(
    names,
    Array.from({ length: 8 }, (_, i) => `new${i}`).sort(),
    'every removed peer stays removed, every added one is kept',
  );
});

t.test('a lock left by a SIGKILLed writer is broken, not waited on forever', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-peerlock-'));
  const file = join(dir, 'peers.json');
  // The pid of a process that has exited, as a SIGKILLed holder leaves its lock.
  const dead = await new Promise<number>((resolve) => {
    const c = spawn(process.execPath, ['-e', '']);
    c.on('close', () => resolve(c.pid ?? 999_999));
  });
  await writeFile(`${file}.lock`, `${dead} ${hostname()}\n`);
  const id = generateIdentity().nodeId;
  await new PeerStore(file).add(id, 'after');
  t.equal((await new PeerStore(file).find('after'))?.id, id);
  await t.rejects(readFile(`${file}.lock`), { code: 'ENOENT' }, 'the lock is released after the write');
});
