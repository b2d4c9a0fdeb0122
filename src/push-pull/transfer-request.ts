// A push's or pull's TransferRequest (transfer-client.ts), and the listener features it needs:
// each option the peer's listener would not understand is refused here, naming what to do
// instead, before the request is sent.
import type { ControlMessage } from '../protocol/messages.js';
import type { ExcludeRules, FilterRule } from '../transfer/exclude.js';
import type { PeerSession } from '../session/session.js';
import type { TransferOptions } from './transfer-types.js';

/** A listener without 'delete' would leave what the source lacks in place. */
export function requireDelete(session: PeerSession): void {
  session.requireFeature('delete', 'cannot remove what the source lacks', 'push without --delete');
}

/** A listener without 'filter' knows exclude patterns only: it would refuse the rules, or (older) read none. */
export function requireFilter(session: PeerSession, rules: ExcludeRules | undefined): void {
  if (rules?.hasIncludes === true)
    session.requireFeature('filter', 'does not take --include rules', 'run without --include');
}

/** A listener without 'existing' would refuse a different existing file as FILE_EXISTS, or replace it with --force. */
export function requireExisting(session: PeerSession): void {
  session.requireFeature(
    'existing',
    'cannot keep existing files (--ignore-existing, --update)',
    'push without them, or with --force',
  );
}

/** A listener without 'dry-run' would carry the transfer out. */
export function requireDryRun(session: PeerSession): void {
  session.requireFeature('dry-run', 'cannot do a dry run', 'run without --dry-run');
}

/** Plain exclude patterns while there is no include rule (what listeners without 'filter' know), else the rules in order. */
function patternsOnWire(rules: ExcludeRules): { exclude: string[] } | { filter: readonly FilterRule[] } {
  return rules.hasIncludes ? { filter: rules.rules } : { exclude: rules.rules.map((r) => r.pattern) };
}

/**
 * A push's or pull's request, with what the options ask for (the caller checked the peer takes
 * it). A pull's patterns filter what the listener sends; a push's go along only with --delete,
 * naming what is never removed. A push caps its own rate.
 */
export function transferRequest(o: TransferOptions, id: number, direction: 'push' | 'pull'): ControlMessage {
  const rules = direction === 'pull' || o.delete === true ? o.excludeRules : undefined;
  return {
    type: 'transfer-request',
    transferId: id,
    direction,
    share: o.share,
    path: o.remotePath,
    force: o.force,
    streams: o.streams,
    window: o.window,
    ...(rules === undefined ? {} : patternsOnWire(rules)),
    ...(direction === 'pull' && o.bwlimit !== undefined ? { rateLimit: o.bwlimit } : {}),
    ...(o.dryRun === true ? { dryRun: true } : {}),
    ...(direction === 'push' && o.delete === true ? { delete: true } : {}),
    ...(direction === 'push' && o.existing !== undefined ? { existing: o.existing } : {}),
    ...(direction === 'push' && o.backup !== undefined
      ? { backup: { suffix: o.backup.suffix, dir: o.backup.dir ?? '' } }
      : {}),
    ...(direction === 'push' && o.delete === true && o.maxDelete !== undefined ? { maxDelete: o.maxDelete } : {}),
    ...(direction === 'push' && o.itemize === true && o.dryRun !== true ? { itemize: true } : {}),
    ...(direction === 'push' && o.fsync === 'none' && o.dryRun !== true ? { noFsync: true } : {}),
    ...(direction === 'pull' && o.sizes?.min !== undefined ? { minSize: o.sizes.min } : {}),
    ...(direction === 'pull' && o.sizes?.max !== undefined ? { maxSize: o.sizes.max } : {}),
    ...(direction === 'pull' && o.filesFrom !== undefined ? { filesFrom: o.filesFrom } : {}),
    ...(direction === 'pull' && o.copyLinks !== undefined ? { copyLinks: o.copyLinks } : {}),
  };
}

/**
 * What a pull's request asks of the listener, checked before it is sent: a listener without these
 * features would send everything, at full speed (a dry run's listener has them all: dry-run came
 * after exclude and rate-limit).
 */
export function requirePullFeatures(o: TransferOptions): void {
  const { session } = o;
  if (o.excludeRules !== undefined)
    session.requireFeature('exclude', 'does not apply exclude patterns to pulls', 'pull without --exclude');
  requireFilter(session, o.excludeRules);
  if (o.bwlimit !== undefined)
    session.requireFeature('rate-limit', 'cannot cap the rate it sends a pull at', 'pull without --bwlimit');
  if (o.sizes !== undefined)
    session.requireFeature(
      'size-filter',
      'cannot leave out files by size (--min-size, --max-size)',
      'pull without them',
    );
  if (o.filesFrom !== undefined)
    session.requireFeature('files-from', 'cannot send what a list names (--files-from)', 'pull the paths one by one');
  if (o.copyLinks !== undefined)
    session.requireFeature(
      'copy-links',
      'cannot send symlinks as what they point to (-L, --copy-unsafe-links)',
      'pull without them',
    );
}
