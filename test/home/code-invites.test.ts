// Short-code invites on disk: single use (one claim), expiry, one invite per nameplate, outcomes.
import t from 'tap';
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { CodeInviteStore, MAX_OPEN_CODE_INVITES } from '../../src/home/code-invites.js';
import { parseCode } from '../../src/pairing/code-words.js';
import { pickNameplate } from '../../src/pairing/nameplate-directory.js';

async function store(): Promise<CodeInviteStore> {
  const home = await mkdtemp(join(tmpdir(), 'clawpeer-code-invites-'));
  return new CodeInviteStore(join(home, 'invites'));
}

t.test('single use: the first claim gets the code, a second gets nothing', async (t) => {
  const s = await store();
  await s.create({ code: parseCode('7-acid-zebra'), name: 'dave', ttlMs: 60_000 });
  t.same(await s.openNameplates(), ['7']);
  t.ok(await s.hasOpen());
  const claimed = await s.claim('7');
  t.match(claimed, { code: { text: '7-acid-zebra', nameplate: '7' }, name: 'dave' });
  t.equal(await s.claim('7'), undefined, 'claimed once only');
  t.notOk(await s.hasOpen(), 'a claimed invite is not open');
  t.same(await s.status('7'), { state: 'claimed' });
  await t.rejects(
    s.create({ code: parseCode('7-acid-acorn'), ttlMs: 60_000 }),
    { code: 'FILE_EXISTS' },
    'its nameplate stays taken until it ends',
  );
  await s.settle('7', { outcome: 'burnt', reason: 'a wrong code was tried' });
  t.match(await s.status('7'), { state: 'settled', outcome: 'burnt', reason: 'a wrong code was tried' });
});

t.test('expiry: an expired invite cannot be claimed and is removed', async (t) => {
  const s = await store();
  const now = Date.now();
  await s.create({ code: parseCode('12-acid-zebra'), ttlMs: 10 * 60_000, nowMs: now });
  t.equal(await s.claim('12', now + 10 * 60_000 + 1), undefined, 'expired after its ttl');
  t.notOk(await s.hasOpen(now));
  t.same(await s.status('12', now), { state: 'gone' });
});

t.test('outcomes: paired is reported with the verification string; cancel withdraws an open invite', async (t) => {
  const s = await store();
  await s.create({ code: parseCode('3-acid-zebra'), ttlMs: 60_000 });
  t.ok(await s.claim('3'));
  await s.settle('3', { outcome: 'paired', id: 'x', name: 'dave', verify: 'abcd-ef01-2345-6789' });
  t.same(await s.status('3'), {
    state: 'settled',
    outcome: 'paired',
    id: 'x',
    name: 'dave',
    verify: 'abcd-ef01-2345-6789',
  });
  await s.create({ code: parseCode('4-acid-zebra'), ttlMs: 60_000 });
  t.ok(await s.cancel('4'));
  t.equal(await s.claim('4'), undefined);
});

t.test(`at most ${MAX_OPEN_CODE_INVITES} open at once`, async (t) => {
  const s = await store();
  for (let i = 1; i <= MAX_OPEN_CODE_INVITES; i++)
    await s.create({ code: parseCode(`${i}-acid-zebra`), ttlMs: 60_000 });
  await t.rejects(s.create({ code: parseCode('99-acid-zebra'), ttlMs: 60_000 }), { code: 'USAGE' });
});

t.test('pickNameplate: small numbers first, never a taken one, larger ones once half are taken', async (t) => {
  let seed = 1;
  const random = (n: number): Uint8Array =>
    Uint8Array.from({ length: n }, () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) & 0xff);
  const taken = new Set([1, 2, 3]);
  for (let i = 0; i < 50; i++) {
    const n = pickNameplate(taken, random);
    t.ok(n >= 1 && n <= 99 && !taken.has(n));
  }
  const half = new Set(Array.from({ length: 60 }, (_, i) => i + 1));
  const n = pickNameplate(half, random);
  t.ok(n >= 100 && n <= 9_999, `grows past 99 when most are taken: ${n}`);
});

t.test('a look that races a claim or a settle never calls a live invite gone', async (t) => {
  // The listener and the waiting `pair invite` are separate processes: two stores on one
  // directory. Each round, the waiter looks again and again while the listener claims, then
  // settles; a look between its directory listing and its read of the listed file used to
  // miss both files and say "gone" (the waiting inviter then said "expired unused").
  const listener = await store();
  const waiter = new CodeInviteStore(listener.dir);
  const seen = new Set<string>();
  for (let round = 1; round <= 60; round++) {
    const nameplate = String(round);
    await listener.create({ code: parseCode(`${nameplate}-acid-zebra`), ttlMs: 60_000 });
    let done = false;
    const looking = (async () => {
      while (!done) {
        const st = await waiter.status(nameplate);
        seen.add(st.state);
        if (st.state === 'gone') return 'gone';
        if (st.state === 'settled') return 'settled';
      }
      return 'settled';
    })();
    await listener.claim(nameplate);
    await listener.settle(nameplate, { outcome: 'burnt', reason: 'a wrong code was tried' });
    done = true;
    if ((await looking) === 'gone') {
      t.fail(`round ${round}: a look said gone while the invite was claimed and settled`);
      return;
    }
  }
  t.pass('no look said gone in 60 rounds');
  t.ok(seen.has('settled'), `the looks saw ${[...seen].join(', ')}`);
});
