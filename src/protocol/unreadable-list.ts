// The entries a pull's sender could not read, which its final Manifest batch lists
// (transfer-wire.ts): checked against their caps both when encoded and when decoded, as
// TransferDone's refused paths are (transfer-done-lists.ts).
import protobuf from 'protobufjs/minimal.js';
import { ClawpeerError } from '../errors.js';
import type { clawpeer } from './gen/clawpeer.js';
import {
  MAX_LISTED_DELETIONS,
  MAX_UNREADABLE_ERROR_BYTES,
  type ManifestMessage,
  type UnreadablePath,
} from './message-types.js';
import {
  checkPathToShow,
  checkTextBytes,
  listedCountProblem,
  textToShow,
  wirePathToShow,
  wireText,
} from './wire-helpers.js';

/** What is wrong with a Manifest's unreadable entries, if anything: too many, a count below the list, on a batch but the last, an empty path, a long reason. */
export function unreadableProblem(
  unreadable: readonly UnreadablePath[],
  count: number,
  last: boolean,
): string | undefined {
  const listed = listedCountProblem('Manifest.unreadable', unreadable, count, MAX_LISTED_DELETIONS);
  if (listed !== undefined) return listed;
  if (count > 0 && !last) return 'Manifest.unreadable is on a batch that is not the last';
  for (const u of unreadable) {
    if (u.path === '') return 'Manifest.unreadable lists an empty path';
    const bytes = protobuf.util.utf8.length(u.error);
    if (bytes > MAX_UNREADABLE_ERROR_BYTES)
      return `Manifest.unreadable gives ${JSON.stringify(u.path.slice(0, 200))} a reason of ${bytes} bytes, more than ${MAX_UNREADABLE_ERROR_BYTES}`;
  }
  return undefined;
}

/** The Manifest's wire fields for them; RangeError when they break a cap. */
export function unreadableToWire(
  message: ManifestMessage,
): Pick<clawpeer.v1.Manifest.$Properties, 'unreadable' | 'unreadableCount'> {
  const listed = message.unreadable ?? [];
  const count = message.unreadableCount ?? 0;
  const problem = unreadableProblem(listed, count, message.last);
  if (problem !== undefined) throw new RangeError(problem);
  for (const u of listed) {
    checkPathToShow('Manifest.unreadable', u.path);
    checkTextBytes('Manifest.unreadable error', u.error);
  }
  return count === 0
    ? {}
    : { unreadable: listed.map((u) => ({ path: u.path, error: textToShow(u.error) })), unreadableCount: count };
}

export function unreadableFromWire(
  raw: readonly clawpeer.v1.UnreadablePath.$Properties[],
  count: number,
  last: boolean,
): { unreadable?: UnreadablePath[]; unreadableCount?: number } {
  const unreadable = raw.map((u) => ({
    path: wirePathToShow('Manifest.unreadable', u.path),
    // Free text from the peer: shown with its control characters blanked, as a peer's Error is.
    error: textToShow(wireText('Manifest.unreadable error', u.error)),
  }));
  const problem = unreadableProblem(unreadable, count, last);
  if (problem !== undefined) throw new ClawpeerError('PROTOCOL', problem);
  return count === 0 ? {} : { unreadable, unreadableCount: count };
}
