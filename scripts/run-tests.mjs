#!/usr/bin/env node
// Runs the compiled tap test files, two at a time, each as a plain `node FILE` (a tap file is a
// program that prints TAP), streams their TAP output file by file, and ends with the plain line
// "N passed, N failed, N skipped" that CI reads. Exit code: 1 if anything failed.
// A test case is a subtest directly inside a test file; a file that fails without any failing
// test case (it crashed, or timed out) counts as one failure.
//
// Why not tap's runner: it starts every test file with three module loaders (TypeScript, mocks,
// and @tapjs/processinfo, whose hooks run on a loader thread), and processinfo puts its loader in
// NODE_OPTIONS of every process a test spawns. Measured here: ~2.9 CPU-s more per test file than
// `node FILE` (0.5 CPU-s), and ~0.9 CPU-s more per CLI a test starts (0.4 CPU-s) — over half the
// suite's CPU on this 2-core machine. The tests are compiled JS and use no mocks or coverage.
// `npx tap dist/test/...` still runs any file under tap's runner.
//
// Temp files: the tests (and the CLIs they start) get a TMPDIR of their own, removed at the end
// (kept when CLAWPEER_KEEP_TEST_TMP=1). Tests killed mid-way, listeners killed with SIGKILL and
// fault trials leave directories behind; in the shared /tmp they piled up by the thousand.
//
// A file past its deadline (300 s; CLAWPEER_TEST_FILE_TIMEOUT_S) gets SIGTERM first: every file
// runs with test-hang-report.cjs, which prints what it was still waiting on; then its process
// group is killed. A hang used to leave only "TAP version 14" behind.
//
// --lint: eslint (npm run lint's slowest part, ~60 CPU-s, on one thread), then Prettier's check
// of the formatting, run beside the test files instead of before them, on the core the test
// files leave idle while they wait; each verdict is reported as one more file, so the run fails
// on a violation. `npm test` no longer passes it: on 2 cores the suite is CPU-bound, and the
// linters' ~120 CPU-s took it to its 10-minute bound; .ci/run runs `npm run lint` on its own.
//
// Order: longest first (LPT), by the wall times in scripts/test-timings.json (a file not listed
// counts as the median), so the run does not end with one long file running alone. With
// CLAWPEER_TEST_TIMINGS=1 the run ends with the 20 slowest files, and the e2e harness logs each
// CLI it starts with its time; CLAWPEER_TEST_TIMINGS_OUT=FILE writes every file's wall time in
// that file's format (refresh the committed one from a full run on a quiet machine).
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Files run at once: the suite is CPU-bound and this machine has 2 cores. */
const JOBS = Number(process.env.CLAWPEER_TEST_JOBS ?? 2);
/** A file's own deadline (tap's root test times out at this and reports what was pending). */
const FILE_TIMEOUT_S = Number(process.env.CLAWPEER_TEST_FILE_TIMEOUT_S ?? 300);
/** Past its deadline, a file that has not exited is killed after this grace. */
const KILL_GRACE_MS = 10_000;
/** How long a stopped file gets to say what it waited on before its process group is killed. */
const HANG_REPORT_GRACE_MS = 2_000;
const HANG_REPORT = fileURLToPath(new URL('./test-hang-report.cjs', import.meta.url));
/** Seconds each file took in a full run, keyed by its path below dist/test/. */
const TIMINGS_FILE = fileURLToPath(new URL('./test-timings.json', import.meta.url));
const SHOW_TIMINGS = process.env.CLAWPEER_TEST_TIMINGS === '1';

/** Left out of the default run: the NAT matrix takes many minutes (`npm run test:lab` runs it). */
const NOT_BY_DEFAULT = new Set(['nat-matrix.test.js']);
/**
 * Directories left out of the default run: the slow suites, the benchmarks' smoke runs
 * (test/bench/, ~75 CPU-s: `npm run test:bench`) and the long end-to-end files (test/long/,
 * ~150 s of files: `npm run test:long`), which .ci/run runs beside `npm test`; on 2 cores the
 * suite is CPU-bound and with them `npm test` reached its 10-minute bound.
 */
const NOT_BY_DEFAULT_DIRS = new Set(['slow', 'bench', 'long']);

// Default: every compiled test file except those under NOT_BY_DEFAULT_DIRS and NOT_BY_DEFAULT.
function defaultTestFiles(dir) {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => {
      const p = join(dir, e.name);
      if (e.isDirectory()) return NOT_BY_DEFAULT_DIRS.has(e.name) ? [] : defaultTestFiles(p);
      return e.name.endsWith('.test.js') && !NOT_BY_DEFAULT.has(e.name) ? [p] : [];
    })
    .sort();
}

/** Files named on the command line; a glob (the test:slow scripts pass one) is expanded here. */
function namedFiles(args) {
  return args.flatMap((arg) => {
    if (!/[*?]/.test(arg)) return [arg];
    const [root] = arg.split(/\/[^/]*[*?]/);
    const pattern = new RegExp(
      `^${arg
        .split('**/')
        .map((part) =>
          part
            .replace(/[.+^${}()|[\]\\]/g, '\\$&')
            .replace(/\*/g, '[^/]*')
            .replace(/\?/g, '[^/]'),
        )
        .join('(?:.*/)?')}$`,
    );
    return readdirSync(root, { recursive: true })
      .map((p) => join(root, String(p)))
      .filter((p) => pattern.test(p))
      .sort();
  });
}

const timingKey = (file) => file.replace(/^(\.\/)?dist\/test\//, '');

/** `files` longest first by their recorded times (a file without one counts as the median). */
function longestFirst(files) {
  let recorded = {};
  try {
    recorded = JSON.parse(readFileSync(TIMINGS_FILE, 'utf8')).seconds ?? {};
  } catch {
    // no timings: the files keep their order
  }
  const known = Object.values(recorded)
    .filter((v) => typeof v === 'number')
    .sort((x, y) => x - y);
  const median = known.length > 0 ? known[Math.floor(known.length / 2)] : 0;
  const estimate = (file) => recorded[timingKey(file)] ?? median;
  return [...files].sort((x, y) => estimate(y) - estimate(x) || (x < y ? -1 : 1));
}

/**
 * CPU seconds (user + system) of this runner's reaped children and all they reaped in turn
 * (Linux /proc; 0 elsewhere). Read as each file exits, the growth is that file's CPU with every
 * CLI it started: a figure the load of other work on the machine inflates far less than wall time.
 */
function childrenCpuSeconds() {
  try {
    const fields = readFileSync('/proc/self/stat', 'utf8')
      .replace(/^.*\) /, '')
      .split(' ');
    return (Number(fields[13]) + Number(fields[14])) / 100; // cutime, cstime in clock ticks (USER_HZ 100)
  } catch {
    return 0;
  }
}
let cpuSeen = 0;

/** Counts a file's own test cases: its top-level TAP result lines. */
function countCases(output) {
  const counts = { passed: 0, failed: 0, skipped: 0 };
  for (const line of output.split('\n')) {
    const result = /^(not )?ok \d+\b/.exec(line);
    if (result === null) continue;
    if (/# (SKIP|TODO)\b/i.test(line)) counts.skipped++;
    else if (result[1] !== undefined) counts.failed++;
    else counts.passed++;
  }
  return counts;
}

/** Lines of a failure's YAML diagnostics kept in the digest (message, where, what was found). */
const DIGEST_LINES_PER_FAILURE = 14;
/**
 * What failed in one file's output, for the digest printed before the summary line: every
 * `not ok` line at any depth with the start of its diagnostics. CI keeps only the tail of a long
 * run's output, and there the streamed TAP had long scrolled away.
 */
function failureDigest(output) {
  const lines = output.split('\n');
  const digest = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^\s*not ok \d+\b/.test(lines[i]) || /# (SKIP|TODO)\b/i.test(lines[i])) continue;
    digest.push(lines[i]);
    for (let j = i + 1; j < lines.length && j <= i + DIGEST_LINES_PER_FAILURE; j++) {
      if (/^\s*(not )?ok \d+\b|^\s*# Subtest:/.test(lines[j])) break;
      digest.push(lines[j]);
    }
  }
  return digest;
}

/**
 * Test files running now, each the leader of its own process group, so stopping one stops the
 * CLIs and listeners it started too: on a timeout, and when this runner is stopped (Ctrl-C, or
 * CI giving up).
 */
const running = new Set();
const killGroup = (child) => {
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // the group is gone already
  }
};
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    for (const child of running) killGroup(child);
    process.exit(130);
  });
}

/** Runs one test file; resolves with its TAP output, exit status and time. */
function runFile(file, env) {
  const started = process.hrtime.bigint();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--enable-source-maps', '--require', HANG_REPORT, file], {
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
      detached: true,
    });
    running.add(child);
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (output += d));
    let timedOut = false;
    const killer = setTimeout(
      () => {
        timedOut = true;
        // First ask the file what it waits on (test-hang-report.cjs), then stop its whole group.
        try {
          child.kill('SIGTERM');
        } catch {
          // gone already
        }
        setTimeout(() => killGroup(child), HANG_REPORT_GRACE_MS).unref();
      },
      FILE_TIMEOUT_S * 1000 + KILL_GRACE_MS,
    );
    let cpu = 0;
    child.on('exit', () => {
      const now = childrenCpuSeconds();
      cpu = now - cpuSeen;
      cpuSeen = now;
    });
    child.on('close', (code, signal) => {
      running.delete(child);
      killGroup(child); // what the file left running (a listener a failed test never stopped)
      clearTimeout(killer);
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      resolve({
        output,
        ok: code === 0 && !timedOut,
        why: timedOut ? 'timed out' : code !== 0 ? `exit ${code ?? signal}` : '',
        ms,
        cpu,
      });
    });
  });
}

const withLint = process.argv.includes('--lint');
/** A lint tool from node_modules over the sources, as `npm run lint` runs it (its output kept for the report). */
function runLinter(script, toolArgs) {
  return new Promise((resolve) => {
    const started = process.hrtime.bigint();
    const child = spawn(
      process.execPath,
      [fileURLToPath(new URL(`../node_modules/${script}`, import.meta.url)), ...toolArgs],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('close', (code, signal) => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      resolve({ output, ok: code === 0, why: code === 0 ? '' : `exit ${code ?? signal}`, ms, cpu: 0 });
    });
  });
}
/** The linters `--lint` runs, one after the other: name, node_modules script, arguments, what a pass says. */
const LINTERS = [
  ['eslint src test bench', 'eslint/bin/eslint.js', ['src', 'test', 'bench'], 'no lint violations'],
  [
    'prettier --check src test bench scripts',
    'prettier/bin/prettier.cjs',
    ['--check', '--log-level', 'warn', 'src', 'test', 'bench', 'scripts'],
    'formatted as .prettierrc says (npm run format fixes it)',
  ],
];
async function runLinters() {
  const results = [];
  for (const [name, script, toolArgs, passes] of LINTERS)
    results.push({ name, passes, ...(await runLinter(script, toolArgs)) });
  return results;
}

const args = process.argv.slice(2).filter((a) => a !== '--lint');
const files = longestFirst(args.length > 0 ? namedFiles(args) : defaultTestFiles('dist/test'));
const runTmp = mkdtempSync(join(tmpdir(), 'clawpeer-test-run-'));
const env = { ...process.env, TMPDIR: runTmp, TAP_TIMEOUT: String(FILE_TIMEOUT_S) };
delete env.NODE_OPTIONS; // a test's CLIs must start as a user's do

const totals = { passed: 0, failed: 0, skipped: 0 };
let reported = 0;
/** Each failed file (or linter) with what failed in it, printed again just before the summary. */
const failures = [];
/** Wall and CPU seconds of each file, in the order they finished. */
const took = new Map();
process.stdout.write(`TAP version 14\n`);
const report = (file, result) => {
  took.set(file, { wall: result.ms / 1000, cpu: result.cpu });
  const counts = countCases(result.output);
  totals.passed += counts.passed;
  totals.skipped += counts.skipped;
  totals.failed += counts.failed + (!result.ok && counts.failed === 0 ? 1 : 0);
  const indented = result.output
    .replace(/\n$/, '')
    .split('\n')
    .map((l) => (l.length > 0 ? `    ${l}` : l))
    .join('\n');
  const why = result.ok ? '' : ` # ${result.why}`;
  if (!result.ok || counts.failed > 0)
    failures.push({ file, why: result.why, digest: failureDigest(result.output).slice(0, 200) });
  process.stdout.write(
    `# Subtest: ${file}\n${indented}\n${result.ok ? 'ok' : 'not ok'} ${++reported} - ${file}${why} # time=${result.ms.toFixed(3)}ms\n\n`,
  );
};

let next = 0;
const worker = async () => {
  while (next < files.length) {
    const file = files[next++];
    report(file, await runFile(file, env));
  }
};
const startedAll = process.hrtime.bigint();
const lintRun = withLint ? runLinters() : undefined;
await Promise.all(Array.from({ length: Math.max(1, Math.min(JOBS, files.length)) }, worker));
// Their output is the tool's report, not TAP: one case each, named.
for (const r of (await lintRun) ?? []) {
  report(r.name, {
    ...r,
    output: `${
      r.ok
        ? `ok 1 - ${r.passes}`
        : `not ok 1 - violations\n${r.output
            .split('\n')
            .map((l) => `# ${l}`)
            .join('\n')}`
    }\n1..1\n`,
  });
}
process.stdout.write(`1..${reported}\n# time=${(Number(process.hrtime.bigint() - startedAll) / 1e6).toFixed(3)}ms\n`);
const byWall = [...took].sort((x, y) => y[1].wall - x[1].wall);
if (SHOW_TIMINGS) {
  const wallAll = Number(process.hrtime.bigint() - startedAll) / 1e9;
  const cpuAll = [...took.values()].reduce((sum, t) => sum + t.cpu, 0);
  process.stdout.write(
    `# slowest files (${JOBS} at a time; wall s, CPU s of the file and its CLIs):\n${byWall
      .slice(0, 20)
      .map(([f, t]) => `#   ${t.wall.toFixed(1).padStart(6)} ${t.cpu.toFixed(1).padStart(6)}  ${f}`)
      .join('\n')}\n`,
  );
  process.stdout.write(
    `# all files: ${cpuAll.toFixed(0)} CPU s in ${wallAll.toFixed(0)} s (${((100 * cpuAll) / wallAll).toFixed(0)}% of one core)\n`,
  );
}
if (process.env.CLAWPEER_TEST_TIMINGS_OUT) {
  const seconds = Object.fromEntries(byWall.map(([f, t]) => [timingKey(f), Math.round(t.wall * 10) / 10]));
  writeFileSync(
    process.env.CLAWPEER_TEST_TIMINGS_OUT,
    JSON.stringify(
      {
        note: 'wall seconds per test file, for run-tests.mjs to start the longest first; from one full run',
        jobs: JOBS,
        seconds,
      },
      null,
      2,
    ) + '\n',
  );
}
if (failures.length > 0) {
  const lines = failures.flatMap((f) => [
    `# FAILED ${f.file}${f.why ? ` (${f.why})` : ''}`,
    ...f.digest.map((l) => `#   ${l.trimEnd()}`),
  ]);
  process.stdout.write(`# what failed (${failures.length} file(s); the full output is above):\n${lines.join('\n')}\n`);
}
if (files.length === 0) totals.failed++; // a run that found no tests passed nothing
process.stdout.write(`${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped\n`);
if (process.env.CLAWPEER_KEEP_TEST_TMP === '1') process.stdout.write(`# temp files kept in ${runTmp}\n`);
else rmSync(runTmp, { recursive: true, force: true, maxRetries: 3 });
process.exitCode = totals.failed > 0 ? 1 : 0;
