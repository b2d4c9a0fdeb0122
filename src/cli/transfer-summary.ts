// The closing line of a push or pull: what was published, and what travelled against what the
// destination had already. The rate is over the bytes that crossed the connection: a push the
// listener deduplicated whole moved a few KiB, not its files' size.
import { count, human } from '../format.js';
import type { TransferResult } from '../push-pull/transfer-with-peer.js';

export type TransferSummaryCounts = Pick<
  TransferResult,
  | 'files'
  | 'bytes'
  | 'wireBytes'
  | 'chunksSent'
  | 'chunksSkipped'
  | 'chunksCompressed'
  | 'streams'
  | 'window'
  | 'seconds'
>;

/** `pushed 2 files, 20.0 MiB in 0.38 s; 3.3 KiB travelled (8.7 KiB/s) ...`, without the option counts. */
export function transferSummaryText(verb: string, r: TransferSummaryCounts): string {
  const rate = human(r.wireBytes / Math.max(r.seconds, 0.001));
  const dedup = r.chunksSent === 0 && r.chunksSkipped > 0 ? ': all of the content was there already' : '';
  return (
    `${verb} ${count(r.files, 'file')}, ${human(r.bytes)} in ${r.seconds.toFixed(2)} s; ` +
    `${human(r.wireBytes)} travelled (${rate}/s) over ${count(r.streams, 'stream')}, window ${r.window}; ` +
    `${count(r.chunksSent, 'chunk')} sent (${r.chunksCompressed} compressed), ${r.chunksSkipped} already there${dedup}`
  );
}
