// bin/heap-growth.cjs: full GCs paced by the data moved. The rule's numbers, and its effect on a
// real listener receiving a push (counted by a GC observer loaded into that process).
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { initNode, jsonLines, runCli, startListener } from '../e2e/cli-harness.js';

const require = createRequire(import.meta.url);
const { growingPercentFor } = require('../../../bin/heap-growth.cjs') as {
  growingPercentFor: (usedBytes: number) => number;
};
const MiB = 1024 * 1024;

t.test('a small heap gets ~96 MiB of headroom, a large one V8 own factor', async (t) => {
  t.equal(growingPercentFor(11 * MiB), 873, '11 MiB live: the next limit ~96 MiB higher (9.73x)');
  t.equal(growingPercentFor(48 * MiB), 200);
  t.equal(growingPercentFor(2 * MiB), 1000, 'capped at 11x');
  t.equal(growingPercentFor(0), 1000);
  t.equal(growingPercentFor(90 * MiB), 107);
  t.equal(growingPercentFor(96 * MiB), 0, 'from 96 MiB on: V8 decides');
  t.equal(growingPercentFor(2048 * MiB), 0);
});

// Counts the full (mark-compact) GCs of the process it is loaded into; written at exit.
const GC_COUNTER = `
const { PerformanceObserver, constants } = require('node:perf_hooks');
const { writeFileSync } = require('node:fs');
let major = 0;
const count = (entries) => { for (const e of entries) if (e.detail && e.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) major++; };
const observer = new PerformanceObserver((list) => count(list.getEntries()));
observer.observe({ entryTypes: ['gc'] });
process.on('exit', () => { count(observer.takeRecords()); writeFileSync(process.env.GC_COUNT_FILE, String(major)); });
`;

t.test('a listener receiving 256 MiB runs a fraction of the full GCs it ran without the pacing', async (t) => {
  const work = await mkdtemp(path.join(tmpdir(), 'clawpeer-heap-'));
  t.teardown(() => rm(work, { recursive: true, force: true }));
  const counter = path.join(work, 'gc-counter.cjs');
  await writeFile(counter, GC_COUNTER);
  const file = path.join(work, 'big.bin');
  const block = 8 * MiB;
  const parts: Buffer[] = [];
  for (let i = 0; i < 256 * MiB; i += block) parts.push(randomBytes(block));
  await writeFile(file, Buffer.concat(parts));
  parts.length = 0;
  const a = await initNode('heap-a');
  const b = await initNode('heap-b');
  await runCli(['--home', a.home, 'pair', 'add', b.id, '--name', 'bob']);

  const fullGcs = async (pacing: boolean): Promise<number> => {
    const countFile = path.join(work, `gcs-${String(pacing)}`);
    const inbox = path.join(work, `inbox-${String(pacing)}`);
    const listener = await startListener(a.home, ['--share', `inbox=${inbox}`], {
      env: { NODE_OPTIONS: `--require ${counter}`, GC_COUNT_FILE: countFile, CLAWPEER_HEAP_GROWTH: pacing ? '1' : '0' },
    });
    try {
      await runCli(['--home', b.home, 'pair', 'add', a.id, '--name', 'alice', '--addr', `127.0.0.1:${listener.port}`]);
      const r = await runCli(['--home', b.home, 'push', file, 'alice', '--json'], { timeoutMs: 120_000 });
      t.equal(r.code, 0, `push with pacing ${pacing ? 'on' : 'off'}: ${r.stderr}`);
      t.equal(jsonLines(r.stdout).at(-1)?.['bytes'], 256 * MiB);
    } finally {
      t.equal(await listener.stop('SIGINT'), 0, 'the listener shut down cleanly');
    }
    return Number(await readFile(countFile, 'utf8'));
  };
  const without = await fullGcs(false);
  const withPacing = await fullGcs(true);
  t.comment(`listener full GCs for a 256 MiB push: ${without} without pacing, ${withPacing} with`);
  t.ok(without >= 8, `without pacing the listener ran ${without} full GCs (the cost this removes)`);
  t.ok(withPacing * 3 <= without, `with pacing it ran ${withPacing}`);
});
