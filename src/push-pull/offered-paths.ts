// `receive`: what the sender offers, from its listing, checked before anything is pulled. The
// sender's listing is its word alone: an honest `send` lists each named path once, by its own
// name, at the root of a share (send-by-code.ts sharesOfPaths), so anything else (a name that
// climbs out or holds a separator, clawpeer's own names, control characters, a symlink, one
// name offered twice, which a second pull could write through, more names than a command line
// holds) comes from a sender that is not `clawpeer send`: the receive is refused (PROTOCOL)
// before a single pull, naming what was wrong.
import { ClawpeerError } from '../errors.js';
import { escapeToShow } from '../format.js';
import type { ListEntry } from '../protocol/messages.js';
import type { PeerSession } from '../session/session.js';
import { isInternalPath } from '../store/internal-names.js';
import { normalizeSharePath, PEER_NAME_RULES } from '../transfer/paths.js';
import { listRemote } from './list-client.js';

/** Paths a receive takes at most (as many as `pull --files-from` lists). */
export const MAX_OFFERED_PATHS = 100_000;

/** A share and a path in it on the peer, as its listing shows it (a directory's size is 0). */
export interface OfferedPath {
  readonly share: string;
  readonly path: string;
  readonly kind: ListEntry['kind'];
  readonly size: number;
}

/** What is wrong with a name a sender lists at a share's root, or undefined. */
export function offeredNameProblem(entry: Pick<ListEntry, 'path' | 'kind'>): string | undefined {
  const name = entry.path;
  if (name.includes('/')) return 'is not a single name (it holds a "/")';
  let normal: string;
  try {
    // Windows' rules are the receiving publisher's, per path (push-pull's nameRules).
    normal = normalizeSharePath(name, PEER_NAME_RULES);
  } catch (err) {
    const message = (err as Error).message;
    return `is no name a file may land under: ${message.slice(message.indexOf(' refused: ') + ' refused: '.length)}`;
  }
  if (isInternalPath(normal)) return "is a name reserved for clawpeer's own files";
  if (entry.kind === 'symlink') return 'is a symlink (`send` offers what a link leads to, never the link)';
  return undefined;
}

/**
 * Every path the peer's shares list at their roots, checked (see the top); PROTOCOL naming the
 * first that is not what `clawpeer send` offers, or when there are more than `max`.
 */
export async function offeredPaths(
  session: PeerSession,
  signal: AbortSignal,
  max = MAX_OFFERED_PATHS,
): Promise<OfferedPath[]> {
  const list = (share: string): ReturnType<typeof listRemote> =>
    listRemote({ session, share, path: '', recursive: false, signal });
  const refuse = (why: string): never => {
    throw new ClawpeerError('PROTOCOL', `the sender ${session.peerId} ${why}: nothing was received`);
  };
  const shares: string[] = [];
  for await (const batch of list('')) shares.push(...batch.shares.map((s) => s.name));
  // Each share is one more listing asked for: no more of them than of paths.
  if (shares.length > max)
    refuse(`offers ${shares.length.toLocaleString('en-US')} shares, more than ${max.toLocaleString('en-US')}`);
  const out: OfferedPath[] = [];
  const seen = new Set<string>();
  for (const share of shares)
    for await (const batch of list(share))
      for (const e of batch.entries) {
        const shown = escapeToShow(JSON.stringify(e.path));
        const problem = offeredNameProblem(e);
        if (problem !== undefined) refuse(`offers ${shown}, which ${problem}`);
        const key = normalizeSharePath(e.path, PEER_NAME_RULES);
        if (seen.has(key)) refuse(`offers ${shown} twice`);
        seen.add(key);
        if (out.length >= max) refuse(`offers more than ${max.toLocaleString('en-US')} paths`);
        out.push({ share, path: e.path, kind: e.kind, size: e.size });
      }
  return out;
}
