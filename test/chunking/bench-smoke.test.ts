// Smoke-runs bench/chunking.ts at tiny sizes so it cannot rot, and checks that the dedup
// measurement it bases DEFAULT_CHUNKING on says what it should (CDC survives edits, fixed blocks
// do not). Writes no result file.
import t from 'tap';
import { main } from '../../bench/chunking.js';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';

t.test('bench main({ smoke: true }) runs and reports sane numbers', async (t) => {
  const result = await main({ smoke: true });
  t.equal(result.smoke, true);
  t.same(result.defaults, DEFAULT_CHUNKING);
  t.ok(result.throughput.fastcdc.length > 0);
  for (const row of result.throughput.fastcdc) {
    t.ok(row.cpuMiBps > 0 && row.chunkCount > 0, row.label);
  }
  const edits = result.dedup.edits[0];
  if (edits === undefined) throw new Error('no edit experiment');
  const cdc = edits.rows.find((r) => r.label.startsWith('4K/16K/64K'));
  const fixed = edits.rows.find((r) => r.label.startsWith('fixed'));
  if (cdc === undefined || fixed === undefined) throw new Error('missing rows');
  t.ok(cdc.reusedFraction > 0.9, `CDC reuses ${cdc.reusedFraction} after ${edits.edits} small edits`);
  t.ok(fixed.reusedFraction < cdc.reusedFraction, `fixed blocks reuse less (${fixed.reusedFraction})`);
  for (const row of edits.rows) t.ok(row.reusedFraction >= 0 && row.reusedFraction <= 1, row.label);
});
