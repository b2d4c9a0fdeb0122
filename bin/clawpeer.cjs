#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (built by `npm run build`, run by `npm start`/`npm test`).
// CommonJS on purpose: it runs before anything submits work to libuv's thread pool, so the pool
// size set in thread-pool.cjs still applies (an ES module entry is itself read through the pool).
// It runs the bundled CLI (scripts/bundle-cli.mjs: fewer files to load, a faster start) unless
// tsc has rebuilt dist/src since the bundle was made, then the modules themselves.
'use strict';
require('./thread-pool.cjs');
require('./heap-growth.cjs');
// A reader that went away (`clawpeer ls PEER:SHARE -r | head`) ends the command at once, as
// SIGPIPE ends a C program (exit 128 + 13), not with an unhandled 'error' event and its stack.
process.stdout.on('error', (err) => {
  if (err.code !== 'EPIPE') throw err;
  process.exit(141);
});
const { statSync } = require('node:fs');
const { join } = require('node:path');

const dist = join(__dirname, '..', 'dist');
const mtimeMs = (file) => statSync(file, { throwIfNoEntry: false })?.mtimeMs;
const bundled = mtimeMs(join(dist, 'bundle', 'cli', 'main.js'));
const compiled = mtimeMs(join(dist, '.tsbuildinfo'));
if (bundled === undefined && mtimeMs(join(dist, 'src', 'cli', 'main.js')) === undefined) {
  process.stderr.write(`clawpeer: not built yet: run \`npm run build\` in ${join(__dirname, '..')}\n`);
  process.exit(1);
}
const dir = bundled !== undefined && (compiled === undefined || bundled >= compiled) ? '../dist/bundle/cli/' : '../dist/src/cli/';
const argv = process.argv.slice(2);
// A sync a running listener of this home can take is handed over without loading yargs
// (src/cli/sync-fast-path.ts); push, pull and sync in their plain forms, and status, id, pair
// list, folder list, folder log and ls, run without it too (src/cli/plain-fast-path.ts). Each
// declines anything else (undefined), and main runs. CLAWPEER_NO_FAST_PATH=1 always runs main
// (bench/startup.ts and the tests compare both ways).
const PLAIN_WORDS = ['push', 'pull', 'sync', 'status', 'id', 'pair', 'folder', 'ls'];
const fastPaths = [];
if (process.env.CLAWPEER_NO_FAST_PATH !== '1') {
  if (argv.includes('sync')) fastPaths.push(['sync-fast-path.js', 'runFastSync']);
  if (argv.some((w) => PLAIN_WORDS.includes(w))) fastPaths.push(['plain-fast-path.js', 'runPlainCommand']);
}
let fast = Promise.resolve(undefined);
for (const [file, run] of fastPaths) fast = fast.then((code) => (code !== undefined ? code : import(`${dir}${file}`).then((m) => m[run](argv))));
let settled = false;
fast
  .then((code) => (code !== undefined ? code : import(`${dir}main.js`).then(({ main }) => main(argv))))
  .then((code) => {
    settled = true;
    process.exitCode = code;
  })
  .catch((err) => {
    // Too few descriptors to load clawpeer's own modules (`ulimit -n 36`: node's loader reads
    // several at once): say what to change, not the loader's stack. Anything else as before.
    if (err?.code !== 'EMFILE' && err?.code !== 'ENFILE') throw err;
    settled = true;
    process.stderr.write(`clawpeer: too many open files while loading ${err.path ?? 'its modules'}: the open-file limit (ulimit -n) is too low for clawpeer; raise it (ulimit -n 1024)\n`);
    process.exitCode = 1;
  });
// Every command ends by settling its promise. When the event loop drains first, some wait
// could never end (a bug): exiting 0 there would claim a success the command never reached,
// so it is an internal error, said loudly (and as the --json error record).
process.on('beforeExit', () => {
  if (settled) return;
  settled = true;
  const message = 'internal error: the command stopped without finishing (nothing was left to wait for, yet its result never came); this is a bug in clawpeer, please report it';
  if (argv.includes('--json')) process.stdout.write(JSON.stringify({ event: 'error', code: 'INTERNAL', message, exitCode: 1 }) + '\n');
  process.stderr.write(`clawpeer: ${message}\n`);
  process.exitCode = 1;
});
