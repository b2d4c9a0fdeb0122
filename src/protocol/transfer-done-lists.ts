// The lists TransferDone carries (transfer-wire.ts): removed paths, published files, updated
// files, created directories and symlinks, paths refused, and the counts beside them; each list is checked
// against its caps (MAX_LISTED_*) both when it is encoded and when it is decoded.
import protobuf from 'protobufjs/minimal.js';
import { ClawpeerError } from '../errors.js';
import type { clawpeer } from './gen/clawpeer.js';
import {
  type PublishedFile,
  type UpdatedFile,
  type CreatedEntry,
  type RefusedPath,
  MAX_LISTED_DELETIONS,
  MAX_LISTED_PUBLISHED,
  MAX_LISTED_PUBLISHED_BYTES,
} from './message-types.js';
import {
  ENTRY_KIND_FROM_WIRE,
  listedCountProblem,
  textToShow,
  wireEnum,
  wirePathToShow,
  wireText,
} from './wire-helpers.js';

/** What is wrong with TransferDone's removed paths, if anything: too many listed, or a count below the list. */
export function deletedProblem(deleted: readonly string[], count: number): string | undefined {
  return listedCountProblem('TransferDone.deleted', deleted, count, MAX_LISTED_DELETIONS);
}

export function deletedFromWire(
  deleted: readonly string[],
  count: number,
): { deleted?: string[]; deletedCount?: number } {
  const problem = deletedProblem(deleted, count);
  if (problem !== undefined) throw new ClawpeerError('PROTOCOL', problem);
  return count === 0
    ? {}
    : { deleted: deleted.map((p) => wirePathToShow('TransferDone.deleted', p)), deletedCount: count };
}

export function keptFromWire(kept: number): { filesKept?: number } {
  return kept === 0 ? {} : { filesKept: kept };
}

export function backedUpFromWire(backedUp: number): { filesBackedUp?: number } {
  return backedUp === 0 ? {} : { filesBackedUp: backedUp };
}

/** The text a listed entry of TransferDone takes: its path, and a symlink's target (UTF-8 bytes). */
export function listedEntryBytes(e: { readonly path: string; readonly target?: string }): number {
  return protobuf.util.utf8.length(e.path) + (e.target === undefined ? 0 : protobuf.util.utf8.length(e.target));
}

/** What is wrong with a list TransferDone carries, if anything: over MAX_LISTED_PUBLISHED items, or over MAX_LISTED_PUBLISHED_BYTES of text. */
function listedProblem(
  field: string,
  noun: string,
  text: string,
  list: readonly { readonly path: string; readonly target?: string }[],
): string | undefined {
  if (list.length > MAX_LISTED_PUBLISHED)
    return `${field} lists ${list.length} ${noun}, more than ${MAX_LISTED_PUBLISHED}`;
  let bytes = 0;
  for (const e of list) bytes += listedEntryBytes(e);
  return bytes > MAX_LISTED_PUBLISHED_BYTES
    ? `${field} lists ${bytes} bytes of ${text}, more than ${MAX_LISTED_PUBLISHED_BYTES}`
    : undefined;
}

export function publishedProblem(published: readonly PublishedFile[], files: number): string | undefined {
  if (published.length <= MAX_LISTED_PUBLISHED && published.length > files)
    return `TransferDone.published lists ${published.length} files, more than the ${files} it counts`;
  return listedProblem('TransferDone.published', 'files', 'paths', published);
}

export function publishedFromWire(
  raw: readonly clawpeer.v1.PublishedFile.$Properties[],
  files: number,
): { published?: PublishedFile[] } {
  if (raw.length === 0) return {};
  const published = raw.map((f) => ({
    path: wirePathToShow('TransferDone.published', f.path),
    replaced: f.replaced ?? false,
  }));
  const problem = publishedProblem(published, files);
  if (problem !== undefined) throw new ClawpeerError('PROTOCOL', problem);
  return { published };
}

export function updatedProblem(updated: readonly UpdatedFile[]): string | undefined {
  return listedProblem('TransferDone.updated', 'files', 'paths', updated);
}

export function updatedFromWire(raw: readonly clawpeer.v1.UpdatedFile.$Properties[]): { updated?: UpdatedFile[] } {
  if (raw.length === 0) return {};
  const updated = raw.map((u) => ({
    path: wirePathToShow('TransferDone.updated', u.path),
    time: u.time ?? false,
    perms: u.perms ?? false,
  }));
  const problem = updatedProblem(updated);
  if (problem !== undefined) throw new ClawpeerError('PROTOCOL', problem);
  return { updated };
}

export function createdProblem(created: readonly CreatedEntry[]): string | undefined {
  return listedProblem('TransferDone.created', 'entries', 'paths and targets', created);
}

export function createdFromWire(raw: readonly clawpeer.v1.CreatedEntry.$Properties[]): { created?: CreatedEntry[] } {
  if (raw.length === 0) return {};
  const created = raw.map((e): CreatedEntry => {
    const path = wirePathToShow('TransferDone.created', e.path);
    const kind = wireEnum('TransferDone.created kind', e.kind, ENTRY_KIND_FROM_WIRE);
    if (kind === 'dir') return { path, kind };
    if (kind === 'symlink')
      return {
        path,
        kind,
        // Free text (a manifest's link target may hold any character): blanked, as the encoder does.
        target: textToShow(wireText('TransferDone.created target', e.linkTarget)),
        replaced: e.replaced ?? false,
      };
    throw new ClawpeerError(
      'PROTOCOL',
      `TransferDone.created lists ${JSON.stringify(path)} as a ${kind}: only directories and symlinks`,
    );
  });
  const problem = createdProblem(created);
  if (problem !== undefined) throw new ClawpeerError('PROTOCOL', problem);
  return { created };
}

export function overLimitFromWire(over: number): { deletesOverLimit?: number } {
  return over === 0 ? {} : { deletesOverLimit: over };
}

/** An errno code as support/path-refusal.ts names them: what a refused path's reason may be. */
const ERRNO_CODE = /^E[A-Z0-9]{1,31}$/;

/** What is wrong with TransferDone's refused paths, if anything: too many listed, a count below the list, a reason that is no errno code. */
export function refusedProblem(refused: readonly RefusedPath[], count: number): string | undefined {
  const listed = listedCountProblem('TransferDone.refused', refused, count, MAX_LISTED_DELETIONS);
  if (listed !== undefined) return listed;
  for (const r of refused) {
    if (r.path === '') return 'TransferDone.refused lists an empty path';
    if (!ERRNO_CODE.test(r.reason))
      return `TransferDone.refused gives ${JSON.stringify(r.path)} the reason ${JSON.stringify(r.reason)}, not an errno code`;
  }
  return undefined;
}

export function refusedFromWire(
  raw: readonly clawpeer.v1.RefusedPath.$Properties[],
  count: number,
): { refused?: RefusedPath[]; refusedCount?: number } {
  const refused = raw.map((r) => ({
    path: wirePathToShow('TransferDone.refused', r.path),
    reason: wireText('TransferDone.refused reason', r.reason),
  }));
  const problem = refusedProblem(refused, count);
  if (problem !== undefined) throw new ClawpeerError('PROTOCOL', problem);
  return count === 0 ? {} : { refused, refusedCount: count };
}
