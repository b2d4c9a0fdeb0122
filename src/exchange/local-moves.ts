// Content a sync holds already at a path it deletes, published at its new path by a rename
// rather than a copy. A file or directory renamed on a peer arrives as deletions and additions
// of the same content (sync-plan.ts renamesAmong pairs them); made from the chunks here, each
// new file cost a staged file, its write and fsync, and the deleted file's move into the
// folder's history: 20,000 files of 8 KiB took 54-80 s to land.
//
// Goals: the fetch's end state (the file at its new path with the head's mode and mtime, gone
// from the old one) as durable as a commit makes it (the directories of both names fsynced, the
// file too when its mode or mtime had to change), and nothing lost: the caller says whether the
// old file is still what its head says (`ready`), and nothing may be at the new path (a file
// there is left to the fetch, which keeps what it replaces). The deleted path gets no history
// blob: its content lives on at the new path, where `restore` finds it (a live file of the same
// root), as on the peer that renamed it.
// Non-goals: which paths pair (sync-plan.ts); a move that fails is not an error: the file stays
// where it was and the caller fetches that path as before.
import {
  lstatSync,
  openSync,
  closeSync,
  realpathSync,
  renameSync,
  chmodSync,
  utimesSync,
  type BigIntStats,
} from 'node:fs';
import { fsync as fsyncCb } from 'node:fs';
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { ClawpeerError } from '../errors.js';
import { ConfinedDirs } from '../store/confined-dirs.js';
import { syncDir } from '../store/partial-store.js';
import { PUBLISH_MODE_MASK, toSeconds } from '../store/staged-file.js';
import { forEachBounded } from '../support/for-each-bounded.js';
import { isConfinedRealpath } from '../transfer/paths.js';

const fsyncAsync = promisify(fsyncCb);

/** Directory fsyncs at once, as a commit does. */
const FSYNC_CONCURRENCY = 8;
/** Moves between two turns of the event loop: the session's messages are not kept waiting. */
const MOVES_PER_TURN = 256;

export interface LocalMove {
  /** Path (inside the folder) of the file whose content moves. */
  readonly from: string;
  /** Its new path. */
  readonly to: string;
  /** The mode and mtime the new path's head has. */
  readonly mode: number;
  readonly mtimeMs: number;
}

/** Resolves a path inside the folder whose parent directory really lies inside it. */
export async function confinedPath(folderReal: string, rel: string): Promise<string> {
  const abs = path.join(folderReal, ...rel.split('/'));
  let parentReal: string;
  try {
    parentReal = await realpath(path.dirname(abs));
  } catch {
    return abs; // the parent does not exist: nothing there to touch
  }
  if (!isConfinedRealpath(folderReal, parentReal))
    throw new ClawpeerError('PATH_INVALID', `${rel} refused: its directory resolves outside the folder`);
  return path.join(parentReal, path.basename(abs));
}

/**
 * Renames each move whose `ready` says yes (asked just before its rename) into place under
 * `folderReal`; returns the lstat of each file moved, at its new path. The calls are synchronous:
 * metadata calls of microseconds, where awaited ones cost a thread-pool round trip each.
 */
export async function applyLocalMoves<M extends LocalMove>(
  folderReal: string,
  moves: readonly M[],
  o: { readonly fsync: boolean; readonly ready: (move: M) => boolean },
): Promise<Map<M, BigIntStats>> {
  const dirty = new Set<string>();
  const dirs = new ConfinedDirs(folderReal, dirty);
  const realParents = new Map<string, string | undefined>();
  const realParent = (abs: string): string | undefined => {
    const dir = path.dirname(abs);
    if (!realParents.has(dir)) {
      let real: string | undefined;
      try {
        real = realpathSync.native(dir);
      } catch {
        real = undefined;
      }
      realParents.set(dir, real !== undefined && isConfinedRealpath(folderReal, real) ? real : undefined);
    }
    return realParents.get(dir);
  };
  const moved = new Map<M, BigIntStats>();
  const toSync: string[] = [];
  let n = 0;
  for (const m of moves) {
    if (++n % MOVES_PER_TURN === 0) await new Promise((resolve) => setImmediate(resolve));
    try {
      const fromDir = realParent(path.join(folderReal, ...m.from.split('/')));
      if (fromDir === undefined || !o.ready(m)) continue;
      const toRel = path.posix.dirname(m.to);
      const toDir = dirs.dir(toRel === '.' ? '' : toRel, true);
      const toAbs = path.join(toDir, path.posix.basename(m.to));
      if (lstatSync(toAbs, { throwIfNoEntry: false }) !== undefined) continue; // the fetch keeps what it replaces
      renameSync(path.join(fromDir, path.posix.basename(m.from)), toAbs);
      dirty.add(fromDir).add(toDir);
      let st = lstatSync(toAbs, { bigint: true });
      const mode = m.mode & PUBLISH_MODE_MASK;
      const modeOff = (Number(st.mode) & PUBLISH_MODE_MASK) !== mode;
      const mtimeOff = Number(st.mtimeNs / 1_000_000n) !== m.mtimeMs;
      if (modeOff) chmodSync(toAbs, mode);
      if (mtimeOff) utimesSync(toAbs, new Date(), toSeconds(m.mtimeMs));
      if (modeOff || mtimeOff) {
        st = lstatSync(toAbs, { bigint: true });
        toSync.push(toAbs);
      }
      moved.set(m, st);
    } catch {
      continue; // stays where it was (or never left): fetched as before
    }
  }
  if (o.fsync) {
    await forEachBounded(toSync, FSYNC_CONCURRENCY, async (abs) => {
      const fd = openSync(abs, 'r');
      try {
        await fsyncAsync(fd);
      } finally {
        closeSync(fd);
      }
    });
    await forEachBounded([...dirty], FSYNC_CONCURRENCY, syncDir);
  }
  return moved;
}
