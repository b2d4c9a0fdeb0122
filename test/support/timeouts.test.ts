import t from 'tap';
import { settledWithin, withTimeout } from '../../src/support/timeouts.js';

const pendingTimers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

t.test('settledWithin says how a promise settled, or undefined when it did not in time', async (t) => {
  t.same(await settledWithin(Promise.resolve(7), 1000), { status: 'fulfilled', value: 7 });
  const boom = new Error('boom');
  t.same(await settledWithin(Promise.reject(boom), 1000), { status: 'rejected', reason: boom });
  t.equal(await settledWithin(new Promise(() => undefined), 20), undefined, 'a promise that never settles');
});

t.test('no timer outlives the wait (a sleep raced against it kept the process alive)', async (t) => {
  const before = pendingTimers();
  await settledWithin(Promise.resolve(), 60_000);
  await withTimeout(Promise.resolve(), 60_000, 'nothing');
  t.equal(pendingTimers(), before);
});
