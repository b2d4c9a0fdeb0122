import t from 'tap';
import {
  backoffMs,
  FolderSchedule,
  MAX_UNSETTLED_RUNS,
  type PairConfig,
  type PairStatus,
} from '../../src/sync/folder-schedule.js';

const T0 = 1_000_000;
const pair = (folder: string, peer: string, o: Partial<PairConfig> = {}): PairConfig => ({
  folder,
  peer,
  intervalMs: 60_000,
  paused: false,
  ...o,
});
const keys = (xs: readonly { folder: string; peer: string }[]): string[] =>
  xs.map((x) => `${x.folder}/${x.peer}`).sort();
const stateOf = (s: FolderSchedule, folder: string, peer: string): PairStatus | undefined =>
  s.snapshot().find((p) => p.folder === folder && p.peer === peer);
function defined<T>(v: T | undefined, what: string): T {
  if (v === undefined) throw new Error(`${what} is undefined`);
  return v;
}

t.test(
  'every pair is due at start; one sync per peer at a time (its session carries its folders in turn)',
  async (t) => {
    const s = new FolderSchedule({ random: () => 0.5 });
    s.configure([pair('docs', 'a'), pair('docs', 'b'), pair('photos', 'a'), pair('photos', 'b')], T0);
    const first = s.take(T0);
    t.equal(first.length, 2, 'two pairs run: no peer twice');
    t.equal(new Set(first.map((x) => x.peer)).size, 2);
    t.same(s.take(T0), [], 'the rest waits for its peer to be free');
    for (const x of first) s.finish(x.folder, x.peer, T0 + 10, { kind: 'done' });
    const second = s.take(T0 + 10);
    t.same(keys([...first, ...second]), ['docs/a', 'docs/b', 'photos/a', 'photos/b'], 'then the other two');
    const one = defined(first[0], 'the first pair');
    t.equal(stateOf(s, one.folder, one.peer)?.state, 'in-sync');
    t.equal(stateOf(s, one.folder, one.peer)?.lastSyncAt, T0 + 10);
  },
);

t.test("the interval is the fallback; a local change brings the folder's pairs forward", async (t) => {
  const s = new FolderSchedule({ random: () => 0.5 });
  s.configure(
    [
      pair('docs', 'a', { intervalMs: 30_000 }),
      pair('docs', 'b', { intervalMs: 30_000 }),
      pair('other', 'c', { intervalMs: 30_000 }),
    ],
    T0,
  );
  for (let i = 0; i < 3; i++) for (const x of s.take(T0)) s.finish(x.folder, x.peer, T0, { kind: 'done' });
  t.equal(s.nextWakeAt(), T0 + 30_000);
  t.same(s.take(T0 + 29_999), []);
  s.request(T0 + 1_000, { folder: 'docs' });
  t.equal(s.nextWakeAt(), T0 + 1_000);
  t.same(keys(s.take(T0 + 1_000)), ['docs/a', 'docs/b'], 'with each of its peers');
  s.finish('docs', 'a', T0 + 1_100, { kind: 'done' });
  s.finish('docs', 'b', T0 + 1_200, { kind: 'done' });
  t.equal(s.nextWakeAt(), T0 + 30_000, 'other/c keeps its interval');
  t.same(keys(s.take(T0 + 30_000)), ['other/c']);
});

t.test('a change during a sync runs the pair again right after', async (t) => {
  const s = new FolderSchedule({ random: () => 0.5 });
  s.configure([pair('docs', 'a')], T0);
  t.same(keys(s.take(T0)), ['docs/a']);
  s.request(T0 + 5, { folder: 'docs' });
  t.same(s.take(T0 + 5), [], 'not twice at once');
  s.finish('docs', 'a', T0 + 50, { kind: 'done' });
  t.same(keys(s.take(T0 + 50)), ['docs/a'], 'again at once');
  s.finish('docs', 'a', T0 + 60, { kind: 'done' });
  t.equal(s.nextWakeAt(), T0 + 60 + 60_000, 'then the interval');
});

t.test('a change during a failed sync retries it at once, as one just after would', async (t) => {
  const s = new FolderSchedule({ random: () => 0.5 });
  s.configure([pair('docs', 'a')], T0);
  t.same(keys(s.take(T0)), ['docs/a']);
  s.finish('docs', 'a', T0 + 10, { kind: 'failed', error: '1 path left as is by the peer (x); retried' });
  t.same(s.take(T0 + 20), [], 'a failure backs off');
  s.request(T0 + 20, { folder: 'docs' });
  t.same(keys(s.take(T0 + 20)), ['docs/a'], 'a change after it retries at once');
  s.request(T0 + 25, { folder: 'docs' });
  s.finish('docs', 'a', T0 + 30, { kind: 'failed', error: '1 path left as is by the peer (x); retried' });
  t.equal(stateOf(s, 'docs', 'a')?.state, 'error', 'still an error');
  t.same(keys(s.take(T0 + 30)), ['docs/a'], 'and so does a change during it');
  s.request(T0 + 35, { folder: 'docs' });
  s.finish('docs', 'a', T0 + 40, { kind: 'offline', error: 'no answer' });
  t.same(s.take(T0 + 40), [], 'an unreachable peer keeps its backoff');
});

t.test(
  'an unreachable peer: waiting since the first miss, exponential backoff, changes do not hurry it, coming online does',
  async (t) => {
    const s = new FolderSchedule({ backoff: { firstMs: 1_000, capMs: 8_000, busyMs: 500 }, random: () => 1 });
    s.configure([pair('docs', 'a')], T0);
    let now = T0;
    const delays: number[] = [];
    for (let i = 0; i < 6; i++) {
      t.same(keys(s.take(now)), ['docs/a']);
      s.finish('docs', 'a', now, { kind: 'offline', error: 'no answer' });
      const next = defined(s.nextWakeAt(), 'the next wake');
      delays.push(next - now);
      s.request(now + 1, { folder: 'docs' });
      t.equal(s.nextWakeAt(), next, 'a local change keeps the backoff');
      now = next;
    }
    t.same(delays, [1_000, 2_000, 4_000, 8_000, 8_000, 8_000], 'doubling, capped');
    t.same(keys(s.take(now)), ['docs/a']);
    t.equal(stateOf(s, 'docs', 'a')?.state, 'waiting', 'a retry stays waiting until the peer answers');
    s.connected('docs', 'a', now + 5);
    t.equal(stateOf(s, 'docs', 'a')?.state, 'syncing');
    s.finish('docs', 'a', now + 10, { kind: 'offline', error: 'no answer' });
    now = defined(s.nextWakeAt(), 'the next wake');
    const st = defined(stateOf(s, 'docs', 'a'), 'docs/a');
    t.equal(st.state, 'waiting');
    t.equal(st.since, T0, 'waiting since the first miss');
    t.equal(st.error, 'no answer');
    t.equal(st.failures, 7);
    s.peerOnline('a', now - 3_000);
    t.equal(s.nextWakeAt(), now - 3_000, 'due as soon as the peer is seen');
    t.same(keys(s.take(now - 3_000)), ['docs/a']);
    s.finish('docs', 'a', now - 2_000, { kind: 'done' });
    t.equal(stateOf(s, 'docs', 'a')?.state, 'in-sync');
    t.equal(stateOf(s, 'docs', 'a')?.failures, 0);
    t.equal(stateOf(s, 'docs', 'a')?.error, undefined);
  },
);

t.test(
  'a peer that answers but refuses the folder backs off; reaching it again hurries only pairs waiting for it',
  async (t) => {
    const s = new FolderSchedule({ backoff: { firstMs: 1_000, capMs: 8_000, busyMs: 500 }, random: () => 1 });
    s.configure([pair('docs', 'a'), pair('photos', 'a')], T0);
    // photos/a first misses the peer (waiting); docs/a then reaches it at every try and is refused.
    t.same(keys(s.take(T0)), ['docs/a'], 'one pair per peer at a time: docs/a first');
    s.finish('docs', 'a', T0 + 1, { kind: 'done' });
    t.same(keys(s.take(T0 + 1)), ['photos/a']);
    s.finish('photos', 'a', T0 + 2, { kind: 'offline', error: 'no answer' });
    s.request(T0 + 3, { folder: 'docs' }); // a local change
    let now = T0 + 3;
    const delays: number[] = [];
    for (let i = 0; i < 5; i++) {
      t.same(keys(s.take(now)), ['docs/a']);
      // What the folder service does once its dial worked (folder-service.ts), then the refusal.
      s.connected('docs', 'a', now);
      s.peerOnline('a', now);
      s.finish('docs', 'a', now, { kind: 'failed', error: 'SHARE_FORBIDDEN: not on the allow list' });
      const st = defined(stateOf(s, 'docs', 'a'), 'docs/a');
      t.equal(st.state, 'error');
      const next = defined(st.nextAt, 'the next try');
      delays.push(next - now);
      now = next;
      if (i === 0) {
        const photos = defined(stateOf(s, 'photos', 'a'), 'photos/a');
        t.equal(photos.failures, 0, 'the pair that was waiting for the peer is due at once');
        t.equal(photos.nextAt, T0 + 3, 'due when the dial worked');
        t.same(keys(s.take(now - delays[0]! + 1)), ['photos/a']);
        s.finish('photos', 'a', now - delays[0]! + 2, { kind: 'done' });
      }
    }
    t.same(delays, [1_000, 2_000, 4_000, 8_000, 8_000], 'the refusals back off, doubling up to the cap');
  },
);

t.test('backoff jitter stays within 50-100 % of the exponential delay', async (t) => {
  const policy = { firstMs: 1_000, capMs: 60_000, busyMs: 1_000 };
  t.equal(
    backoffMs(1, policy, () => 0),
    500,
  );
  t.equal(
    backoffMs(1, policy, () => 1),
    1_000,
  );
  t.equal(
    backoffMs(3, policy, () => 0.5),
    3_000,
  );
  t.equal(
    backoffMs(50, policy, () => 1),
    60_000,
    'capped, no overflow',
  );
});

t.test(
  'other failures are errors (retried with backoff); a busy folder is retried shortly without counting',
  async (t) => {
    const s = new FolderSchedule({ backoff: { firstMs: 1_000, capMs: 8_000, busyMs: 400 }, random: () => 0.5 });
    s.configure([pair('docs', 'a')], T0);
    s.take(T0);
    s.finish('docs', 'a', T0, { kind: 'done' });
    s.request(T0 + 10, { peer: 'a' });
    s.take(T0 + 10);
    s.finish('docs', 'a', T0 + 20, { kind: 'busy', error: 'folder busy' });
    t.equal(stateOf(s, 'docs', 'a')?.state, 'in-sync', 'busy: back to the state before');
    t.equal(stateOf(s, 'docs', 'a')?.failures, 0);
    t.equal(s.nextWakeAt(), T0 + 20 + 400);
    s.take(T0 + 420);
    s.finish('docs', 'a', T0 + 430, { kind: 'failed', error: 'disk full' });
    const st = defined(stateOf(s, 'docs', 'a'), 'docs/a');
    t.equal(st.state, 'error');
    t.equal(st.error, 'disk full');
    t.equal(st.lastSyncAt, T0, 'the last completed sync is kept');
    t.equal(s.nextWakeAt(), T0 + 430 + 750);
    s.request(T0 + 500, { folder: 'docs' });
    t.equal(s.nextWakeAt(), T0 + 500, 'a change retries an error at once (it may be what fixes it)');
  },
);

t.test('pause, resume, remove and interval changes from the config', async (t) => {
  const s = new FolderSchedule({ random: () => 0.5 });
  s.configure([pair('docs', 'a'), pair('docs', 'b')], T0);
  s.configure([pair('docs', 'a', { paused: true }), pair('docs', 'b', { paused: true })], T0 + 1);
  t.same(s.take(T0 + 1), [], 'paused pairs do not run');
  t.equal(s.nextWakeAt(), undefined);
  t.equal(stateOf(s, 'docs', 'a')?.state, 'paused');
  s.request(T0 + 2, { folder: 'docs' });
  t.same(s.take(T0 + 2), [], 'a change does not wake a paused folder');
  s.configure([pair('docs', 'a')], T0 + 3);
  t.equal(stateOf(s, 'docs', 'b'), undefined, 'a peer taken off the folder is dropped');
  t.same(keys(s.take(T0 + 3)), ['docs/a'], 'resumed: due at once');
  s.configure([pair('docs', 'a', { paused: true })], T0 + 4);
  s.finish('docs', 'a', T0 + 5, { kind: 'done' });
  t.equal(stateOf(s, 'docs', 'a')?.state, 'paused', 'paused while running: paused once it ends');
  s.configure([pair('docs', 'a', { intervalMs: 120_000 })], T0 + 6);
  s.take(T0 + 6);
  s.finish('docs', 'a', T0 + 7, { kind: 'done' });
  s.configure([pair('docs', 'a', { intervalMs: 5_000 })], T0 + 8);
  t.equal(s.nextWakeAt(), T0 + 8 + 5_000, 'a shorter interval applies now');
  s.finish('gone', 'x', T0 + 9, { kind: 'done' });
  t.pass('finishing an unknown pair is ignored');
});

t.test('a sync the peer ran here that ended equal clears a failed pair at once', async (t) => {
  const s = new FolderSchedule({ random: () => 0.5 });
  s.configure([pair('docs', 'a'), pair('docs', 'b')], T0);
  s.take(T0);
  // Both failed several times (a path the peer left as is): a's next try is minutes away.
  for (let i = 0; i < 8; i++) {
    s.finish('docs', 'a', T0 + i, { kind: 'failed', error: '1 path left as is by the peer (x); retried' });
    s.finish('docs', 'b', T0 + i, { kind: 'failed', error: 'refused' });
    s.request(T0 + i, { folder: 'docs' });
    s.take(T0 + i);
  }
  s.finish('docs', 'a', T0 + 10, { kind: 'failed', error: '1 path left as is by the peer (x); retried' });
  const failed = defined(stateOf(s, 'docs', 'a'), 'docs/a');
  t.equal(failed.state, 'error');
  t.ok(defined(failed.nextAt, 'nextAt') > T0 + 60_000, 'backed off for minutes');

  // The cause went (the peer's sync here ended with both logs equal): in sync now.
  s.servedInSync('docs', 'a', T0 + 20);
  const now = defined(stateOf(s, 'docs', 'a'), 'docs/a');
  t.equal(now.state, 'in-sync');
  t.equal(now.error, undefined, 'no error left');
  t.equal(now.lastSyncAt, T0 + 20);
  t.equal(now.nextAt, T0 + 20 + 60_000, 'next at the interval');
  s.servedInSync('docs', 'b', T0 + 20);
  t.equal(stateOf(s, 'docs', 'b')?.state, 'syncing', 'a pair whose own sync runs waits for its outcome');
});

t.test('a sync the peer ran here that failed on this side puts the pair in error, retried with backoff', async (t) => {
  const s = new FolderSchedule({ random: () => 0.5 });
  s.configure([pair('docs', 'a'), pair('docs', 'b'), pair('photos', 'a', { paused: true })], T0);
  for (const x of s.take(T0)) s.finish(x.folder, x.peer, T0 + 10, { kind: 'done' });
  t.equal(stateOf(s, 'docs', 'a')?.state, 'in-sync');

  s.servedFailed('docs', 'a', T0 + 20, 'cannot create x: the file system is read-only');
  const failed = defined(stateOf(s, 'docs', 'a'), 'docs/a');
  t.equal(failed.state, 'error', 'error at once, not in-sync until the interval');
  t.equal(failed.since, T0 + 20);
  t.equal(failed.error, 'cannot create x: the file system is read-only');
  t.equal(failed.failures, 1);
  t.equal(failed.nextAt, T0 + 20 + backoffMs(1, { firstMs: 1_000, capMs: 300_000, busyMs: 1_000 }, () => 0.5));
  t.same(s.take(T0 + 21), [], 'not before its backoff');
  t.same(keys(s.take(defined(failed.nextAt, 'nextAt'))), ['docs/a'], 'its own sync retries then');
  t.equal(stateOf(s, 'docs', 'b')?.state, 'in-sync', "the folder's other pair is not touched");

  // The peer's own retries fail here too: they never push this pair's retry further away.
  s.finish('docs', 'a', T0 + 2_000, { kind: 'failed', error: 'read-only' });
  const due = defined(stateOf(s, 'docs', 'a')?.nextAt, 'nextAt');
  s.servedFailed('docs', 'a', T0 + 2_001, 'read-only');
  t.equal(stateOf(s, 'docs', 'a')?.nextAt, due, 'still due when it was');

  // A pair running its own sync waits for that outcome; a paused one stays paused.
  s.take(due);
  s.servedFailed('docs', 'a', due + 1, 'read-only');
  t.equal(stateOf(s, 'docs', 'a')?.state, 'syncing');
  s.servedFailed('photos', 'a', due + 1, 'read-only');
  t.equal(stateOf(s, 'photos', 'a')?.state, 'paused');
  s.servedFailed('gone', 'x', due + 1, 'read-only');
  t.pass('an unknown pair is ignored');
});

t.test('a peer that paused its copy: a state, no error, tried again at the interval', async (t) => {
  const s = new FolderSchedule({ random: () => 0.5 });
  s.configure([pair('docs', 'a', { intervalMs: 60_000 })], T0);
  t.same(keys(s.take(T0)), ['docs/a']);
  s.finish('docs', 'a', T0 + 10, { kind: 'peer-paused' });
  const p = stateOf(s, 'docs', 'a');
  t.equal(p?.state, 'peer-paused');
  t.equal(p?.error, undefined, 'no error');
  t.equal(p?.failures, 0, 'not a failure');
  t.equal(p?.nextAt, T0 + 10 + 60_000, "the folder's interval, not the backoff");
  s.request(T0 + 20, { folder: 'docs' });
  t.equal(s.nextWakeAt(), T0 + 10 + 60_000, 'a local change does not knock on a paused copy');
  t.same(keys(s.take(T0 + 10 + 60_000)), ['docs/a'], 'the interval tries again');
  s.finish('docs', 'a', T0 + 60_100, { kind: 'peer-paused' });
  t.equal(stateOf(s, 'docs', 'a')?.since, T0 + 10, 'paused there since it was first found so');
  s.peerResumed('docs', 'a', T0 + 61_000);
  t.same(keys(s.take(T0 + 61_000)), ['docs/a'], "the peer's own sync here says it resumed: due now");
  s.finish('docs', 'a', T0 + 61_100, { kind: 'done' });
  t.equal(stateOf(s, 'docs', 'a')?.state, 'in-sync');
});

t.test("a pair's last sync from an earlier run is kept until a newer one", async (t) => {
  const s = new FolderSchedule({ random: () => 0.5 });
  s.configure([pair('docs', 'a'), pair('docs', 'b')], T0);
  s.knownSync('docs', 'a', T0 - 5_000);
  t.equal(stateOf(s, 'docs', 'a')?.lastSyncAt, T0 - 5_000, 'shown before any sync of this run');
  t.equal(stateOf(s, 'docs', 'b')?.lastSyncAt, undefined, 'a pair never synced stays so');
  s.take(T0);
  s.finish('docs', 'a', T0 + 10, { kind: 'done' });
  s.knownSync('docs', 'a', T0 - 5_000);
  t.equal(stateOf(s, 'docs', 'a')?.lastSyncAt, T0 + 10, 'an older time does not replace a newer one');
  t.equal(s.lastSyncAt('docs', 'a'), T0 + 10, 'the one pair asked for, as its status has it');
  t.equal(s.lastSyncAt('docs', 'b'), undefined);
  t.equal(s.lastSyncAt('docs', 'nobody'), undefined, 'not a pair');
});

t.test('a sync that ended unsettled (changes came in meanwhile) runs again at once, no error', async (t) => {
  const s = new FolderSchedule({ random: () => 0.5 });
  s.configure([pair('docs', 'a')], T0);
  s.take(T0);
  s.finish('docs', 'a', T0 + 10, { kind: 'failed', error: 'disk full' });
  t.equal(stateOf(s, 'docs', 'a')?.state, 'error');
  t.same(s.take(T0 + 10), [], 'the failure backs off');
  for (const x of s.take(T0 + 10_000)) t.equal(x.peer, 'a', 'its retry');
  s.finish('docs', 'a', T0 + 10_010, { kind: 'unsettled', error: 'left to move' });
  const p = stateOf(s, 'docs', 'a');
  t.equal(p?.state, 'syncing', 'still syncing, not error');
  t.equal(p?.failures, 1, 'no failure counted (the one before stays until a sync in sync)');
  t.equal(p?.error, undefined, "the earlier failure's text is gone");
  t.equal(p?.lastSyncAt, T0 + 10_010, 'it completed');
  t.same(keys(s.take(T0 + 10_010)), ['docs/a'], 'due again at once, no backoff');
  s.finish('docs', 'a', T0 + 10_020, { kind: 'done' });
  t.equal(stateOf(s, 'docs', 'a')?.state, 'in-sync');
});

t.test('unsettled syncs in a row beyond MAX_UNSETTLED_RUNS are a failure: no spinning', async (t) => {
  const s = new FolderSchedule({ random: () => 0.5 });
  s.configure([pair('docs', 'a')], T0);
  let now = T0;
  for (let i = 0; i < MAX_UNSETTLED_RUNS; i++) {
    t.same(keys(s.take(now)), ['docs/a']);
    s.finish('docs', 'a', ++now, { kind: 'unsettled', error: 'left to move' });
    t.equal(stateOf(s, 'docs', 'a')?.state, 'syncing');
  }
  t.same(keys(s.take(now)), ['docs/a']);
  s.finish('docs', 'a', ++now, { kind: 'unsettled', error: 'left to move' });
  t.equal(stateOf(s, 'docs', 'a')?.state, 'error', 'one more is an error');
  t.equal(stateOf(s, 'docs', 'a')?.error, 'left to move');
  t.same(s.take(now), [], 'retried with backoff');
  t.same(keys(s.take(now + 10_000)), ['docs/a']);
  s.finish('docs', 'a', (now += 10_001), { kind: 'unsettled', error: 'left to move' });
  t.equal(stateOf(s, 'docs', 'a')?.failures, 2, 'and the next too, backing off longer');
  t.same(s.take(now + 1_000), [], 'not retried after the first backoff (1 s, jittered)');
  // A sync in sync ends the run: the next unsettled one reruns at once again.
  for (const x of s.take(now + 10_000)) s.finish(x.folder, x.peer, now + 10_001, { kind: 'done' });
  s.request(now + 10_002, { folder: 'docs' });
  t.same(keys(s.take(now + 10_002)), ['docs/a']);
  s.finish('docs', 'a', now + 10_003, { kind: 'unsettled', error: 'left to move' });
  t.equal(stateOf(s, 'docs', 'a')?.state, 'syncing', 'the count starts over');
});
