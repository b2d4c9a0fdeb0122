// What `clawpeer sync` prints at the end, whether it ran in the CLI, in a listener, or through
// the fast path (sync-fast-path.ts). Paths (the peer's, and names made from them: a conflict
// copy) are shown with control and bidi characters escaped (escapeToShow: `\u202e`, `\#033`);
// --json records keep them exact (JSON.stringify leaves U+202E raw): a program needs the real name.
import type { NoSpaceReport, PlannedChange, SyncDryRun, SyncFolderResult } from '../folder-sync/facade.js';
import type { Output } from './output.js';
import { count, escapeToShow as show, human } from '../format.js';
import { MAX_NO_SPACE_PATHS, noSpaceText } from '../folder-sync/facade.js';

const sumBytes = (changes: readonly PlannedChange[]): number => changes.reduce((n, c) => n + c.bytes, 0);

/** One line per local entry the scan could not read or name (the sync is not in sync while they stay). */
function reportUnreadable(out: Output, r: SyncFolderResult, what: string): void {
  // A listener older than this field sends none.
  for (const u of r.unreadable ?? [])
    out.emit(
      { event: 'unreadable', path: u.path, error: u.error },
      `${what}, cannot be read here: ${show(u.path)} (${u.error})`,
    );
}

/** A dry run: one line per change on each side, then what the real sync would move. */
function reportDryRun(out: Output, r: SyncFolderResult, plan: SyncDryRun): void {
  const line = (side: 'receive' | 'send', c: PlannedChange): void => {
    const record = {
      event: `would-${side}`,
      path: c.path,
      change: c.change,
      kind: c.kind,
      bytes: c.bytes,
      ...(c.copy === undefined ? {} : { copy: c.copy }),
      ...(c.target === undefined ? {} : { target: c.target }),
    };
    const detail =
      c.copy !== undefined
        ? ` (the losing version kept as ${show(c.copy)})`
        : c.target !== undefined
          ? ` -> ${show(c.target)}`
          : c.bytes > 0
            ? ` (${human(c.bytes)})`
            : '';
    out.emit(record, `${side.padEnd(7)} ${c.change.padEnd(8)} ${show(c.path)}${c.kind === 'dir' ? '/' : ''}${detail}`);
  };
  for (const c of plan.receive) line('receive', c);
  for (const c of plan.send) line('send', c);
  for (const p of r.skipped) out.emit({ event: 'skipped', path: p }, `would be left as is: ${show(p)}`);
  reportUnreadable(out, r, 'would not be sent');
  const conflicts = plan.receive.filter((c) => c.change === 'conflict').length;
  const bytesToReceive = sumBytes(plan.receive);
  const bytesToSend = sumBytes(plan.send.filter((c) => c.change !== 'conflict'));
  out.emit(
    {
      event: 'done',
      dryRun: true,
      inSync: r.inSync,
      ...(r.mode === undefined ? {} : { mode: r.mode }),
      toReceive: plan.receive.length,
      toSend: plan.send.length,
      conflicts,
      bytesToReceive,
      bytesToSend,
      roundTrips: r.roundTrips,
      reconcileBytes: r.reconcileBytes,
      revisionsReceived: r.revisionsReceived,
      wireBytes: r.wireBytes,
      seconds: Math.round(r.seconds * 1000) / 1000,
    },
    r.inSync
      ? 'dry run: in sync, nothing would change'
      : `dry run: ${count(plan.receive.length, 'change')} would arrive here (${human(bytesToReceive)} of content at most), ${plan.send.length} would go to the peer ` +
          `(${human(bytesToSend)} at most), ${count(conflicts, 'conflict')}; nothing was changed or sent`,
  );
}

/** A sync of a shared folder's directory ran in the folder's mode, not the one asked for. */
function reportNarrowed(out: Output, r: SyncFolderResult): void {
  const n = r.narrowedBy;
  if (n === undefined || r.mode === undefined) return;
  out.emit(
    { event: 'narrowed', mode: r.mode, folder: n.folder, folderMode: n.mode },
    `synced ${r.mode}: folder ${show(n.folder)} is ${n.mode} here (config.json), so ` +
      (n.mode === 'receive-only' ? 'its local changes stay here' : "the peer's changes are not taken"),
  );
}

/**
 * The files of this sync that did not fit on a side's disk: one line with how many, the bytes
 * they need against what is free, and the first paths (each is also a `skipped` or
 * `peer-skipped` line).
 */
function reportNoSpace(out: Output, n: NoSpaceReport | undefined, side: 'here' | 'on the peer'): void {
  if (n === undefined) return;
  out.emit(
    {
      event: side === 'here' ? 'no-space' : 'peer-no-space',
      files: n.files,
      needBytes: n.needBytes,
      freeBytes: n.freeBytes,
      keepBytes: n.keepBytes,
      paths: n.paths.slice(0, MAX_NO_SPACE_PATHS),
    },
    `${noSpaceText({ ...n, paths: n.paths.map(show) }, side)}; the rest landed, and they are retried at the next sync`,
  );
}

/** The end of a sync: receive-only local changes, paths left alone, then the done record. `resident`: run by a listener. */
export function reportSync(out: Output, r: SyncFolderResult, resident: boolean): void {
  reportNarrowed(out, r);
  if (r.dryRun !== undefined) {
    reportDryRun(out, r, r.dryRun);
    return;
  }
  for (const p of r.localOnly)
    out.emit({ event: 'local-only', path: p }, `local change not sent (receive-only): ${show(p)}`);
  for (const p of r.skipped) out.emit({ event: 'skipped', path: p }, `left as is this time: ${show(p)}`);
  reportNoSpace(out, r.noSpace, 'here');
  for (const p of r.peerSkipped ?? [])
    out.emit({ event: 'peer-skipped', path: p }, `left as is by the peer this time: ${show(p)} (its log says why)`);
  reportNoSpace(out, r.peerNoSpace, 'on the peer');
  reportUnreadable(out, r, 'not sent');
  out.summary(
    {
      event: 'done',
      inSync: r.inSync,
      ...(r.mode === undefined ? {} : { mode: r.mode }),
      roundTrips: r.roundTrips,
      reconcileBytes: r.reconcileBytes,
      revisionsSent: r.revisionsSent,
      revisionsReceived: r.revisionsReceived,
      chunksSent: r.chunksSent,
      wireBytes: r.wireBytes,
      conflicts: r.conflicts,
      seconds: Math.round(r.seconds * 1000) / 1000,
      scanned: r.scanned,
      resident,
      ...(r.path === undefined ? {} : { path: r.path, rttMs: r.rttMs ?? 0 }),
    },
    `${r.inSync ? 'in sync' : 'NOT in sync'}: ${count(r.revisionsSent, 'revision')} sent, ${r.revisionsReceived} received, ${count(r.chunksSent, 'chunk')}, ${count(r.conflicts, 'conflict')}; ` +
      `reconciliation ${human(r.reconcileBytes)} in ${count(r.roundTrips, 'round trip')}, ${human(r.wireBytes)} on the wire, ${r.seconds.toFixed(2)} s` +
      (resident ? ' (run by the listener' + (r.scanned ? ')' : ', folder unchanged since its last scan)') : ''),
  );
}
