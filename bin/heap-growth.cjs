// Full GCs paced by the data moved, not by the heap: V8 starts a mark-compact when the old
// generation plus the external (ArrayBuffer) memory it gained since the last one passes a limit
// of about 1.5x the live heap. clawpeer's heap is small (~11 MB live) and every chunk it moves is
// an ArrayBuffer, so a 1 GiB push ran ~77 mark-compacts in the listener and 16-60 in the sender,
// each marking the whole heap (measured here: --trace-gc). Keeping ~96 MiB of headroom above a
// small heap instead took the listener to 1-2, its CPU from 8.8-9.7 s to 7.8-8.5 s and the push
// from 8.0-8.7 s to 7.2-7.9 s (bench numbers in the commit that added this).
//
// How: after each full GC, set V8's heap growing factor so the next limit sits HEADROOM_BYTES
// above the live heap; a heap of LARGE_HEAP_BYTES or more gets V8's own dynamic factor back, so
// a big heap never grows by a multiple of itself. V8 reads the flag at each limit computation;
// a runtime that ignores it (or refuses it) keeps its defaults. Set CLAWPEER_HEAP_GROWTH=0 to
// turn this off (CLAWPEER_HEAP_GROWTH is read once, at start).
'use strict';
const v8 = require('node:v8');
const { PerformanceObserver, constants } = require('node:perf_hooks');

const HEADROOM_BYTES = 96 * 1024 * 1024;
const LARGE_HEAP_BYTES = 96 * 1024 * 1024;
/** V8's flag takes a percentage over 1x; 1,000 (11x) is the cap here. */
const MAX_PERCENT = 1000;

/** The --heap-growing-percent that puts the next limit HEADROOM_BYTES above `usedBytes`; 0 = V8's own. */
function growingPercentFor(usedBytes) {
  if (usedBytes >= LARGE_HEAP_BYTES) return 0;
  const percent = Math.ceil((100 * HEADROOM_BYTES) / Math.max(usedBytes, 1));
  return Math.min(MAX_PERCENT, Math.max(percent, 100));
}

let current = -1;
function apply(usedBytes) {
  const percent = growingPercentFor(usedBytes);
  if (percent === current) return;
  current = percent;
  try {
    v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
  } catch {
    // A runtime with frozen flags: its defaults stand.
  }
}

function start() {
  apply(v8.getHeapStatistics().used_heap_size);
  const observer = new PerformanceObserver((list) => {
    if (list.getEntries().some((e) => e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR)) apply(v8.getHeapStatistics().used_heap_size);
  });
  observer.observe({ entryTypes: ['gc'] });
}

// Starts on require, as the launcher (and the bench's `node --require`) load it.
if (process.env.CLAWPEER_HEAP_GROWTH !== '0') start();

module.exports = { growingPercentFor };
