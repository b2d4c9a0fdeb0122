// The short twin of test/slow/converge.test.ts for CI (npm run test:long): one seeded schedule on three nodes
// in a line (n0 and n2 never meet), with faults, converges with nothing lost (~30 syncs).
import t from 'tap';
import { convergeSuite } from '../support/converge-run.js';

await convergeSuite(t, { runs: 1, nodes: 3, ops: 20, faults: true, baseSeed: 2 });
