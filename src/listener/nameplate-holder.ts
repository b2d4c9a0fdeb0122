// The listener's side of the nameplate directories: while a short-code invite of its home is
// open, the listener holds its nameplate in each directory (LAN discovery, the rendezvous), so a
// `pair join CODE` without --addr finds it even after `pair invite --no-wait` returned. A claim
// is released once the invite is no longer open (claimed by a joiner, withdrawn, or expired).
// A directory must accept the same node claiming a nameplate it holds already (the waiting
// `pair invite` claims it too).
import { watch, type FSWatcher } from 'node:fs';
import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { CodeInviteStore } from '../home/code-invites.js';
import type { NameplateClaim, NameplateDirectory } from '../pairing/nameplate-directory.js';

/**
 * How often the open invites are read, ms. A watch on the invites directory announces a new
 * invite at once; the poll is the fallback where fs.watch sees nothing (some network mounts).
 */
export const NAMEPLATE_POLL_MS = 1_000;
/** Quiet time after a change in the invites directory before it is read (an invite is 2 renames). */
const WATCH_DEBOUNCE_MS = 20;

export interface NameplateHolderOptions {
  readonly codeInvites: CodeInviteStore;
  readonly directories: readonly NameplateDirectory[];
  readonly log: Logger;
  readonly pollMs?: number;
}

export interface NameplateHolder {
  /** One pass now: claim what opened, release what closed (the timer runs it too). */
  sync(): Promise<void>;
  close(): Promise<void>;
}

export function holdOpenNameplates(o: NameplateHolderOptions): NameplateHolder {
  /** Per `nameplate/directory index`: the claim held (or the one being made). */
  const held = new Map<string, Promise<NameplateClaim | undefined>>();
  const stop = new AbortController();
  let running: Promise<void> = Promise.resolve();
  const pass = async (): Promise<void> => {
    let open: { nameplate: string; expiresAt: number }[];
    try {
      open = await o.codeInvites.openInvites();
    } catch (err) {
      o.log.warn('cannot read the code invites to announce their nameplates', { error: (err as Error).message });
      return;
    }
    const wanted = new Set<string>();
    for (const { nameplate, expiresAt } of open) {
      o.directories.forEach((d, i) => {
        const key = `${nameplate}/${i}`;
        wanted.add(key);
        if (held.has(key)) return;
        held.set(
          key,
          d.claim(Number(nameplate), { expiresAt, signal: stop.signal }).catch((err: unknown) => {
            const busy = err instanceof ClawpeerError && err.code === 'PEER_BUSY';
            o.log.warn(
              busy
                ? 'nameplate held by another node in a directory: joiners there will not find this one'
                : 'cannot claim a nameplate in a directory',
              { directory: d.name, nameplate, error: (err as Error).message },
            );
            return undefined;
          }),
        );
      });
    }
    for (const [key, claim] of held) {
      if (wanted.has(key)) continue;
      held.delete(key);
      await claim.then((c) => c?.release()).catch(() => undefined);
    }
  };
  const sync = (): Promise<void> => (running = running.then(pass));
  // The directory appears with the first invite, so the watch is (re)tried at each poll.
  let watcher: FSWatcher | undefined;
  let debounce: NodeJS.Timeout | undefined;
  const watchInvites = (): void => {
    if (watcher !== undefined || stop.signal.aborted) return;
    try {
      watcher = watch(o.codeInvites.dir, { persistent: false }, () => {
        clearTimeout(debounce);
        debounce = setTimeout(() => void sync(), WATCH_DEBOUNCE_MS);
        debounce.unref();
      });
      watcher.on('error', () => {
        watcher?.close();
        watcher = undefined;
      });
    } catch {
      watcher = undefined; // not there yet, or no fs.watch here: the poll covers it
    }
  };
  const timer =
    o.directories.length === 0
      ? undefined
      : setInterval(() => {
          watchInvites();
          void sync();
        }, o.pollMs ?? NAMEPLATE_POLL_MS);
  timer?.unref();
  if (o.directories.length > 0) {
    watchInvites();
    void sync();
  }
  return {
    sync,
    async close(): Promise<void> {
      if (timer !== undefined) clearInterval(timer);
      clearTimeout(debounce);
      watcher?.close();
      await running.catch(() => undefined);
      stop.abort();
      await Promise.all([...held.values()].map((c) => c.then((x) => x?.release()).catch(() => undefined)));
      held.clear();
    },
  };
}
