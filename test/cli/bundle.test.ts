// The built bundle (scripts/bundle-cli.mjs, `npm run build`): a push, pull or sync the plain
// fast path took runs from one file (transfer-run.js, sync-run.js), an ls and the commands that
// only report too (list-run.js, report-run.js), none with yargs; and a worker thread started
// from its code loads the split chunk of the module that runs as the worker, not all of the file.
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('../../bundle/cli/', import.meta.url));

t.test(
  'the run files start their worker threads from split chunks',
  { skip: !existsSync(`${dir}transfer-run.js`) && 'not bundled' },
  async (t) => {
    for (const file of ['transfer-run.js', 'sync-run.js']) {
      const text = readFileSync(`${dir}${file}`, 'utf8');
      // Every call (not the function's own definition) names a split chunk.
      const calls = [...text.matchAll(/(?<!function )startSelfWorker\(([^\n]{0,80})/g)].map((m) => m[1]!);
      if (file === 'transfer-run.js') t.ok(calls.length > 0, 'a push starts its chunking threads from it');
      for (const call of calls) {
        const chunk = /^new URL\("\.\/(chunk-[A-Z0-9]+\.js)", import\.meta\.url\)\.href,/.exec(call)?.[1];
        t.ok(chunk, `${file}: a split chunk's URL: ${call}`);
        if (chunk !== undefined)
          t.match(readFileSync(`${dir}${chunk}`, 'utf8'), /selfWorkerOptions\(/, `${chunk} runs the worker's service`);
      }
    }
    t.notMatch(readFileSync(`${dir}plain-fast-path.js`, 'utf8'), /yargs/, 'the fast path loads no yargs');
  },
);

t.test(
  'the fast path runs ls and the reporting commands from their own files',
  { skip: !existsSync(`${dir}report-run.js`) && 'not bundled' },
  async (t) => {
    const fast = readFileSync(`${dir}plain-fast-path.js`, 'utf8');
    for (const file of ['list-run.js', 'report-run.js']) {
      t.match(fast, `import("./${file}")`, `the fast path loads ${file}, built apart, not a split chunk`);
      t.notMatch(readFileSync(`${dir}${file}`, 'utf8'), /yargs/, `${file} has no yargs`);
    }
    // The pairs' file lock once took store/staged-file.ts's error helper, and blake3's addon with it.
    t.notMatch(
      readFileSync(`${dir}report-run.js`, 'utf8'),
      /blake-hash/,
      'a status or pair list loads no hashing addon',
    );
  },
);
