// The short twin of test/slow/converge.test.ts for npm test: two seeded schedules on three
// nodes in a line (n0 and n2 never meet), with faults, converge with nothing lost.
import t from 'tap';
import { convergeSuite } from '../support/converge-run.js';

await convergeSuite(t, { runs: 2, nodes: 3, ops: 16, faults: true, baseSeed: 1 });
