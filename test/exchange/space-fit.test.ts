// Which files of a synced folder's fetch land when they do not all fit (space-fit.ts
// takeWhatFits): in order, each that still fits is taken, each that does not is skipped, so the
// small files after a big one still land; everything fits: everything is taken.
import t from 'tap';
import { noSpaceToTell, takeWhatFits } from '../../src/exchange/space-fit.js';
import { decodeControl, encodeControl } from '../../src/protocol/messages.js';

t.test('everything fits: everything is taken', async (t) => {
  t.same(takeWhatFits([1, 2, 3], 6), [true, true, true]);
  t.same(takeWhatFits([], 0), []);
});

t.test('a file too big is skipped; the smaller ones after it still land', async (t) => {
  t.same(takeWhatFits([4, 12, 1, 1, 1], 8), [true, false, true, true, true]);
  t.same(takeWhatFits([12, 3, 3, 3], 8), [false, true, true, false], 'no more than the room in all');
});

t.test('empty files always land; no room (or less than none) takes only them', async (t) => {
  t.same(takeWhatFits([0, 5, 0], 0), [true, false, true]);
  t.same(takeWhatFits([0, 5], -100), [true, false]);
});

t.test('the order decides, not the size: the first that fits is taken', async (t) => {
  t.same(takeWhatFits([6, 5, 3], 8), [true, false, false]);
});

t.test("a peer's lying sizes: what did not fit is told, the sizes' sum said as the most", async (t) => {
  // Two files a peer's manifest declares at 2^53-1 bytes each (its own limit): their sum left the
  // safe integers, and the SyncDone carrying it failed to encode, failing the peer's sync.
  const huge = Number.MAX_SAFE_INTEGER;
  const told = noSpaceToTell({ paths: ['a', 'b'], files: 2, needBytes: huge + huge, freeBytes: 10, keepBytes: 1 });
  const done = { type: 'sync-done', transferId: 7, ...told } as const;
  const back = decodeControl(encodeControl(done), { maxBytes: 1 << 20 });
  t.same(back, {
    type: 'sync-done',
    transferId: 7,
    noSpace: { files: 2, needBytes: huge, freeBytes: 10, keepBytes: 1, paths: ['a', 'b'] },
  });
});
