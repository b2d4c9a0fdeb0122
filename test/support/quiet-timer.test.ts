import t from 'tap';
import { QuietTimer } from '../../src/support/quiet-timer.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

t.test('a burst of pokes runs the action once, after it goes quiet', async (t) => {
  let runs = 0;
  const q = new QuietTimer(40, 10_000, () => runs++);
  t.equal(q.poke(), true, 'the first poke starts a burst');
  t.equal(q.poke(), false);
  t.equal(q.poke(), false);
  await sleep(150);
  t.equal(runs, 1);
  t.equal(q.poke(), true, 'after the action, a poke starts a new burst');
  q.cancel();
  await sleep(100);
  t.equal(runs, 1, 'a cancelled burst does not run');
});

t.test('a steady stream of pokes still runs the action by the maximum delay', async (t) => {
  let runs = 0;
  const q = new QuietTimer(60, 200, () => runs++);
  const started = Date.now();
  while (runs === 0 && Date.now() - started < 2_000) {
    q.poke();
    await sleep(20); // never quiet for 60 ms
  }
  t.equal(runs, 1, `ran while the pokes went on (${Date.now() - started} ms)`);
  q.cancel();
});

t.test('pending says whether an action waits', async (t) => {
  let runs = 0;
  const q = new QuietTimer(30, 10_000, () => runs++);
  t.equal(q.pending, false);
  q.poke();
  t.equal(q.pending, true);
  await sleep(100);
  t.equal(runs, 1);
  t.equal(q.pending, false, 'not after the action ran');
  q.poke();
  q.cancel();
  t.equal(q.pending, false, 'not after a cancel');
});
