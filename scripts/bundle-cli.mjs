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
import { readFileSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outdir = join(root, 'dist/bundle/cli');
rmSync(outdir, { recursive: true, force: true });
const common = {
  bundle: true,
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
};
// plain-fast-path's runs (transfer-run.js, sync-run.js, list-run.js, report-run.js) are the
// files built below, not split chunks.
const runsApart = {
  name: 'runs-apart',
  setup(b) {
    b.onResolve({ filter: /^\.\/(transfer|sync|list|report)-run\.js$/ }, (args) => ({
      path: args.path,
      external: true,
    }));
  },
};
const split = await build({
  ...common,
  // sync-fast-path, plain-fast-path: the launcher's first tries for `sync` (a listener's
  // folder) and for push, pull, sync and the commands that only report (their plain forms),
  // without yargs.
  entryPoints: [
    join(root, 'dist/src/cli/main.js'),
    join(root, 'dist/src/cli/sync-fast-path.js'),
    join(root, 'dist/src/cli/plain-fast-path.js'),
  ],
  outdir,
  splitting: true,
  metafile: true,
  plugins: [runsApart],
});

// A push or pull that plain-fast-path read runs from one file, transfer-run.js, with all it can
// load (what it loads lazily stays lazy, in esbuild's init wrappers), a sync from sync-run.js,
// an ls from list-run.js, and status, id, pair list, folder list and log from report-run.js:
// split, a push was ~70 chunks and a status ~32, each an ES module to resolve, read, compile and
// link (one file: a status 0.20 -> 0.18 CPU-s, an id 0.20 -> 0.16, measured here). Nothing in
// them meets the split chunks (main.js is not loaded once the fast path has the command), so no
// module is there twice.
// A module that runs itself as a worker thread (support/self-worker.ts: the chunking threads of
// file-chunking/parallel-manifest.ts) starts the worker from its own file's URL: here that
// would be all of transfer-run.js for every thread (and its service would sit in a lazy init
// no thread calls). So in these files its import.meta.url names the split chunk that holds it,
// what the worker loads in the split bundle too.
const chunkOf = new Map();
for (const [out, o] of Object.entries(split.metafile.outputs))
  for (const input of Object.keys(o.inputs)) if (!out.endsWith('.map')) chunkOf.set(join(root, input), join(root, out));
const selfWorkers = new Set(
  Object.entries(split.metafile.inputs)
    .filter(([, input]) => input.imports.some((i) => i.path.endsWith('support/self-worker.js')))
    .map(([file]) => join(root, file)),
);
const workersFromSplitChunks = {
  name: 'workers-from-split-chunks',
  setup(b) {
    b.onLoad({ filter: /\.js$/ }, (args) => {
      if (!selfWorkers.has(args.path)) return undefined;
      const chunk = chunkOf.get(args.path);
      const text = readFileSync(args.path, 'utf8');
      if (chunk === undefined || !text.includes('import.meta.url'))
        throw new Error(`${args.path}: a self-worker module without its split chunk or import.meta.url`);
      const url = `new URL(${JSON.stringify(`./${basename(chunk)}`)}, import.meta.url).href`;
      return { contents: text.replaceAll('import.meta.url', url), loader: 'js', resolveDir: dirname(args.path) };
    });
  },
};
await build({
  ...common,
  entryPoints: [
    join(root, 'dist/src/cli/transfer-run.js'),
    join(root, 'dist/src/cli/sync-run.js'),
    join(root, 'dist/src/cli/list-run.js'),
    join(root, 'dist/src/cli/report-run.js'),
  ],
  outdir,
  plugins: [workersFromSplitChunks],
});
