import fc from 'fast-check';
import t from 'tap';
import { ClawpeerError, isClawpeerError } from '../../src/errors.js';
import { chunkKey } from '../../src/transfer/plan.js';
import { SendWindow } from '../../src/transfer/send-window.js';
import { fakeChunkId } from './sim.js';

const id = fakeChunkId;
const KiB = 1024;

function protocolError(fn: () => unknown, pattern: RegExp): void {
  try {
    fn();
  } catch (err) {
    if (isClawpeerError(err, 'PROTOCOL') && pattern.test(err.message)) return;
    throw err;
  }
  throw new Error('did not throw');
}

t.test('at most W chunks in flight; cumulative acks free them oldest first', async (t) => {
  const w = new SendWindow({ maxInFlightChunks: 3, stallTimeoutMs: 1000 });
  for (let i = 0; i < 3; i++) {
    t.ok(w.canSend(4 * KiB));
    w.onSent(i, id(i), 4 * KiB, 10 * i);
  }
  t.notOk(w.canSend(), 'full at W');
  t.throws(() => w.onSent(3, id(3), 1, 30), /cannot send/);
  const r = w.onAck(1, 100);
  t.same(r.acked, [
    { seq: 0, key: chunkKey(id(0)), bytes: 4096 },
    { seq: 1, key: chunkKey(id(1)), bytes: 4096 },
  ]);
  t.equal(r.rttSampleMs, 90, 'sample from the newest chunk covered (sent at 10)');
  t.equal(w.inFlightChunks, 1);
  t.equal(w.inFlightBytes, 4096);
  t.ok(w.canSend());
  w.onSent(3, id(3), 100, 100);
  t.same(
    w.onAck(3, 150).acked.map((a) => a.seq),
    [2, 3],
  );
  t.same(w.counters, { chunksSent: 4, bytesSent: 3 * 4096 + 100, chunksAcked: 4, bytesAcked: 3 * 4096 + 100 });
  t.equal(w.rtt.samples, 2);
  t.equal(w.rtt.minMs, 50);
  t.equal(w.rtt.maxMs, 90);
  t.equal(w.rtt.meanMs, 70);
  t.equal(w.rtt.smoothedMs, 90 * 0.875 + 50 * 0.125, 'RFC 6298 smoothing');
});

t.test('the byte cap limits in-flight bytes but never blocks a lone oversized chunk', async (t) => {
  const w = new SendWindow({ maxInFlightChunks: 100, maxInFlightBytes: 10_000, stallTimeoutMs: 1000 });
  t.ok(w.canSend(50_000), 'nothing in flight: an oversized chunk may go');
  w.onSent(0, id(0), 6000, 0);
  t.ok(w.canSend(4000));
  t.notOk(w.canSend(4001));
  w.onSent(1, id(1), 4000, 0);
  t.notOk(w.canSend(1));
  w.onAck(0, 5);
  t.ok(w.canSend(6000));
});

t.test('duplicate, unknown and malformed acks are PROTOCOL errors and fail the window', async (t) => {
  const mk = (): SendWindow => {
    const w = new SendWindow({ maxInFlightChunks: 4, stallTimeoutMs: 1000 });
    w.onSent(0, id(0), 1, 0);
    w.onSent(1, id(1), 1, 0);
    return w;
  };
  let w = mk();
  w.onAck(0, 1);
  protocolError(() => w.onAck(0, 2), /duplicate ack for seq 0/);
  t.equal(w.state.kind, 'failed');
  t.throws(() => w.onAck(1, 3), /failed window/, 'a failed window takes no more acks');
  w = mk();
  protocolError(() => w.onAck(2, 1), /ack for seq 2, but only seqs below 2 were sent/);
  w = mk();
  protocolError(() => w.onAck(-1, 1), /invalid seq/);
  w = mk();
  protocolError(() => w.onAck(0.5, 1), /invalid seq/);
  w = new SendWindow({ maxInFlightChunks: 4, stallTimeoutMs: 1000 });
  protocolError(() => w.onAck(0, 1), /only seqs below 0/);
  const failed = w.state;
  t.ok(failed.kind === 'failed' && failed.error instanceof ClawpeerError);
});

t.test('driver bugs are thrown as programming errors, not ClawpeerErrors', async (t) => {
  const w = new SendWindow({ maxInFlightChunks: 2, stallTimeoutMs: 1000 });
  t.throws(() => w.onSent(1, id(0), 1, 0), RangeError, 'seq must be consecutive');
  w.onSent(0, id(0), 1, 10);
  t.throws(() => w.onSent(1, id(1), 1, 9), RangeError, 'time must not go backwards');
  t.throws(() => w.onSent(1, new Uint8Array(5), 1, 10), ClawpeerError, 'bad chunk id');
  t.throws(() => new SendWindow({ maxInFlightChunks: 0, stallTimeoutMs: 1 }), RangeError);
  t.throws(() => new SendWindow({ maxInFlightChunks: 1, stallTimeoutMs: 0 }), RangeError);
});

t.test('lifecycle: open -> finishing -> done', async (t) => {
  const w = new SendWindow({ maxInFlightChunks: 2, stallTimeoutMs: 1000 });
  w.onSent(0, id(0), 1, 0);
  w.onSent(1, id(1), 1, 0);
  w.finish();
  t.equal(w.state.kind, 'finishing');
  t.notOk(w.canSend(), 'no sends after finish');
  w.onAck(0, 1);
  t.equal(w.state.kind, 'finishing');
  w.onAck(1, 2);
  t.equal(w.state.kind, 'done');
  protocolError(() => w.onAck(1, 3), /duplicate/);
  const idle = new SendWindow({ maxInFlightChunks: 2, stallTimeoutMs: 1000 });
  idle.finish();
  t.equal(idle.state.kind, 'done', 'finish with nothing in flight is done at once');
});

t.test('stall timeout: deadline from the later of oldest send and last ack', async (t) => {
  const w = new SendWindow({ maxInFlightChunks: 4, stallTimeoutMs: 1000 });
  t.equal(w.pollTimeout(), undefined, 'no timer while idle');
  w.onSent(0, id(0), 1, 100);
  w.onSent(1, id(1), 1, 200);
  t.equal(w.pollTimeout(), 1100);
  t.same(w.handleTimeout(1099), { kind: 'none' });
  w.onAck(0, 1099);
  t.equal(w.pollTimeout(), 2099, 'an ack is progress: the clock restarts from it');
  t.same(w.handleTimeout(1100), { kind: 'none' });
  const action = w.handleTimeout(2099);
  t.equal(action.kind, 'stalled');
  if (action.kind === 'stalled') {
    t.equal(action.error.code, 'TIMEOUT');
    t.equal(action.oldestSeq, 1);
    t.equal(action.waitedMs, 1000);
    t.match(action.error.message, /chunk seq 1 .* no ack for 1000 ms \(limit 1000 ms\)/);
  }
  t.equal(w.state.kind, 'failed');
  t.equal(w.pollTimeout(), undefined);
  t.notOk(w.canSend());
});

t.test(
  'property: against a model, acks cover exactly what was sent, in order, never more than W in flight',
  async (t) => {
    type Op = { kind: 'send'; bytes: number } | { kind: 'ack'; back: number } | { kind: 'bogus'; delta: number };
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ kind: fc.constant('send' as const), bytes: fc.integer({ min: 1, max: 9000 }) }),
      fc.record({ kind: fc.constant('ack' as const), back: fc.nat({ max: 5 }) }),
      fc.record({ kind: fc.constant('bogus' as const), delta: fc.integer({ min: -3, max: 3 }) }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.array(op, { maxLength: 60 }), (W, ops) => {
        const w = new SendWindow({ maxInFlightChunks: W, maxInFlightBytes: 20_000, stallTimeoutMs: 1000 });
        const model: { seq: number; bytes: number }[] = [];
        let next = 0;
        let now = 0;
        const ackedSeqs: number[] = [];
        for (const o of ops) {
          now++;
          if (o.kind === 'send') {
            const inFlight = model.reduce((s, m) => s + m.bytes, 0);
            const expect = model.length < W && (model.length === 0 || inFlight + o.bytes <= 20_000);
            if (w.canSend(o.bytes) !== expect) throw new Error('canSend disagrees with the model');
            if (expect) {
              w.onSent(next, id(next), o.bytes, now);
              model.push({ seq: next++, bytes: o.bytes });
            }
          } else if (o.kind === 'ack') {
            if (model.length === 0) continue;
            const upTo = model[Math.max(0, model.length - 1 - o.back)]!.seq;
            const r = w.onAck(upTo, now);
            const expected = model.splice(0, model.findIndex((m) => m.seq === upTo) + 1);
            if (JSON.stringify(r.acked.map((a) => a.seq)) !== JSON.stringify(expected.map((m) => m.seq)))
              throw new Error('acked set');
            ackedSeqs.push(...r.acked.map((a) => a.seq));
          } else {
            // An ack that covers nothing new or something never sent must be refused.
            const oldest = model[0]?.seq ?? next;
            const bad = o.delta < 0 ? oldest + o.delta : next + o.delta;
            if (bad >= oldest && bad < next) continue; // that would be a valid ack
            let refused = false;
            try {
              w.onAck(bad, now);
            } catch (err) {
              refused = isClawpeerError(err, 'PROTOCOL');
            }
            if (!refused) throw new Error(`ack ${bad} accepted (oldest ${oldest}, next ${next})`);
            return; // the window is failed now
          }
          if (w.inFlightChunks !== model.length || w.inFlightChunks > W) throw new Error('in-flight count');
        }
        if (JSON.stringify(ackedSeqs) !== JSON.stringify(ackedSeqs.map((_, i) => i)))
          throw new Error('each seq acked once, in order');
      }),
      { numRuns: 500, seed: 17 },
    );
    t.pass('500 random op sequences match the model');
  },
);
