#!/usr/bin/env node
// Bundles the compiled CLI (dist/src/cli/main.js, from tsc) into dist/bundle/cli/: clawpeer's
// own ~90 modules and yargs's ~35 become a handful of files. Every command pays Node's ES
// module loader per file (resolve, read, link): a `clawpeer sync` started in ~215 ms before
// its first line of work, 45-80 ms less bundled (measured here, 2 cores).
// Command modules stay separate chunks (main.ts imports them lazily), so a run still loads
// only its command's code. Packages with native addons or wasm, and CommonJS ones, stay
// external: they are resolved from node_modules at run time as before.
// The bundle keeps dist/src's depth (dist/bundle/cli/main.js), so main.ts's relative path to
// package.json holds. bin/clawpeer.cjs runs the bundle when it is at least as new as the tsc
// build, and dist/src otherwise (a tsc-only rebuild is never shadowed by an old bundle).
// Run from the repository root after tsc: `npm run build` does both.
import { build } from 'esbuild';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outdir = join(root, 'dist/bundle/cli');
rmSync(outdir, { recursive: true, force: true });
await build({
  // sync-fast-path, transfer-fast-path: the launcher's first try for `sync` (a listener's
  // folder) and for push and pull (their plain forms), without yargs.
  entryPoints: [
    join(root, 'dist/src/cli/main.js'),
    join(root, 'dist/src/cli/sync-fast-path.js'),
    join(root, 'dist/src/cli/transfer-fast-path.js'),
  ],
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // Native addons, wasm and CommonJS packages (an ES module bundle cannot `require` what they need).
  external: [
    'lmdb',
    'protobufjs',
    'protobufjs/*',
    'cli-progress',
    '@chainsafe/libp2p-quic',
    '@napi-rs/blake-hash',
    'blake3-wasm',
    'blake3-wasm/*',
    '@mongodb-js/zstd',
    'libsodium-wrappers',
    '@fails-components/webtransport',
  ],
  sourcemap: 'linked',
  logLevel: 'warning',
});
