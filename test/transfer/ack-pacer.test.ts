import t from 'tap';
import { AckPacer } from '../../src/transfer/ack-pacer.js';

t.test('one cumulative ack per N chunks while frames flow, the rest on flush', async (t) => {
  const sent: number[] = [];
  const pacer = new AckPacer((through) => sent.push(through), 4);
  for (let seq = 0; seq < 10; seq++) pacer.received(seq);
  t.same(sent, [3, 7], 'the 4th and 8th chunk each carry everything before them');
  pacer.flush();
  t.same(sent, [3, 7, 9], 'flush sends the latest owed');
  pacer.flush();
  t.same(sent, [3, 7, 9], 'nothing owed: nothing sent');
});

t.test('every 1 acks each chunk; acks never go backwards; a bad period is refused', async (t) => {
  const sent: number[] = [];
  const pacer = new AckPacer((through) => sent.push(through), 1);
  pacer.received(0);
  pacer.received(2);
  t.same(sent, [0, 2]);
  t.throws(() => pacer.received(2), RangeError);
  t.throws(() => new AckPacer(() => undefined, 0), RangeError);
});
