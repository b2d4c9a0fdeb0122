// `clawpeer sync` waits for a folder another sync holds (busy-wait.ts): which refusals it waits
// for, the backoff, the bound, Ctrl-C, and how it says so. The end-to-end case with listeners:
// test/long/sync-waits-busy.test.ts.
import t from 'tap';
import { BUSY_WAIT_MS, busyWaitMs, untilNotBusy, waitingEvent, waitingText } from '../../src/cli/busy-wait.js';
import { Output } from '../../src/cli/output.js';
import { ClawpeerError } from '../../src/errors.js';

const peerBusy = (): ClawpeerError => new ClawpeerError('PEER_BUSY', 'peer: folder docs is being synced by pid 7');
const hereBusy = (): ClawpeerError => new ClawpeerError('FOLDER_BUSY', 'folder /f is being synced by pid 8');

/** A clock that the fake sleep moves; the sleeps it was asked for. */
function fakeTime(): { now: () => number; sleep: (ms: number) => Promise<void>; slept: number[] } {
  let now = 0;
  const slept: number[] = [];
  return {
    now: () => now,
    sleep: (ms) => {
      slept.push(ms);
      now += ms;
      return Promise.resolve();
    },
    slept,
  };
}

t.test('a busy folder, here or there, is tried again with a growing delay until the sync runs', async (t) => {
  const time = fakeTime();
  const refusals = [peerBusy(), hereBusy(), peerBusy(), peerBusy(), peerBusy(), peerBusy()];
  const told: ClawpeerError[] = [];
  let tries = 0;
  const result = await untilNotBusy(
    () => {
      tries++;
      const refusal = refusals.shift();
      return refusal === undefined ? Promise.resolve('synced') : Promise.reject(refusal);
    },
    { signal: new AbortController().signal, boundMs: 120_000, onWait: (e) => told.push(e), ...time },
  );
  t.equal(result, 'synced');
  t.equal(tries, 7);
  t.same(time.slept, [250, 500, 1000, 2000, 2000, 2000], '0.25 s growing to 2 s');
  t.same(
    told.map((e) => e.code),
    ['PEER_BUSY'],
    'told once, at the first refusal',
  );
});

t.test('a sync that is not refused runs once, and waits for nothing', async (t) => {
  const time = fakeTime();
  let waited = false;
  t.equal(
    await untilNotBusy(() => Promise.resolve(1), {
      signal: new AbortController().signal,
      boundMs: 120_000,
      onWait: () => (waited = true),
      ...time,
    }),
    1,
  );
  t.same(time.slept, []);
  t.notOk(waited);
});

t.test('any other failure is reported at once', async (t) => {
  const time = fakeTime();
  let tries = 0;
  await t.rejects(
    untilNotBusy(
      () => {
        tries++;
        return Promise.reject(new ClawpeerError('UNREACHABLE', 'no answer'));
      },
      { signal: new AbortController().signal, boundMs: 120_000, onWait: () => undefined, ...time },
    ),
    { code: 'UNREACHABLE' },
  );
  t.equal(tries, 1);
  t.same(time.slept, []);
});

t.test('past the bound the last refusal is reported as it was', async (t) => {
  const time = fakeTime();
  let tries = 0;
  const last = peerBusy();
  await t.rejects(
    untilNotBusy(
      () => {
        tries++;
        return Promise.reject(tries < 5 ? peerBusy() : last);
      },
      { signal: new AbortController().signal, boundMs: 3_000, onWait: () => undefined, ...time },
    ),
    last,
  );
  t.same(time.slept, [250, 500, 1000, 1250], 'the last sleep ends at the bound');
  t.equal(tries, 5, 'one more try at the bound');
});

t.test('Ctrl-C while it waits ends the wait with the interruption', async (t) => {
  const abort = new AbortController();
  const started = performance.now();
  const waiting = untilNotBusy(() => Promise.reject(peerBusy()), {
    signal: abort.signal,
    boundMs: 120_000,
    onWait: () => abort.abort(new ClawpeerError('INTERRUPTED')),
  });
  await t.rejects(waiting, { code: 'INTERRUPTED' });
  t.ok(performance.now() - started < 60_000, 'did not wait out the bound');
});

t.test('the bound: 2 minutes, shorter only through the test variable', async (t) => {
  t.equal(busyWaitMs({}), BUSY_WAIT_MS);
  t.equal(BUSY_WAIT_MS, 120_000);
  t.equal(busyWaitMs({ CLAWPEER_TEST_SYNC_BUSY_WAIT_MS: '1500' }), 1500);
  t.equal(busyWaitMs({ CLAWPEER_TEST_SYNC_BUSY_WAIT_MS: 'soon' }), BUSY_WAIT_MS, 'not a number: the default');
});

t.test('said once: a line on stderr, a JSON event with --json, nothing with --quiet', async (t) => {
  const say = (json: boolean, quiet: boolean): { stdout: string[]; stderr: string[] } => {
    const stdout: string[] = [];
    const stderr: string[] = [];
    const out = new Output(
      json,
      (s) => stdout.push(s),
      (s) => stderr.push(s),
      quiet,
    );
    out.notice(waitingEvent(peerBusy(), 120_000), waitingText(peerBusy(), 120_000));
    return { stdout, stderr };
  };
  t.same(say(false, false), {
    stdout: [],
    stderr: [
      "clawpeer: the peer's copy of the folder is busy: waiting for its running sync to end (at most 2 min): peer: folder docs is being synced by pid 7\n",
    ],
  });
  t.same(say(true, false), {
    stdout: [
      '{"event":"waiting","code":"PEER_BUSY","message":"peer: folder docs is being synced by pid 7","waitSeconds":120}\n',
    ],
    stderr: [],
  });
  t.same(say(false, true), { stdout: [], stderr: [] });
  t.match(waitingText(hereBusy(), 1500), /^the folder is busy here: .*\(at most 1\.5 s\)/);
});
