#!/usr/bin/env node
// Runs node-tap over the compiled tests, streams its TAP output, and ends with the plain line
// "N passed, N failed, N skipped" that CI reads (tap prints none). Exit code is tap's.
// A test case is a subtest directly inside a test file; a file that fails without any failing
// test case (it crashed, or timed out) counts as one failure.
// Temp files: the tests (and the CLIs they start) get a TMPDIR of their own, removed at the end
// (kept when CLAWPEER_KEEP_TEST_TMP=1). Tests killed mid-way, listeners killed with SIGKILL and
// fault trials leave directories behind; in the shared /tmp they piled up by the thousand.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

// Default: every compiled test file except the slow suites under test/slow/.
function defaultTestFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'slow' ? [] : defaultTestFiles(p);
    return e.name.endsWith('.test.js') ? [p] : [];
  }).sort();
}
const args = process.argv.slice(2);
const files = args.length > 0 ? args : defaultTestFiles('dist/test');
const runTmp = mkdtempSync(join(tmpdir(), 'clawpeer-test-run-'));
const tap = spawn('node_modules/.bin/tap', [
  '--reporter=tap', '--disable-coverage', '--timeout=300', '--jobs=2',
  ...files,
], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, TMPDIR: runTmp } });

let passed = 0, failed = 0, skipped = 0, fileFailures = 0;
const rl = createInterface({ input: tap.stdout });
rl.on('line', (line) => {
  process.stdout.write(line + '\n');
  const inner = /^ {4}(not )?ok \d+\b/.exec(line);
  if (inner !== null) {
    if (/# (SKIP|TODO)\b/i.test(line)) skipped++;
    else if (inner[1] !== undefined) { failed++; fileFailures++; }
    else passed++;
    return;
  }
  const top = /^(not )?ok \d+ - /.exec(line);
  if (top !== null) {
    if (top[1] !== undefined && fileFailures === 0) failed++;
    fileFailures = 0;
  }
});
tap.on('close', (code, signal) => {
  rl.close();
  const exit = code ?? (signal ? 1 : 0);
  if (exit !== 0 && failed === 0) failed = 1; // tap failed for a reason no test case shows
  process.stdout.write(`${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  if (process.env.CLAWPEER_KEEP_TEST_TMP === '1') process.stdout.write(`# temp files kept in ${runTmp}\n`);
  else rmSync(runTmp, { recursive: true, force: true, maxRetries: 3 });
  process.exit(exit);
});
