// The existing-file policy (refuse, replace, keep, update): what the publisher (publisher.ts) does
// about a different file or symlink at a final path, and which metadata an identical file gets.
// Decisions only; the publisher acts on them.
import { ClawpeerError } from '../errors.js';
import type { ExistingPolicy, MetadataSet, PublishFile } from './publish-types.js';
import { PUBLISH_MODE_MASK } from './staged-file.js';

/** What is at a file's final path: nothing, identical content, or something different. */
export type Existing =
  | { kind: 'absent' }
  | { kind: 'identical'; mode: number; mtimeMs: number; atime: Date }
  | { kind: 'different'; what: string; mtimeMs: number };

/** --update's rule: what is here is newer, by whole milliseconds (timestamps travel in ms). */
function newerHere(existingMtimeMs: number, incomingMtimeMs: number): boolean {
  return Math.floor(existingMtimeMs) > Math.floor(incomingMtimeMs);
}

export function refuseExisting(abs: string, what: string): never {
  throw new ClawpeerError(
    'FILE_EXISTS',
    `${abs} exists and is ${what}: not replaced (use --force, --update or --ignore-existing)`,
  );
}

/**
 * The policy's answer for something different at `abs` (modified at `existingMtimeMs`) where
 * an entry modified at `incomingMtimeMs` should go: replace it or keep it; 'refuse' throws.
 * 'update' keeps only what is newer, by whole milliseconds (timestamps travel in ms).
 */
export function replaceOrKeep(
  policy: ExistingPolicy,
  abs: string,
  what: string,
  existingMtimeMs: number,
  incomingMtimeMs: number,
): 'replace' | 'keep' {
  switch (policy) {
    case 'refuse':
      return refuseExisting(abs, what);
    case 'replace':
      return 'replace';
    case 'keep':
      return 'keep';
    case 'update':
      return newerHere(existingMtimeMs, incomingMtimeMs) ? 'keep' : 'replace';
  }
}

/** What to do about what is at `abs` for a file modified at `incomingMtimeMs`: the policy's answer for a different one. */
export function outcomeOf(
  policy: ExistingPolicy,
  existing: Existing,
  abs: string,
  incomingMtimeMs: number,
): 'new' | 'identical' | 'kept' | 'replace' {
  if (existing.kind === 'absent') return 'new';
  if (existing.kind === 'identical') return 'identical';
  return replaceOrKeep(policy, abs, existing.what, existing.mtimeMs, incomingMtimeMs) === 'keep' ? 'kept' : 'replace';
}

/**
 * An identical file whose mode or mtime differs from the incoming entry's gets them, as rsync -a
 * updates the permissions and times of a file it does not copy. The policies that keep existing
 * files say otherwise: --ignore-existing touches nothing, --update nothing newer here. What
 * would be set; nothing is (dry runs ask this, stageFile then sets it).
 */
export function metadataToSet(
  policy: ExistingPolicy,
  existing: Extract<Existing, { kind: 'identical' }>,
  file: PublishFile,
): MetadataSet | undefined {
  if (policy === 'keep') return undefined;
  if (policy === 'update' && newerHere(existing.mtimeMs, file.mtimeMs)) return undefined;
  const perms = existing.mode !== (file.mode & PUBLISH_MODE_MASK);
  // Within a millisecond is the same time: mtimes travel in whole ms, and one set from a
  // double number of seconds (futimes) can land a nanosecond below the ms it was given.
  const time = Math.abs(existing.mtimeMs - file.mtimeMs) >= 1;
  return perms || time ? { time, perms } : undefined;
}
