// One sync of a folder at a time: an exclusive lock file at `<folder>/.clawpeer/sync.lock`.
// The same protocol (acquireFile) keeps the home's peers.json to one writer at a time.
//
// Goals: two clawpeer processes (or two syncs in one process) never scan, apply or reconcile
// the same folder at once; a lock left behind by a process that died (SIGKILL, power loss) is
// recognised and broken instead of blocking the folder forever; waiting is bounded and
// cancellable; the error names the holder so a user can act.
// Non-goals: locking across machines (a folder on a network file system shared by two hosts:
// the pid check only knows this host, so a lock from another host is never broken, see
// below), advisory locks on content files (other programs may still write the folder; the
// scanner copes with that), fairness between waiters.
//
// Protocol: create the file with O_CREAT|O_EXCL ('wx') and write "<pid> <hostname>\n"; the
// kernel guarantees one winner. A loser reads the holder; if the holder is on this host and
// `kill(pid, 0)` says ESRCH, the lock is stale: it is renamed to a name unique to us (rename is
// atomic, so of several waiters breaking the same lock one renames it and the rest see ENOENT
// and retry); if what we renamed away is not the stale content we read (the holder changed in
// between), it is put back with link() (which fails rather than replace a newer lock).
// A lock file with unparsable content (its writer died between create and write) is stale after
// UNPARSABLE_LOCK_STALE_MS. Residual risks, accepted: a dead holder's pid reused by an unrelated live process makes the
// lock look held (the error says which file to delete); the tiny window between our rename and
// link-back in the changed-holder case.

import { link, mkdir, open, readFile, realpath, rename, stat, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ClawpeerError, ioError } from '../errors.js';
import { processAlive } from '../support/process-alive.js';
import { INTERNAL_DIR_NAME } from './internal-names.js';
// "the disk is full" for ENOSPC (a full folder failed its sync at the lock file, saying ENOSPC).

/** Name of the lock file inside `.clawpeer/`. */
export const SYNC_LOCK_FILE_NAME = 'sync.lock';
/** How often a waiter retries, ms. */
export const LOCK_POLL_INTERVAL_MS = 50;
/** Longest lock file content read, bytes (a pid and a host name). */
const MAX_LOCK_FILE_BYTES = 512;
/**
 * A lock file whose content cannot be parsed (its writer died between create and write) is
 * stale once it is this old, ms; younger, it may be a holder still writing it.
 */
export const UNPARSABLE_LOCK_STALE_MS = 10_000;

export interface LockHolder {
  readonly pid: number;
  readonly host: string;
}

export interface AcquireFolderLockOptions {
  /** How long to wait for a held lock, ms. Default 0: fail at once if held. */
  readonly waitMs?: number;
  /** Retry interval while waiting, ms. Default LOCK_POLL_INTERVAL_MS. */
  readonly pollMs?: number;
  readonly signal?: AbortSignal;
  /** Called each time the lock is found held by another live holder, before waiting again (a listener ends a dead peer's sync there). */
  readonly onHeld?: () => void;
  /** Make the lock file's directory when missing (default); false: the lock fails (IO, ENOENT) without it. */
  readonly makeDir?: boolean;
}

function errnoCode(err: unknown): string | undefined {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).code === 'string'
    ? (err as NodeJS.ErrnoException).code
    : undefined;
}

/** Parses "<pid> <host>"; undefined for anything else (a torn or foreign file). */
export function parseLockFile(text: string): LockHolder | undefined {
  const m = /^(\d{1,10}) (\S{0,255})\n?$/.exec(text);
  if (m === null) return undefined;
  const pid = Number(m[1]);
  return pid > 0 ? { pid, host: m[2] ?? '' } : undefined;
}

/** The lock file's path for `folder`. */
export function folderLockPath(folder: string): string {
  return path.join(path.resolve(folder), INTERNAL_DIR_NAME, SYNC_LOCK_FILE_NAME);
}

/**
 * This process's turns at each lock file (by real path): its holder, or an acquire taking it,
 * ends the turn at release. Two holders in one process write the same "<pid> <host>", which the
 * file cannot tell apart, so an acquire waits for this process's turn first; holding it, a lock
 * file naming this process is stale (its release could not reach it: the folder was swapped
 * while a sync held it, a disk unmounted, and it is back now).
 */
const turns = new Map<string, Promise<void>>();

/** The key of `file` in `turns`: its directory's real path (one file by two paths is one turn). */
async function turnKey(file: string): Promise<string> {
  const dir = await realpath(path.dirname(file)).catch(() => path.resolve(path.dirname(file)));
  return path.join(dir, path.basename(file));
}

/** A held lock. Release it (in a finally) when the sync ends; a process exit also frees it in effect (stale). */
export class FolderLock {
  readonly file: string;
  readonly #content: string;
  readonly #endTurn: () => void;
  #released = false;

  private constructor(file: string, content: string, endTurn: () => void) {
    this.file = file;
    this.#content = content;
    this.#endTurn = endTurn;
  }

  /**
   * Takes the sync lock of `folder`, breaking a stale one, waiting up to `waitMs` for a live one.
   * Throws ClawpeerError FOLDER_BUSY naming the holder when it stays held, ABORTED on the signal, IO
   * when the lock file cannot be created or read.
   */
  static async acquire(folder: string, options: AcquireFolderLockOptions = {}): Promise<FolderLock> {
    return FolderLock.acquireFile(
      folderLockPath(folder),
      options,
      (who, waited) =>
        new ClawpeerError(
          'FOLDER_BUSY',
          `folder ${path.resolve(folder)} is being synced by ${who} (lock file ${folderLockPath(folder)}${waited}); if no clawpeer is running there, delete the lock file`,
        ),
    );
  }

  /**
   * Takes the lock file `file` by the same protocol (other state than a folder's: the home's
   * peers.json). `busy` makes the error for a lock still held after the wait, from the holder
   * ("pid 12 on host") and the wait (", waited 100 ms" or '').
   */
  static async acquireFile(
    file: string,
    options: AcquireFolderLockOptions,
    busy: (who: string, waited: string) => ClawpeerError,
  ): Promise<FolderLock> {
    const waitMs = options.waitMs ?? 0;
    const pollMs = options.pollMs ?? LOCK_POLL_INTERVAL_MS;
    const { signal } = options;
    if (!(waitMs >= 0) || !(pollMs > 0))
      throw new ClawpeerError('USAGE', `folder lock waitMs must be >= 0 and pollMs > 0, got ${waitMs} and ${pollMs}`);
    const host = hostname();
    const content = `${process.pid} ${host}\n`;
    try {
      if (options.makeDir !== false) await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    } catch (err) {
      throw ioError('create the directory of', file, err);
    }
    const deadline = performance.now() + waitMs;
    const aborted = (cause: unknown): ClawpeerError =>
      new ClawpeerError('ABORTED', `waiting for ${file} aborted`, { cause });
    const pause = async (): Promise<void> => {
      try {
        await sleep(Math.min(pollMs, Math.max(1, deadline - performance.now())), undefined, signal ? { signal } : {});
      } catch (err) {
        throw aborted(err);
      }
    };
    // This process's turn first (its holder here is live: the listener may end it, onHeld).
    const key = await turnKey(file);
    for (let turn = turns.get(key); turn !== undefined; turn = turns.get(key)) {
      if (signal?.aborted === true) throw aborted(signal.reason);
      options.onHeld?.();
      if (performance.now() >= deadline)
        throw busy(`pid ${process.pid} on ${host}`, waitMs > 0 ? `, waited ${waitMs} ms` : '');
      await Promise.race([turn, pause()]);
    }
    let endTurn = (): void => undefined;
    const mine = new Promise<void>((resolve) => (endTurn = resolve));
    turns.set(key, mine);
    const done = (): void => {
      if (turns.get(key) === mine) turns.delete(key);
      endTurn();
    };
    try {
      return await FolderLock.#acquireTurn(file, content, done, { ...options, deadline, busy, aborted, pause });
    } catch (err) {
      done();
      throw err;
    }
  }

  /** acquireFile's protocol on the file, this process's turn held. */
  static async #acquireTurn(
    file: string,
    content: string,
    done: () => void,
    o: AcquireFolderLockOptions & {
      readonly deadline: number;
      readonly busy: (who: string, waited: string) => ClawpeerError;
      readonly aborted: (cause: unknown) => ClawpeerError;
      readonly pause: () => Promise<void>;
    },
  ): Promise<FolderLock> {
    const host = hostname();
    for (;;) {
      if (o.signal?.aborted === true) throw o.aborted(o.signal.reason);
      if (await FolderLock.#tryCreate(file, content)) return new FolderLock(file, content, done);
      const holder = await FolderLock.#readHolder(file);
      if (holder === 'gone') continue; // released between our create and read: retry at once
      // This process's pid, with its turn held here: no holder of this process (see `turns`).
      const stale =
        holder === undefined
          ? await FolderLock.#olderThan(file, UNPARSABLE_LOCK_STALE_MS)
          : holder.host === host && (holder.pid === process.pid || !processAlive(holder.pid));
      if (stale) {
        await FolderLock.#breakStale(file, holder);
        continue;
      }
      o.onHeld?.();
      if (performance.now() >= o.deadline) {
        const who = holder === undefined ? 'an unreadable lock file' : `pid ${holder.pid} on ${holder.host}`;
        throw o.busy(who, (o.waitMs ?? 0) > 0 ? `, waited ${o.waitMs} ms` : '');
      }
      await o.pause();
    }
  }

  /** Releases the lock (idempotent). Removes the file only if it is still ours. */
  async release(): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    try {
      let text: string;
      try {
        text = await readFile(this.file, 'utf8');
      } catch (err) {
        if (errnoCode(err) === 'ENOENT') return;
        throw ioError('read', this.file, err);
      }
      if (text !== this.#content) return; // someone broke our lock (we looked dead): not ours to remove
      try {
        await unlink(this.file);
      } catch (err) {
        if (errnoCode(err) !== 'ENOENT') throw ioError('remove', this.file, err);
      }
    } finally {
      this.#endTurn(); // after the file is gone: the next acquire here takes it anew
    }
  }

  get released(): boolean {
    return this.#released;
  }

  /** Creates the lock file: false when it exists already. */
  static async #tryCreate(file: string, content: string): Promise<boolean> {
    let handle;
    try {
      handle = await open(file, 'wx', 0o600);
    } catch (err) {
      if (errnoCode(err) === 'EEXIST') return false;
      throw ioError('create', file, err);
    }
    try {
      await handle.writeFile(content, 'utf8');
      await handle.sync();
    } catch (err) {
      await handle.close().catch(() => undefined);
      await unlink(file).catch(() => undefined);
      throw ioError('write', file, err);
    }
    await handle.close();
    return true;
  }

  /** The holder, undefined for unparsable content, 'gone' when the file vanished. */
  static async #readHolder(file: string): Promise<LockHolder | undefined | 'gone'> {
    try {
      const text = await readFile(file, 'utf8');
      return text.length > MAX_LOCK_FILE_BYTES ? undefined : parseLockFile(text);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return 'gone';
      throw ioError('read', file, err);
    }
  }

  static async #olderThan(file: string, ageMs: number): Promise<boolean> {
    try {
      return Date.now() - (await stat(file)).mtimeMs > ageMs;
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return false;
      throw ioError('stat', file, err);
    }
  }

  static async #breakStale(file: string, holder: LockHolder | undefined): Promise<void> {
    const aside = `${file}.stale-${process.pid}-${Math.random().toString(36).slice(2)}`;
    try {
      await rename(file, aside);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return; // another waiter broke it first
      throw ioError('break the stale lock', file, err);
    }
    try {
      const moved = parseLockFile(await readFile(aside, 'utf8'));
      // None of this process took it meanwhile: we hold its turn here (`turns`).
      const same =
        moved === undefined
          ? holder === undefined
          : holder !== undefined && moved.pid === holder.pid && moved.host === holder.host;
      if (!same) {
        // The lock changed hands after we read it: put the live one back unless a newer exists.
        await link(aside, file).catch((err: unknown) => {
          if (errnoCode(err) !== 'EEXIST') throw err;
        });
      }
    } finally {
      await unlink(aside).catch(() => undefined);
    }
  }
}
