import t from 'tap';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateIdentity } from '../../src/crypto/identity.js';
import { PeerStore } from '../../src/home/peer-store.js';
import { parseHostPort, formatHostPort } from '../../src/home/address.js';

t.test('add, update, list, find, remove', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-peers-'));
  const store = new PeerStore(join(dir, 'peers.json'));
  const a = generateIdentity().nodeId;
  const b = generateIdentity().nodeId;
  t.same(await store.list(), []);
  t.equal((await store.add(a, 'alice', '127.0.0.1:7700')).created, true);
  t.equal((await store.add(b, 'bob')).created, true);
  const updated = await store.add(a, 'alice2');
  t.equal(updated.created, false);
  t.equal(updated.entry.addr, '127.0.0.1:7700', 'an update without --addr keeps the address');
  t.equal((await store.find('alice2'))?.id, a);
  t.equal((await store.find(b))?.name, 'bob');
  t.equal(await store.isPaired(a), true);
  await t.rejects(store.add(generateIdentity().nodeId, 'bob'), { code: 'USAGE', message: /already used by/ });
  await t.rejects(store.add('nope', 'x'), { code: 'USAGE', message: /not a node id/ });
  await t.rejects(store.add(generateIdentity().nodeId, 'bad name'), { code: 'USAGE', message: /invalid peer name/ });
  await t.rejects(store.add(generateIdentity().nodeId, 'c', 'localhost'), { code: 'USAGE', message: /HOST:PORT/ });
  t.equal((await store.remove('bob')).id, b);
  await t.rejects(store.remove('bob'), { code: 'PEER_UNKNOWN' });
  t.equal((await store.list()).length, 1);
});

t.test('edit renames, repins or unpins the address, by name or id', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-peers-'));
  const store = new PeerStore(join(dir, 'peers.json'));
  const a = generateIdentity().nodeId;
  const b = generateIdentity().nodeId;
  const added = (await store.add(a, 'alice', '127.0.0.1:7700')).entry;
  await store.add(b, 'bob');
  const unpinned = await store.edit('alice', { addr: null });
  t.same(unpinned, { id: a, name: 'alice', addedAt: added.addedAt }, 'no address left, the rest kept');
  t.same(await store.find(a), unpinned, 'and stored');
  t.match(await store.edit(a, { name: 'al', addr: '127.0.0.1:7701' }), { name: 'al', addr: '127.0.0.1:7701' });
  t.match(await store.edit('al', { name: 'alice' }), { name: 'alice', addr: '127.0.0.1:7701' }, 'a rename keeps it');
  await t.rejects(store.edit('alice', { name: 'bob' }), { code: 'USAGE', message: /already used by/ });
  await t.rejects(store.edit('alice', { addr: 'nope' }), { code: 'USAGE', message: /HOST:PORT/ });
  await t.rejects(store.edit('carol', { addr: null }), { code: 'PEER_UNKNOWN' });
});

t.test('a malformed peers file is a clear config error', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-peers-'));
  const file = join(dir, 'peers.json');
  await writeFile(file, '{not json');
  await t.rejects(new PeerStore(file).list(), { code: 'CONFIG_INVALID', message: /not valid JSON/ });
  await writeFile(file, JSON.stringify({ version: 1, peers: [{ id: 'x', name: 'y' }] }));
  await t.rejects(new PeerStore(file).list(), { code: 'CONFIG_INVALID', message: /peer #0 is malformed/ });
});

t.test('HOST:PORT parsing', async (t) => {
  t.same(parseHostPort('127.0.0.1:7700'), { host: '127.0.0.1', port: 7700 });
  t.same(parseHostPort('[::1]:9'), { host: '::1', port: 9 });
  t.same(parseHostPort('example.org:1'), { host: 'example.org', port: 1 });
  for (const bad of ['127.0.0.1', ':80', 'h:0', 'h:65536', '::1:80', 'h:x'])
    t.throws(() => parseHostPort(bad), { code: 'USAGE' }, bad);
  t.equal(formatHostPort({ host: '::1', port: 5 }), '[::1]:5');
});
