#!/usr/bin/env node
// Size rules for src/ (issue 30, ARCHITECTURE.md "Rooms"): no source file over MAX_FILE_LINES
// lines and no folder with more than MAX_FOLDER_ENTRIES entries, so a unit too big to read in one
// sitting or a folder too full to scan is cut before it grows. Generated code (gen/) is left out.
// Prints each violation; exit 1 if there is any.
// Usage: node scripts/check-sizes.mjs [SRC_DIR]   (default: this checkout's src/); `npm run lint` runs it.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'src');
export const MAX_FILE_LINES = 600;
export const MAX_FOLDER_ENTRIES = 25;
const SKIP_DIRS = new Set(['gen']);
/**
 * Data, not code, exempt from MAX_FILE_LINES, each with why (paths relative to src/, with '/').
 * Keep such a file compact all the same (Prettier leaves it as written: `// prettier-ignore`).
 */
export const DATA_FILES = new Map([
  ['pairing/code-word-list.ts', 'the EFF short word list #1, 1,295 words: a table, not a unit to cut along seams'],
]);

/** The broken size rules under `srcDir`, one message each, paths relative to it. */
export function checkSizes(srcDir) {
  const problems = [];
  const walk = (dir) => {
    const entries = readdirSync(dir, { withFileTypes: true });
    const rel = path.relative(srcDir, dir) || '.';
    if (entries.length > MAX_FOLDER_ENTRIES) {
      problems.push(
        `${rel}/ holds ${entries.length} entries, more than ${MAX_FOLDER_ENTRIES}: split it into folders by role`,
      );
    }
    for (const e of entries) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (!SKIP_DIRS.has(e.name)) walk(p);
      } else if (/\.(ts|mts|cts|js|mjs)$/.test(e.name)) {
        const text = readFileSync(p, 'utf8');
        const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
        const rel = path.relative(srcDir, p).split(path.sep).join('/');
        if (lines > MAX_FILE_LINES && !DATA_FILES.has(rel)) {
          problems.push(
            `${path.relative(srcDir, p)} has ${lines} lines, more than ${MAX_FILE_LINES}: cut it along its seams`,
          );
        }
      }
    }
  };
  walk(srcDir);
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const problems = checkSizes(process.argv[2] === undefined ? SRC : path.resolve(process.argv[2]));
  for (const p of problems) console.error(p);
  if (problems.length > 0) {
    console.error(`${problems.length} size rule${problems.length === 1 ? '' : 's'} broken`);
    process.exit(1);
  }
  console.log(`no file over ${MAX_FILE_LINES} lines, no folder over ${MAX_FOLDER_ENTRIES} entries`);
}
