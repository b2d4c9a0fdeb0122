#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (built by `npm run build`, run by `npm start`/`npm test`).
// CommonJS on purpose: it runs before anything submits work to libuv's thread pool, so the pool
// size set in thread-pool.cjs still applies (an ES module entry is itself read through the pool).
'use strict';
require('./thread-pool.cjs');
import('../dist/src/cli/main.js').then(({ main }) => main(process.argv.slice(2))).then((code) => {
  process.exitCode = code;
});
