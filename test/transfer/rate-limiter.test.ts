// The --bwlimit limiter in virtual time: the long-run rate is the cap, a burst is bounded,
// takers sharing one limiter are served in call order, pacedWrite slices, aborts reject.
import t from 'tap';
import { pacedWrite, RateLimiter, type RateLimiterClock } from '../../src/transfer/rate-limiter.js';

/** A clock that only moves when a sleeper is due: sleeps resolve in deadline order. */
class VirtualClock implements RateLimiterClock {
  #now = 0;
  #sleepers: { at: number; resolve: () => void }[] = [];
  now(): number {
    return this.#now;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const entry = { at: this.#now + ms, resolve };
      this.#sleepers.push(entry);
      signal?.addEventListener(
        'abort',
        () => {
          this.#sleepers = this.#sleepers.filter((s) => s !== entry);
          reject(signal.reason);
        },
        { once: true },
      );
    });
  }
  /** Time passes with nobody waiting. */
  advance(ms: number): void {
    this.#now += ms;
  }
  /** Runs every sleeper until none is left, letting awaiting code continue between them. */
  async run(): Promise<void> {
    for (;;) {
      await new Promise((r) => setImmediate(r));
      this.#sleepers.sort((a, b) => a.at - b.at);
      const next = this.#sleepers.shift();
      if (next === undefined) return;
      this.#now = Math.max(this.#now, next.at);
      next.resolve();
    }
  }
}

t.test('the long-run rate is the cap; only the burst goes at once', async (t) => {
  const clock = new VirtualClock();
  const limiter = new RateLimiter(100_000, { burstBytes: 10_000, clock }); // 100 kB/s
  const sent: { at: number; bytes: number }[] = [];
  const sending = (async () => {
    for (let i = 0; i < 100; i++) {
      await limiter.take(5_000);
      sent.push({ at: clock.now(), bytes: 5_000 });
    }
  })();
  await clock.run();
  await sending;
  t.equal(sent.filter((s) => s.at === 0).length, 2, 'the burst (10 kB) goes at once');
  // 500 kB at 100 kB/s, less the burst: the last take is allowed at 4.9 s.
  t.equal(sent.at(-1)?.at, 4_900, 'the last 5 kB wait until the cap allows them');
  // Over any window of the run, bytes <= rate * window + burst.
  const busiest = Math.max(
    ...sent.map((a) => sent.filter((s) => s.at >= a.at && s.at <= a.at + 1000).reduce((n, s) => n + s.bytes, 0)),
  );
  t.ok(busiest <= 100_000 + 10_000, `at most a second's worth and the burst within any 1 s (${busiest} bytes)`);
});

t.test('an idle limiter earns no more than one burst', async (t) => {
  const clock = new VirtualClock();
  const limiter = new RateLimiter(1_000, { burstBytes: 2_000, clock });
  await limiter.take(2_000);
  t.equal(limiter.delayFor(1_000), 1_000, 'right after the burst, 1 kB waits 1 s');
  // Idle for a minute: still only the burst at once.
  clock.advance(60_000);
  t.equal(limiter.delayFor(2_000), 0, 'a burst goes at once after idling');
  t.equal(limiter.delayFor(3_000), 1_000, 'more than a burst waits for the excess');
});

t.test('takers sharing a limiter are served in call order, together at the cap', async (t) => {
  const clock = new VirtualClock();
  const limiter = new RateLimiter(10_000, { burstBytes: 1_000, clock });
  const order: string[] = [];
  const taker = (name: string) =>
    (async () => {
      for (let i = 0; i < 5; i++) {
        await limiter.take(1_000);
        order.push(name);
      }
    })();
  const both = Promise.all([taker('a'), taker('b')]);
  await clock.run();
  await both;
  t.same(order, ['a', 'b', 'a', 'b', 'a', 'b', 'a', 'b', 'a', 'b'], 'alternating: neither starves');
  t.equal(Math.round(clock.now()), 900, '10 kB at 10 kB/s with a 1 kB burst: done at 0.9 s');
});

t.test('pacedWrite slices a write and takes each slice first', async (t) => {
  const clock = new VirtualClock();
  const limiter = new RateLimiter(20_480, { clock }); // 20 KiB/s: slices of 1 KiB
  t.equal(limiter.sliceBytes, 1024, 'a twentieth of a second per slice');
  const writes: { at: number; bytes: number }[] = [];
  const write = pacedWrite([limiter], async (b) => {
    writes.push({ at: clock.now(), bytes: b.length });
  });
  const done = write(new Uint8Array(10 * 1024 + 10));
  await clock.run();
  await done;
  t.equal(writes.length, 11, 'ten full slices and the rest');
  t.equal(
    writes.reduce((n, w) => n + w.bytes, 0),
    10 * 1024 + 10,
    'every byte written once',
  );
  t.ok((writes.at(-1)?.at ?? 0) > 0, 'later slices waited for the cap');
});

t.test('pacedWrite under two caps keeps to the tighter, slicing by the smaller slice', async (t) => {
  const clock = new VirtualClock();
  const own = new RateLimiter(100_000, { burstBytes: 5_000, clock });
  const shared = new RateLimiter(20_000, { burstBytes: 1_000, clock });
  let written = 0;
  const write = pacedWrite([own, shared], async (b) => {
    written += b.length;
  });
  const done = write(new Uint8Array(21_000));
  await clock.run();
  await done;
  t.equal(written, 21_000);
  t.equal(Math.round(clock.now()), 1_000, '21 kB under 20 kB/s with a 1 kB burst: 1 s, the tighter cap');
  t.same(pacedWrite([], write), write, 'no cap: the write itself');
});

t.test('an aborted take rejects with the reason; bad arguments are refused', async (t) => {
  const clock = new VirtualClock();
  const limiter = new RateLimiter(1_000, { burstBytes: 1_000, clock });
  await limiter.take(1_000);
  const abort = new AbortController();
  const waiting = limiter.take(5_000, abort.signal);
  abort.abort(new Error('stop'));
  await t.rejects(waiting, { message: 'stop' });
  t.throws(() => new RateLimiter(0), RangeError);
  t.throws(() => new RateLimiter(Number.POSITIVE_INFINITY), RangeError);
  await t.rejects(limiter.take(-1), RangeError);
});
