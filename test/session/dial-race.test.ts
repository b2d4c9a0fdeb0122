// The dial race: priority groups with a head start, the first success wins, the others are
// aborted or closed and every candidate that did not win is released; all failing is one error.
import t from 'tap';
import { ClawpeerError } from '../../src/errors.js';
import { raceDial } from '../../src/session/dial-race.js';
import type { DialCandidate, PathKind, PathSource } from '../../src/reach/paths.js';

const peer = { id: 'peer-id', publicKey: new Uint8Array(32), name: 'bob' };

interface Probe {
  readonly released: string[];
  candidate(describe: string, priority: number, path?: PathKind): DialCandidate;
}

let nextPort = 1000; // each candidate its own address: the race dials an address once

function probe(): Probe {
  const released: string[] = [];
  return {
    released,
    candidate: (describe, priority, path = 'direct') => ({
      address: { host: '127.0.0.1', port: ++nextPort },
      describe,
      priority,
      path: () => path,
      release: () => released.push(describe),
    }),
  };
}

function source(name: string, items: readonly { after: number; c: DialCandidate }[], fail?: string): PathSource {
  return {
    name,
    async *find(_peer, signal) {
      for (const { after, c } of items) {
        await new Promise((r) => setTimeout(r, after));
        if (signal.aborted) return;
        yield c;
      }
      if (fail !== undefined) throw new ClawpeerError('UNREACHABLE', fail);
    },
  };
}

/** An attempt plan per candidate: succeed or fail after ms. */
function attempts(plan: Record<string, { ms: number; ok: boolean }>, started: Map<string, number>, t0: number) {
  return (c: DialCandidate, signal: AbortSignal): Promise<string> => {
    started.set(c.describe, Date.now() - t0);
    const p = plan[c.describe] ?? { ms: 10, ok: false };
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => (p.ok ? resolve(c.describe) : reject(new ClawpeerError('UNREACHABLE', `${c.describe} refused`))),
        p.ms,
      );
      signal.addEventListener('abort', () => {
        clearTimeout(timer);
        reject(new ClawpeerError('ABORTED', 'aborted'));
      });
    });
  };
}

t.test('a later group waits its head start while an earlier one is being dialled, and loses to it', async (t) => {
  const pr = probe();
  const started = new Map<string, number>();
  const t0 = Date.now();
  const discarded: string[] = [];
  const won = await raceDial({
    peer,
    sources: [
      source('direct', [{ after: 0, c: pr.candidate('direct A', 0) }]),
      source('rv', [{ after: 0, c: pr.candidate('relay R', 2, 'relayed') }]),
    ],
    attempt: attempts({ 'direct A': { ms: 300, ok: true }, 'relay R': { ms: 400, ok: true } }, started, t0),
    discard: async (v) => void discarded.push(v),
    headStartMs: 100,
  });
  t.equal(won.value, 'direct A');
  t.equal(won.candidate.path(), 'direct');
  t.ok(
    (started.get('relay R') ?? 0) >= 190,
    `the relay waited its two head starts (started at ${started.get('relay R')} ms)`,
  );
  t.same(pr.released, ['relay R'], 'the loser is released, the winner not');
});

t.test('when the earlier group has failed, the next one starts at once', async (t) => {
  const pr = probe();
  const started = new Map<string, number>();
  const t0 = Date.now();
  const won = await raceDial({
    peer,
    sources: [
      source('direct', [{ after: 0, c: pr.candidate('direct A', 0) }]),
      source('rv', [{ after: 0, c: pr.candidate('mapped M', 1, 'mapped') }]),
    ],
    attempt: attempts({ 'direct A': { ms: 20, ok: false }, 'mapped M': { ms: 10, ok: true } }, started, t0),
    discard: () => Promise.resolve(),
    headStartMs: 1000,
  });
  t.equal(won.value, 'mapped M');
  t.ok(
    (started.get('mapped M') ?? 9999) < 500,
    `started at ${started.get('mapped M')} ms, not after the 1000 ms head start`,
  );
  t.same(pr.released, ['direct A']);
});

t.test('a session that completes after the winner is closed and released', async (t) => {
  const pr = probe();
  const discarded: string[] = [];
  const won = await raceDial({
    peer,
    sources: [
      source('a', [
        { after: 0, c: pr.candidate('lan 1', 0, 'lan') },
        { after: 0, c: pr.candidate('lan 2', 0, 'lan') },
      ]),
    ],
    // lan 2 ignores the abort and completes anyway (a connect that was already done).
    attempt: (c) => new Promise<string>((r) => setTimeout(() => r(c.describe), c.describe === 'lan 1' ? 10 : 60)),
    discard: async (v) => void discarded.push(v),
  });
  t.equal(won.value, 'lan 1');
  await new Promise((r) => setTimeout(r, 120));
  t.same(discarded, ['lan 2']);
  t.same(pr.released, ['lan 2']);
});

t.test('everything failing is one error naming each path and each source that found nothing', async (t) => {
  const pr = probe();
  const err = await raceDial({
    peer,
    sources: [
      source('direct', [{ after: 0, c: pr.candidate('direct 192.0.2.1:7700', 0) }]),
      source('lan', [], 'no answer on the LAN'),
      source('rendezvous', []),
    ],
    attempt: attempts({}, new Map(), Date.now()),
    discard: () => Promise.resolve(),
  }).catch((e: unknown) => e);
  t.ok(err instanceof ClawpeerError);
  t.equal((err as ClawpeerError).code, 'UNREACHABLE');
  t.match((err as Error).message, /^cannot reach bob \(peer-id\): /);
  t.match((err as Error).message, /direct 192\.0\.2\.1:7700: direct 192\.0\.2\.1:7700 refused/);
  t.match((err as Error).message, /lan: no answer on the LAN/);
  t.match((err as Error).message, /rendezvous: found no address/);
  t.same(pr.released, ['direct 192.0.2.1:7700']);
});

t.test('one path tried and no other source: its own error, unchanged', async (t) => {
  const pr = probe();
  await t.rejects(
    raceDial({
      peer,
      sources: [source('direct', [{ after: 0, c: pr.candidate('direct A', 0) }])],
      attempt: attempts({}, new Map(), Date.now()),
      discard: () => Promise.resolve(),
    }),
    { code: 'UNREACHABLE', message: 'direct A refused' },
  );
});

t.test('a peer refusing us decides the error code over paths that merely failed', async (t) => {
  const pr = probe();
  const err = await raceDial({
    peer,
    sources: [
      source('direct', [
        { after: 0, c: pr.candidate('direct A', 0) },
        { after: 0, c: pr.candidate('lan B', 0, 'lan') },
      ]),
    ],
    attempt: (c) =>
      Promise.reject(
        c.describe === 'lan B'
          ? new ClawpeerError('AUTH_FAILED', 'not bob')
          : new ClawpeerError('TIMEOUT', 'timed out'),
      ),
    discard: () => Promise.resolve(),
  }).catch((e: unknown) => e);
  t.equal((err as ClawpeerError).code, 'AUTH_FAILED');
});

t.test('a whole later group starts at once when nothing earlier is left', async (t) => {
  const pr = probe();
  const started = new Map<string, number>();
  const t0 = Date.now();
  const won = await raceDial({
    peer,
    sources: [
      source('direct', [{ after: 0, c: pr.candidate('direct A', 0) }]),
      source('rv', [
        { after: 10, c: pr.candidate('punched P', 2, 'punched') },
        { after: 0, c: pr.candidate('relay R', 2, 'relayed') },
      ]),
    ],
    attempt: attempts(
      { 'direct A': { ms: 100, ok: false }, 'punched P': { ms: 400, ok: false }, 'relay R': { ms: 10, ok: true } },
      started,
      t0,
    ),
    discard: () => Promise.resolve(),
    headStartMs: 5000,
  });
  t.equal(won.value, 'relay R');
  const p = started.get('punched P') ?? 9999;
  const r = started.get('relay R') ?? 9999;
  t.ok(
    p >= 90 && r < p + 200,
    `both of group 2 started once A failed, together (P at ${p} ms, R at ${r} ms), not R after P failed`,
  );
});

t.test('an address offered by two sources is dialled once', async (t) => {
  const pr = probe();
  const started = new Map<string, number>();
  const same = (describe: string, path: PathKind): DialCandidate => ({
    ...pr.candidate(describe, 0, path),
    address: { host: '127.0.0.1', port: 7700 },
  });
  const won = await raceDial({
    peer,
    sources: [
      source('direct', [{ after: 0, c: same('direct 127.0.0.1:7700', 'direct') }]),
      source('lan', [{ after: 5, c: same('lan 127.0.0.1:7700', 'lan') }]),
    ],
    attempt: attempts(
      { 'direct 127.0.0.1:7700': { ms: 50, ok: true }, 'lan 127.0.0.1:7700': { ms: 1, ok: true } },
      started,
      Date.now(),
    ),
    discard: () => Promise.resolve(),
  });
  t.equal(won.value, 'direct 127.0.0.1:7700');
  t.same([...started.keys()], ['direct 127.0.0.1:7700'], 'the second offer was not dialled');
  t.same(pr.released, ['lan 127.0.0.1:7700'], 'and was released');
});
