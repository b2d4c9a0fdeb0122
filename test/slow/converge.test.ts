// The convergence proof (issue 31): 200 seeded schedules of random edits, renames, deletes,
// conflicts and faults on 5 nodes in a line, then quiesce and check (test/support/converge-schedule.ts).
// npm run test:converge; CLAWPEER_CONVERGE_SEED=n reproduces one schedule.
import t from 'tap';
import { convergeSuite } from '../support/converge-run.js';

await convergeSuite(t, { runs: 200, nodes: 5, ops: 60, faults: true, baseSeed: 1000 });
