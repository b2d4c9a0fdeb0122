#!/usr/bin/env node
// The layout's rules, checked on the import statements of src/ (ARCHITECTURE.md, "Rooms"):
// - cores (protocol, crypto, chunking, transfer, sync) import only cores and the shared
//   top-level modules, never a driver folder, and none of the Node modules that do I/O;
// - nothing outside src/cli/ imports src/cli/;
// - src/cli/ imports only the facades of CLI_FACADES, the front folders (benchkit, relay) and
//   the shared errors/format/logger: the commands parse and print, the rooms do the work;
// - no import cycle between files, and none between folders.
// Prints each violation with the import that makes it; exit 1 if there is any.
// Usage: node scripts/check-imports.mjs [SRC_DIR]   (default: this checkout's src/)
// `npm run lint` runs it, and so does `npm test` (CI).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'src');
export const CORES = new Set(['protocol', 'crypto', 'chunking', 'transfer', 'sync', 'pairing']);
/** Node modules that touch files, sockets, processes or threads: a core does none of that. */
const IO_MODULES =
  /^node:(fs|fs\/promises|net|dgram|tls|http|https|http2|child_process|worker_threads|cluster|readline)$/;
/**
 * What src/cli/ may import outside itself (ARCHITECTURE.md, "The command line's facades"). A
 * new command that needs more adds a facade in its room (or a function to one), not a line here
 * for a room's inner module.
 */
export const CLI_FACADES = new Set([
  'home/facade.ts', // identity, pairs, node and reach config, addresses, listening.json, paths.json
  'home/home.ts', // the home's layout alone: light, on the sync fast path
  'ops/pairing.ts', // pair invite / join (long and short codes)
  'ops/doctor.ts', // doctor's checks
  'push-pull/transfer-with-peer.ts', // pushToPeer, pullFromPeer, listFromPeer
  'push-pull/transfer-options.ts', // which push/pull flags combine
  'folder-sync/facade.ts', // syncWithPeer, --watch pieces, log/restore/gc, report types
  'folders/facade.ts', // `folder` add/list/remove/pause/resume/log: config.json's folders, the folder log
  'folder-sync/resident-protocol.ts', // the listener's control socket: light, on the sync fast path
  'session/connect-peer.ts', // a session with the peer a command names (ping)
  'reach/dial-paths.ts', // peerTarget: identity, peer and the ways to reach it
  'reach/rendezvous-server.ts', // `clawpeer rendezvous`
  'reach/rendezvous-state.ts', // its default limits, shown in --help
  'listener/home-listener.ts', // startHomeListener: `clawpeer listen`
  'listener/send-facade.ts', // sendByCode: `clawpeer send`
  'transfer/rate-limiter.ts', // the --bwlimit cap (a constant)
  'transfer/paths.ts', // the rule a share path follows (push -'s --stdin-name)
]);
/** Front folders the CLI drives as they are: the bench and the impairment relay. */
const CLI_FRONTS = new Set(['benchkit', 'relay']);
/** Shared top-level modules the CLI may use . */
const CLI_SHARED = new Set(['errors.ts', 'format.ts', 'logger.ts']);
/** Whether src/cli/ may import `target` (relative to src/). */
export function cliMayImport(target) {
  if (roomOf(target) === 'cli') return true;
  return CLI_SHARED.has(target) || CLI_FACADES.has(target) || CLI_FRONTS.has(roomOf(target));
}

/** Generated code (protobufjs) is left out: it imports only protobufjs. */
const SKIP_DIRS = new Set(['gen']);

function sourceFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return SKIP_DIRS.has(e.name) ? [] : sourceFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

/** Module specifiers of one file: static imports and re-exports, side-effect and dynamic imports. */
export function specifiersOf(text) {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const found = [];
  const patterns = [
    /\b(?:import|export)\s[^'";]*?\sfrom\s*['"]([^'"]+)['"]/g,
    /\bimport\s*['"]([^'"]+)['"]/g,
    /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const re of patterns) for (const m of code.matchAll(re)) found.push(m[1]);
  return found;
}

/** The folder a file lives in ('' for the shared top-level modules: errors, logger, format). */
function roomOf(rel) {
  const parts = rel.split('/');
  return parts.length === 1 ? '' : parts[0];
}

export function checkImports(srcDir = SRC) {
  const files = sourceFiles(srcDir).map((f) => path.relative(srcDir, f).split(path.sep).join('/'));
  const known = new Set(files);
  const edges = new Map(files.map((f) => [f, []]));
  const problems = [];
  for (const file of files) {
    for (const spec of specifiersOf(readFileSync(path.join(srcDir, file), 'utf8'))) {
      const room = roomOf(file);
      if (spec.startsWith('.')) {
        const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), spec)).replace(/\.js$/, '.ts');
        if (!known.has(target)) continue; // generated code, or a file tsc will report
        edges.get(file).push(target);
        const to = roomOf(target);
        if (CORES.has(room) && to !== '' && !CORES.has(to))
          problems.push(`${file} imports ${target}: a core (${room}/) may not import the driver folder ${to}/`);
        if (to === 'cli' && room !== 'cli')
          problems.push(`${file} imports ${target}: only src/cli/ may import src/cli/`);
        if (room === 'cli' && !cliMayImport(target))
          problems.push(
            `${file} imports ${target}: the CLI imports only facades (scripts/check-imports.mjs CLI_FACADES); put what it needs behind its room's facade`,
          );
      } else if (CORES.has(room) && IO_MODULES.test(spec)) {
        problems.push(
          `${file} imports ${spec}: a core (${room}/) does no I/O; move the code that needs it to a driver`,
        );
      }
    }
  }
  for (const cycle of cyclesOf(edges)) problems.push(`import cycle between files: ${cycle.join(' -> ')}`);
  const folderEdges = new Map();
  for (const [from, tos] of edges) {
    const a = roomOf(from) || '(top)';
    for (const to of tos) {
      const b = roomOf(to) || '(top)';
      if (a === b) continue;
      if (!folderEdges.has(a)) folderEdges.set(a, []);
      if (!folderEdges.has(b)) folderEdges.set(b, []);
      folderEdges.get(a).push(b);
    }
  }
  for (const cycle of cyclesOf(folderEdges)) {
    const witness = cycle.slice(0, -1).map((a, i) => {
      const b = cycle[i + 1];
      const [from, to] = [...edges]
        .flatMap(([f, tos]) => tos.map((t) => [f, t]))
        .find(([f, t]) => (roomOf(f) || '(top)') === a && (roomOf(t) || '(top)') === b);
      return `${from} -> ${to}`;
    });
    problems.push(`import cycle between folders: ${cycle.join(' -> ')} (${witness.join('; ')})`);
  }
  return problems;
}

/** One cycle per strongly connected component of more than one node (Tarjan), as a closed path. */
function cyclesOf(graph) {
  let index = 0;
  const idx = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const components = [];
  const visit = (v) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const comp = [];
      let w;
      do {
        w = stack.pop();
        onStack.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1) components.push(comp);
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return components.map((comp) => closedPath(graph, new Set(comp), comp[0]));
}

/** A shortest path from start back to start inside one component (breadth first). */
function closedPath(graph, inComp, start) {
  const prev = new Map([[start, null]]);
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift();
    for (const w of graph.get(v) ?? []) {
      if (!inComp.has(w)) continue;
      if (w === start) {
        const pathBack = [v];
        for (let p = prev.get(v); p !== null; p = prev.get(p)) pathBack.push(p);
        return [...pathBack.reverse(), start];
      }
      if (!prev.has(w)) {
        prev.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start, start];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const problems = checkImports(process.argv[2] === undefined ? SRC : path.resolve(process.argv[2]));
  for (const p of problems) console.error(p);
  if (problems.length > 0) {
    console.error(
      `${problems.length} layout rule${problems.length === 1 ? '' : 's'} broken (see ARCHITECTURE.md, "Rooms")`,
    );
    process.exit(1);
  }
  console.log('imports follow the layout rules');
}
