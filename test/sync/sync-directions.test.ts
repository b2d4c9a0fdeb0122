// What a sync may move: the directions both the mode asked for and the folder's mode allow.
import t from 'tap';
import { modeWithin } from '../../src/sync/sync-directions.js';

t.test('a mode within a folder mode', async (t) => {
  const cases: [string, string, string | undefined][] = [
    ['two-way', 'two-way', 'two-way'],
    ['two-way', 'receive-only', 'receive-only'],
    ['two-way', 'send-only', 'send-only'],
    ['receive-only', 'two-way', 'receive-only'],
    ['receive-only', 'receive-only', 'receive-only'],
    ['receive-only', 'send-only', undefined],
    ['send-only', 'two-way', 'send-only'],
    ['send-only', 'send-only', 'send-only'],
    ['send-only', 'receive-only', undefined],
  ];
  for (const [asked, allowed, want] of cases)
    t.equal(
      modeWithin(asked as 'two-way', allowed as 'two-way'),
      want,
      `${asked} in a ${allowed} folder: ${String(want)}`,
    );
});
