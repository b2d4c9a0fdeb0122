#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (built by `npm run build`, run by `npm start`/`npm test`).
import { main } from '../dist/src/cli/main.js';
main(process.argv.slice(2)).then((code) => { process.exitCode = code; });
