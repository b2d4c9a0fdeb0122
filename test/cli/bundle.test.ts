// The built bundle (scripts/bundle-cli.mjs, `npm run build`): a push or pull the fast path took
// runs from transfer-run.js, one file, and a worker thread started from its code loads the
// split chunk of the module that runs as the worker, not all of transfer-run.js.
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('../../bundle/cli/', import.meta.url));

t.test(
  'transfer-run.js starts its worker threads from their split chunks',
  { skip: !existsSync(`${dir}transfer-run.js`) && 'not bundled' },
  async (t) => {
    const text = readFileSync(`${dir}transfer-run.js`, 'utf8');
    // Every call (not the function's own definition) names a split chunk.
    const calls = [...text.matchAll(/(?<!function )startSelfWorker\(([^\n]{0,80})/g)].map((m) => m[1]!);
    t.ok(calls.length > 0, 'the chunking threads are started from it');
    for (const call of calls) {
      const chunk = /^new URL\("\.\/(chunk-[A-Z0-9]+\.js)", import\.meta\.url\)\.href,/.exec(call)?.[1];
      t.ok(chunk, `a split chunk's URL: ${call}`);
      if (chunk !== undefined)
        t.match(readFileSync(`${dir}${chunk}`, 'utf8'), /selfWorkerOptions\(/, `${chunk} runs the worker's service`);
    }
    t.notMatch(readFileSync(`${dir}transfer-fast-path.js`, 'utf8'), /yargs/, 'the fast path loads no yargs');
  },
);
