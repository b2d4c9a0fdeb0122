// The listener holds the nameplates of its home's open short-code invites in the nameplate
// directories (a test double here), and releases each once its invite is claimed or withdrawn.
import t from 'tap';
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { ClawpeerError } from '../../src/errors.js';
import { CodeInviteStore } from '../../src/home/code-invites.js';
import { holdOpenNameplates } from '../../src/listener/nameplate-holder.js';
import { silentLogger } from '../../src/logger.js';
import { parseCode } from '../../src/pairing/code-words.js';
import type { NameplateDirectory } from '../../src/pairing/nameplate-directory.js';

function directory(busy: ReadonlySet<number> = new Set()): NameplateDirectory & { held: Map<number, number> } {
  const held = new Map<number, number>();
  return {
    name: 'test double',
    held,
    claim: async (n, { expiresAt }) => {
      if (busy.has(n)) throw new ClawpeerError('PEER_BUSY', `nameplate ${n} is held by another node`);
      held.set(n, expiresAt);
      return { release: async () => void held.delete(n) };
    },
    lookup: async () => [],
  };
}

t.test('open invites are claimed with their expiry; claimed or withdrawn ones are released', async (t) => {
  const store = new CodeInviteStore(join(await mkdtemp(join(tmpdir(), 'clawpeer-holder-')), 'invites'));
  const lan = directory();
  const rv = directory(new Set([8]));
  const holder = holdOpenNameplates({ codeInvites: store, directories: [lan, rv], log: silentLogger, pollMs: 60_000 });
  t.teardown(() => holder.close());
  const { expiresAt } = await store.create({ code: parseCode('7-acid-zebra'), ttlMs: 60_000 });
  await store.create({ code: parseCode('8-acid-zebra'), ttlMs: 60_000 });
  await holder.sync();
  t.same(
    [...lan.held],
    [
      [7, expiresAt],
      [8, lan.held.get(8)],
    ],
  );
  t.same([...rv.held.keys()], [7], 'a nameplate busy in one directory is still held in the others');
  await store.claim('7');
  await store.cancel('8');
  await holder.sync();
  t.same([...lan.held.keys()], [], 'released once no longer open');
  t.same([...rv.held.keys()], []);
  await store.create({ code: parseCode('9-acid-zebra'), ttlMs: 60_000 });
  await holder.sync();
  t.same([...lan.held.keys()], [9]);
  await holder.close();
  t.same([...lan.held.keys()], [], 'closing the listener releases what it holds');
});

t.test('a new invite is claimed without waiting for the poll: the invites directory is watched', async (t) => {
  const store = new CodeInviteStore(join(await mkdtemp(join(tmpdir(), 'clawpeer-holder-')), 'invites'));
  await store.create({ code: parseCode('3-acid-zebra'), ttlMs: 60_000 }); // the directory exists
  await store.cancel('3');
  const lan = directory();
  // A poll of a minute: only the watch can announce the invite within the wait below.
  const holder = holdOpenNameplates({ codeInvites: store, directories: [lan], log: silentLogger, pollMs: 60_000 });
  t.teardown(() => holder.close());
  await store.create({ code: parseCode('4-acid-zebra'), ttlMs: 60_000 });
  const deadline = Date.now() + 20_000;
  while (!lan.held.has(4) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  t.same([...lan.held.keys()], [4], 'claimed with no sync() call and long before the poll');
});
