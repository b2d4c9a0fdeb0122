// Several pulls on one session reported as one: counts add up, lists concatenate, options stay absent unless asked.
import t from 'tap';
import { combineResults } from '../../src/push-pull/transfer-results.js';
import type { TransferResult } from '../../src/push-pull/transfer-client.js';

const base: TransferResult = {
  files: 1,
  bytes: 10,
  wireBytes: 100,
  chunksSent: 1,
  chunksSkipped: 0,
  chunksCompressed: 0,
  streams: 2,
  window: 32,
  seconds: 0.5,
};

t.test('counts add up and the widest stream count shows', async (t) => {
  const r = combineResults([base, { ...base, files: 2, bytes: 5, streams: 4, seconds: 0.25 }]);
  t.same(r, {
    files: 3,
    bytes: 15,
    wireBytes: 200,
    chunksSent: 2,
    chunksSkipped: 0,
    chunksCompressed: 0,
    streams: 4,
    window: 32,
    seconds: 0.75,
  });
});

t.test('optional fields: present when either result has them', async (t) => {
  const r = combineResults([
    { ...base, deleted: ['a'], deletedCount: 1, published: [{ path: 'x', replaced: false }] },
    { ...base, deleted: ['b'], deletedCount: 1, filesKept: 2 },
  ]);
  t.same(r.deleted, ['a', 'b']);
  t.equal(r.deletedCount, 2);
  t.same(r.published, [{ path: 'x', replaced: false }]);
  t.equal(r.filesKept, 2);
  t.notOk('filesBackedUp' in r, 'not asked: absent');
  t.same(combineResults([base]), base, 'one result is itself');
  t.throws(() => combineResults([]), /no transfer results/);
});

t.test('dry runs merge their reports', async (t) => {
  const d = {
    files: [{ path: 'a', bytes: 1, sendBytes: 1 }],
    touched: [{ path: 't', time: true, perms: false }],
    filesUnchanged: 1,
    chunksToSend: 1,
    bytesToSend: 1,
  };
  const r = combineResults([
    { ...base, dryRun: d },
    { ...base, dryRun: { ...d, files: [{ path: 'b', bytes: 2, sendBytes: 0 }], touched: [], others: [] } },
  ]);
  t.same(r.dryRun, {
    files: [
      { path: 'a', bytes: 1, sendBytes: 1 },
      { path: 'b', bytes: 2, sendBytes: 0 },
    ],
    touched: [{ path: 't', time: true, perms: false }],
    others: [],
    filesUnchanged: 2,
    chunksToSend: 2,
    bytesToSend: 2,
  });
});
