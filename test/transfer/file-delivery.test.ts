// FileDelivery: which files the receiver holds completely, from the Want and the acks.
import t from 'tap';
import { FileDelivery } from '../../src/transfer/file-delivery.js';

t.test(
  'a file is done once each of its distinct chunks was acked or held; shared chunks count for every file',
  async (t) => {
    // 0: a, b   1: b, c, b (a repeat)   2: empty   3: d
    const d = new FileDelivery([['a', 'b'], ['b', 'c', 'b'], [], ['d']]);
    t.equal(d.total, 4);
    t.equal(d.done, 1, 'the empty file is done from the start');
    t.equal(d.deliver(['a']), false, 'half of file 0');
    t.equal(d.deliver(['b']), true, 'b completes file 0 and half of file 1');
    t.equal(d.done, 2);
    t.equal(d.deliver(['b', 'a']), false, 'chunks delivered again change nothing');
    t.equal(d.deliver(['c']), true, 'file 1: its repeated chunk counted once');
    t.equal(d.done, 3);
    t.equal(d.deliver(['unknown']), false, 'a key no file references is ignored');
    t.equal(d.deliver(['d']), true);
    t.equal(d.done, 4);
  },
);

t.test('the Want: chunks it does not list as lacking are held, so their files are done', async (t) => {
  const d = new FileDelivery([['a', 'b'], ['c'], ['a']]);
  t.equal(d.wantArrived(new Set(['b'])), true, 'a and c are held: files 1 and 2 are done');
  t.equal(d.done, 2);
  t.equal(d.deliver(['b']), true, 'the one lacking chunk arrives');
  t.equal(d.done, 3);
  const early = new FileDelivery([['a'], ['b']]);
  early.deliver(['a']); // an early chunk acked before the Want
  t.equal(early.wantArrived(new Set(['a', 'b'])), false, 'the Want lists both: nothing more is held');
  t.equal(early.done, 1, 'the early chunk still counts once');
});
