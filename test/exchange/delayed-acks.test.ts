import t from 'tap';
import { AckPacer } from '../../src/transfer/ack-pacer.js';
import { DelayedAckFlush } from '../../src/exchange/delayed-acks.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

t.test('waits share one ack: what is owed goes out once, after the delay', async (t) => {
  const sent: number[] = [];
  const pacer = new AckPacer((through) => sent.push(through));
  const delayed = new DelayedAckFlush(() => pacer.flush(), 20);
  pacer.received(0);
  delayed.waiting();
  pacer.received(1);
  delayed.waiting(); // the stream ran dry again before the delay passed: no second timer
  pacer.received(2);
  t.same(sent, [], 'nothing is sent at the wait itself');
  await sleep(60);
  t.same(sent, [2], 'one cumulative ack for the three chunks');
  delayed.waiting();
  await sleep(40);
  t.same(sent, [2], 'nothing owed: nothing sent');
  delayed.close();
});

t.test('frames that keep arriving hold the flush: the stream must be quiet for the delay', async (t) => {
  const sent: number[] = [];
  const pacer = new AckPacer((through) => sent.push(through));
  const delayed = new DelayedAckFlush(() => pacer.flush(), 30);
  pacer.received(0);
  delayed.waiting();
  // A frame every 10 ms for 80 ms: a busy stream, acked by the pacer only (every 8).
  for (let seq = 1; seq <= 8; seq++) {
    await sleep(10);
    delayed.arrived();
    pacer.received(seq);
    delayed.waiting();
  }
  t.same(sent, [7], 'only the pacer acked while frames came');
  await sleep(90);
  t.same(sent, [7, 8], 'once quiet for the delay, what was owed went');
  delayed.close();
});

t.test('flushNow sends at once and a closed flusher sends nothing more', async (t) => {
  const sent: number[] = [];
  const pacer = new AckPacer((through) => sent.push(through));
  const delayed = new DelayedAckFlush(() => pacer.flush(), 20);
  pacer.received(0);
  delayed.waiting();
  delayed.flushNow();
  t.same(sent, [0], 'the stream ended: sent without waiting');
  pacer.received(1);
  delayed.waiting();
  delayed.close();
  await sleep(50);
  t.same(sent, [0], 'the timer of a closed flusher does not fire');
});

t.test('a failing flush in the timer does not throw out of it; a delay of 0 flushes at once', async (t) => {
  let calls = 0;
  const failing = new DelayedAckFlush(() => {
    calls++;
    throw new Error('write failed');
  }, 1);
  failing.waiting();
  await sleep(20);
  t.equal(calls, 1, 'the flush ran and its error stayed inside');
  const sent: number[] = [];
  const pacer = new AckPacer((through) => sent.push(through));
  const now = new DelayedAckFlush(() => pacer.flush(), 0);
  pacer.received(0);
  now.waiting();
  t.same(sent, [0]);
  t.throws(() => new DelayedAckFlush(() => undefined, -1), RangeError);
});
