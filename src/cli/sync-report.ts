// What `clawpeer sync` prints at the end, whether it ran in the CLI, in a listener, or through
// the fast path (sync-fast-path.ts).
import type { SyncFolderResult } from '../node/sync-client.js';
import type { Output } from './output.js';

/** The end of a sync: receive-only local changes, paths left alone, then the done record. `resident`: run by a listener. */
export function reportSync(out: Output, r: SyncFolderResult, resident: boolean): void {
  for (const p of r.localOnly) out.emit({ event: 'local-only', path: p }, `local change not sent (receive-only): ${p}`);
  for (const p of r.skipped) out.emit({ event: 'skipped', path: p }, `left as is this time: ${p}`);
  out.emit(
    {
      event: 'done', inSync: r.inSync, roundTrips: r.roundTrips, reconcileBytes: r.reconcileBytes, revisionsSent: r.revisionsSent,
      revisionsReceived: r.revisionsReceived, chunksSent: r.chunksSent, wireBytes: r.wireBytes, conflicts: r.conflicts, seconds: Math.round(r.seconds * 1000) / 1000,
      scanned: r.scanned, resident,
    },
    `${r.inSync ? 'in sync' : 'NOT in sync'}: ${r.revisionsSent} revisions sent, ${r.revisionsReceived} received, ${r.chunksSent} chunks, ${r.conflicts} conflicts; ` +
      `reconciliation ${r.reconcileBytes} bytes in ${r.roundTrips} round trips, ${r.wireBytes} bytes on the wire, ${r.seconds.toFixed(2)} s` +
      `${resident ? ' (run by the listener' + (r.scanned ? ')' : ', folder unchanged since its last scan)') : ''}`,
  );
}
