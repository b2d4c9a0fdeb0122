// `pair invite` picks a nameplate free here and in every directory: one a directory says another
// node holds (PEER_BUSY) is given up (its invite withdrawn, its other claims released).
import t from 'tap';
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { ClawpeerError } from '../../src/errors.js';
import { CodeInviteStore } from '../../src/home/code-invites.js';
import { silentLogger } from '../../src/logger.js';
import { NAMEPLATE_TRIES, openCodeInvite } from '../../src/ops/pair-code-invite.js';
import type { NameplateDirectory } from '../../src/pairing/nameplate-directory.js';

/** Random bytes that make pickNameplate try 1, 2, 3, ... in turn (v % 99 + 1). */
function counting(): (n: number) => Uint8Array {
  let next = 0;
  return (n) => {
    if (n === 4) return Uint8Array.of(0, 0, 0, next++);
    return Uint8Array.from({ length: n }, (_, i) => i);
  };
}

function directory(busy: (n: number) => boolean): NameplateDirectory & { held: Set<number> } {
  const held = new Set<number>();
  return {
    name: 'test double',
    held,
    claim: async (n) => {
      if (busy(n)) throw new ClawpeerError('PEER_BUSY', `nameplate ${n} is held by another node`);
      held.add(n);
      return { release: async () => void held.delete(n) };
    },
    lookup: async () => [],
  };
}

t.test('a nameplate busy in a directory is skipped; the first free one is held in all', async (t) => {
  const store = new CodeInviteStore(join(await mkdtemp(join(tmpdir(), 'clawpeer-open-code-')), 'invites'));
  const lan = directory(() => false);
  const rv = directory((n) => n < 3);
  const opened = await openCodeInvite({
    store,
    directories: [lan, rv],
    words: 2,
    ttlMs: 60_000,
    random: counting(),
    log: silentLogger,
  });
  t.equal(opened.code.nameplate, '3', 'nameplates 1 and 2 are held by others at the rendezvous');
  t.same([...lan.held], [3], 'the claims of the given-up nameplates were released');
  t.same([...rv.held], [3]);
  t.same(await store.openNameplates(), ['3'], 'only the chosen invite is open');
  t.equal(opened.claims.length, 2);
});

t.test(`after ${NAMEPLATE_TRIES} busy nameplates it gives up with PEER_BUSY and leaves nothing open`, async (t) => {
  const store = new CodeInviteStore(join(await mkdtemp(join(tmpdir(), 'clawpeer-open-code-')), 'invites'));
  await t.rejects(
    openCodeInvite({
      store,
      directories: [directory(() => true)],
      words: 2,
      ttlMs: 60_000,
      random: counting(),
      log: silentLogger,
    }),
    { code: 'PEER_BUSY' },
  );
  t.same(await store.openNameplates(), []);
});
