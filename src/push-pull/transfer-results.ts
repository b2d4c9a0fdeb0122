// One result for several transfers run one after another on a session (`pull A B LOCAL`):
// counts and lists add up, seconds add up, the widest stream count is shown.
import type { DryRunReport } from '../transfer/dry-run.js';
import type { TransferResult } from './transfer-client.js';

const sum = (a: number | undefined, b: number | undefined): number | undefined =>
  a === undefined && b === undefined ? undefined : (a ?? 0) + (b ?? 0);
const cat = <T>(a: readonly T[] | undefined, b: readonly T[] | undefined): readonly T[] | undefined =>
  a === undefined && b === undefined ? undefined : [...(a ?? []), ...(b ?? [])];

function combineDryRuns(a: DryRunReport | undefined, b: DryRunReport | undefined): DryRunReport | undefined {
  if (a === undefined || b === undefined) return a ?? b;
  const others = cat(a.others, b.others);
  return {
    files: [...a.files, ...b.files],
    touched: [...a.touched, ...b.touched],
    ...(others === undefined ? {} : { others }),
    filesUnchanged: a.filesUnchanged + b.filesUnchanged,
    chunksToSend: a.chunksToSend + b.chunksToSend,
    bytesToSend: a.bytesToSend + b.bytesToSend,
  };
}

/** `a` and `b` as one result; an optional field is present when either has it. */
function combineTwo(a: TransferResult, b: TransferResult): TransferResult {
  const optional = {
    dryRun: combineDryRuns(a.dryRun, b.dryRun),
    deleted: cat(a.deleted, b.deleted),
    deletedCount: sum(a.deletedCount, b.deletedCount),
    filesKept: sum(a.filesKept, b.filesKept),
    sourceRemoved: sum(a.sourceRemoved, b.sourceRemoved),
    sourceChanged: cat(a.sourceChanged, b.sourceChanged),
    filesBackedUp: sum(a.filesBackedUp, b.filesBackedUp),
    deletesOverLimit: sum(a.deletesOverLimit, b.deletesOverLimit),
    published: cat(a.published, b.published),
    created: cat(a.created, b.created),
    updated: cat(a.updated, b.updated),
    refused: cat(a.refused, b.refused),
    refusedCount: sum(a.refusedCount, b.refusedCount),
    unreadable: cat(a.unreadable, b.unreadable),
    unreadableCount: sum(a.unreadableCount, b.unreadableCount),
  };
  return {
    files: a.files + b.files,
    bytes: a.bytes + b.bytes,
    wireBytes: a.wireBytes + b.wireBytes,
    chunksSent: a.chunksSent + b.chunksSent,
    chunksSkipped: a.chunksSkipped + b.chunksSkipped,
    chunksCompressed: a.chunksCompressed + b.chunksCompressed,
    streams: Math.max(a.streams, b.streams),
    window: Math.max(a.window, b.window),
    seconds: a.seconds + b.seconds,
    ...Object.fromEntries(Object.entries(optional).filter(([, v]) => v !== undefined)),
  };
}

export function combineResults(results: readonly TransferResult[]): TransferResult {
  const [first, ...rest] = results;
  if (first === undefined) throw new TypeError('no transfer results to combine');
  return rest.reduce(combineTwo, first);
}
