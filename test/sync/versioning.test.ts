// Versioning policies with fixed times: parse, format, and which versions each keeps.
import t from 'tap';
import { isClawpeerError } from '../../src/errors.js';
import { formatVersioning, parseVersioning, versionsToKeep } from '../../src/sync/versioning.js';

const NOW = Date.UTC(2026, 11, 3, 12, 0, 0);
const H = 3600_000;
const D = 24 * H;
const ago = (ms: number): { replacedAtMs: number } => ({ replacedAtMs: NOW - ms });

t.test('specs parse, print back the same, and a bad one is a USAGE error naming it', async (t) => {
  t.same(parseVersioning('keep-last:5'), { kind: 'keep-last', count: 5 });
  t.same(parseVersioning('trashcan:30'), { kind: 'trashcan', days: 30 });
  t.same(parseVersioning('staggered'), { kind: 'staggered', maxAgeDays: 365 });
  t.same(parseVersioning('staggered:90'), { kind: 'staggered', maxAgeDays: 90 });
  for (const spec of ['keep-last:5', 'trashcan:30', 'staggered', 'staggered:90'])
    t.equal(formatVersioning(parseVersioning(spec)), spec);
  for (const bad of [
    '',
    'keep-last',
    'keep-last:0',
    'keep-last:-1',
    'keep-last:2.5',
    'trashcan',
    'trashcan:x',
    'staggered:',
    'simple:3',
    'trashcan:99999',
  ]) {
    let err: unknown;
    try {
      parseVersioning(bad);
    } catch (e) {
      err = e;
    }
    t.ok(
      isClawpeerError(err) && err.code === 'USAGE' && err.message.includes(JSON.stringify(bad)),
      `${JSON.stringify(bad)} refused: ${String(err)}`,
    );
  }
});

t.test('keep-last:N keeps the N - 1 most recently replaced (the current version is the Nth)', async (t) => {
  const versions = [ago(5 * H), ago(1 * H), ago(3 * H), ago(2 * H)];
  t.same(versionsToKeep({ kind: 'keep-last', count: 3 }, versions, NOW), [false, true, false, true]);
  t.same(versionsToKeep({ kind: 'keep-last', count: 1 }, versions, NOW), [false, false, false, false]);
  t.same(versionsToKeep({ kind: 'keep-last', count: 10 }, versions, NOW), [true, true, true, true]);
});

t.test('trashcan:DAYS keeps what was replaced less than DAYS ago, whatever its number', async (t) => {
  const versions = [ago(31 * D), ago(30 * D), ago(30 * D - 1), ago(1 * H), ago(0), { replacedAtMs: NOW + 10 * 60_000 }];
  t.same(
    versionsToKeep({ kind: 'trashcan', days: 30 }, versions, NOW),
    [false, false, true, true, true, true],
    'a future time (a skewed clock) counts as now',
  );
  t.same(versionsToKeep({ kind: 'trashcan', days: 1 }, versions, NOW), [false, false, false, true, true, true]);
});

t.test(
  'staggered keeps one per hour for a day, one per day for a month, one per week to the maximum age',
  async (t) => {
    // Every 20 minutes for the last 3 hours: one per hour slot (the newest of each).
    const recent = [
      ago(10 * 60_000),
      ago(30 * 60_000),
      ago(50 * 60_000),
      ago(70 * 60_000),
      ago(110 * 60_000),
      ago(130 * 60_000),
    ];
    t.same(versionsToKeep({ kind: 'staggered', maxAgeDays: 365 }, recent, NOW), [
      true,
      false,
      false,
      true,
      false,
      true,
    ]);
    // Days 2..5, twice a day: one per day.
    const days = [ago(2 * D), ago(2 * D + 6 * H), ago(3 * D), ago(3 * D + 6 * H), ago(4 * D + 1)];
    t.same(versionsToKeep({ kind: 'staggered', maxAgeDays: 365 }, days, NOW), [true, false, true, false, true]);
    // Past 30 days: one per week; past the maximum age: none.
    const old = [ago(40 * D), ago(41 * D), ago(50 * D), ago(366 * D)];
    const keep = versionsToKeep({ kind: 'staggered', maxAgeDays: 365 }, old, NOW);
    t.equal(keep.filter((k, i) => k && i < 2).length, 1, 'days 40 and 41: at most one of a week');
    t.same(keep.slice(2), [true, false], 'day 50 kept, day 366 dropped');
    t.same(
      versionsToKeep({ kind: 'staggered', maxAgeDays: 45 }, old, NOW).slice(2),
      [false, false],
      'staggered:45 drops day 50',
    );
  },
);
