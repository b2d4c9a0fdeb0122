// The built bundle (scripts/bundle-cli.mjs, `npm run build`): a push, pull or sync the plain
// fast path took runs from one file (transfer-run.js, sync-run.js), and a worker thread started
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
