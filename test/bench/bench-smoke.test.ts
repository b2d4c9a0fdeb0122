// Benchmarks are type-checked and smoke-run in CI so they cannot rot: every bench module next to
// the compiled tests (dist/bench/*.js) runs main({ smoke: true }) under a timeout, must resolve,
// must report its machine conditions, and must not write its result file.
// Benches that have their own smoke test are not run twice: they are found by scanning the
// compiled tests for an import of ../../bench/<name>.js and listed as skipped.
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { findBenchModules } from '../../bench/run-all.js';

/** Per bench, ms: the slowest smoke run (transport: QUIC + TLS handshakes, 4 MiB) takes ~1-2 s here. */
// Generous: the transfer and sync smokes spawn real CLI processes, slow on a loaded 2-core machine.
const SMOKE_TIMEOUT_MS = 120_000;
const BENCH_DIR = new URL('../../bench/', import.meta.url);
const TEST_ROOT = new URL('../', import.meta.url);
const SELF = fileURLToPath(import.meta.url);
const RESULTS_DIR = join(fileURLToPath(new URL('../../../bench/results/', import.meta.url)));

/** Names of benches some other compiled test imports directly (it smoke-runs them itself). */
async function benchesWithOwnTests(dir: string): Promise<Map<string, string>> {
  const owners = new Map<string, string>();
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.test.js')) continue;
    const file = join(entry.parentPath, entry.name);
    if (file === SELF) continue;
    const text = await readFile(file, 'utf8');
    for (const m of text.matchAll(/from\s+['"]\.\.\/\.\.\/bench\/([a-z0-9-]+)\.js['"]/g)) {
      if (m[1] !== undefined && m[1] !== 'run-all' && m[1] !== 'common') owners.set(m[1], file);
    }
  }
  return owners;
}

/** The machine conditions, wherever the bench keeps them: `conditions` and/or `machine`. */
function conditionsOf(result: unknown): { cpu: unknown; cores: unknown; node: unknown } | undefined {
  if (typeof result !== 'object' || result === null) return undefined;
  const r = result as Record<string, unknown>;
  const merged: Record<string, unknown> = {};
  for (const key of ['machine', 'conditions']) {
    const v = r[key];
    if (typeof v === 'object' && v !== null) Object.assign(merged, v);
    else if (typeof v === 'string') merged['machine'] = v;
  }
  if (Object.keys(merged).length === 0) return undefined;
  return {
    cpu: merged['cpuModel'] ?? merged['cpu'] ?? merged['machine'],
    cores: merged['cores'],
    node: merged['node'],
  };
}

async function mtimeOf(file: string): Promise<number | undefined> {
  try {
    return (await stat(file)).mtimeMs;
  } catch {
    return undefined;
  }
}

const benches = await findBenchModules(BENCH_DIR);
const ownTests = await benchesWithOwnTests(fileURLToPath(TEST_ROOT));

t.test('bench discovery finds the micro-benchmarks and not the helpers', async (t) => {
  const names = benches.map((b) => b.name);
  for (const expected of ['aead', 'frame-codec']) t.ok(names.includes(expected), `${expected} is discovered`);
  t.notOk(names.includes('run-all'), 'the runner is not a bench');
  t.notOk(names.includes('common'), 'the helpers are not a bench');
});

for (const bench of benches) {
  const owner = ownTests.get(bench.name);
  if (owner !== undefined) {
    t.test(
      `${bench.name}: smoke-run`,
      { skip: `has its own smoke test: ${owner.slice(owner.lastIndexOf('/test/') + 1)}` },
      async () => {},
    );
    continue;
  }
  t.test(
    `${bench.name}: main({ smoke: true }) resolves with its conditions and writes nothing`,
    { timeout: SMOKE_TIMEOUT_MS },
    async (t) => {
      const resultFile = join(RESULTS_DIR, `${bench.name}.json`);
      const before = await mtimeOf(resultFile);
      const result = await bench.main({ smoke: true });
      if (result !== undefined) {
        const c = conditionsOf(result);
        if (c === undefined) throw new Error(`${bench.name} returned a result without conditions or machine`);
        t.ok(typeof c.cpu === 'string' && c.cpu.length > 0, 'cpu model');
        t.ok(typeof c.cores === 'number' && c.cores > 0, 'core count');
        t.equal(c.node, process.version, 'node version');
      }
      t.equal(await mtimeOf(resultFile), before, `smoke mode leaves bench/results/${bench.name}.json alone`);
    },
  );
}

// The two micro-benchmarks of this suite: their smoke results must have the shape the real run
// writes (every suite, both baselines), so a refactor cannot silently drop a measurement.
t.test('aead smoke result covers both suites against raw node:crypto, and libsodium for chacha20', async (t) => {
  const { main } = await import('../../bench/aead.js');
  const r = await main({ smoke: true });
  t.same(
    r.rows.map((row) => row.suite),
    ['aes-256-gcm', 'chacha20-poly1305'],
  );
  for (const row of r.rows) {
    t.ok((row.cpuMiBps.ours ?? 0) > 0 && (row.cpuMiBps.raw ?? 0) > 0, `${row.suite}: rates measured`);
    t.ok(row.oursToRaw > 0, `${row.suite}: ratio to raw`);
    t.equal(
      row.cpuMiBps.sodium !== undefined,
      row.suite === 'chacha20-poly1305',
      `${row.suite}: libsodium only where it has the suite`,
    );
  }
});

t.test('frame-codec smoke result has both feeds and Hello/Ping encode/decode', async (t) => {
  const { main } = await import('../../bench/frame-codec.js');
  const r = await main({ smoke: true });
  t.same(
    r.delimit.map((row) => row.feed),
    ['whole frames', '64 KiB pieces'],
  );
  t.same(
    r.control.map((row) => `${row.message} ${row.op}`),
    ['hello encode', 'hello decode', 'ping encode', 'ping decode'],
  );
  for (const row of r.delimit) t.ok(row.oursMiBps > 0 && row.baselineMiBps > 0, row.feed);
  for (const row of r.control) t.ok(row.oursOpsPerSec > 0 && row.frameBytes > 5, `${row.message} ${row.op}`);
});
