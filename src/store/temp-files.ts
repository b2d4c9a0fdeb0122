// Temp files a publish stages beside their final names (`.clawpeer-tmp-p<pid>-<hex>-<name>`):
// their names, and the sweep that deletes the ones no live transfer can own.

import { randomInt } from 'node:crypto';
import { lstat, readdir } from 'node:fs/promises';
import { lstatSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { LOCAL_NAME_RULES, normalizeSharePath } from '../transfer/paths.js';
import { processAlive } from '../support/process-alive.js';
import { isTempFileName, TEMP_FILE_PREFIX } from './internal-names.js';
import { scanTree } from './tree-scan.js';

const NAME_MAX_BYTES = 255;
const TEMP_RANDOM_BYTES = 6;

// The 12 hex digits need to be unique, not secret: a random start per process, then a counter
// (6 random bytes per name cost ~1% of receiving 10,000 small files in randomFillSync). O_EXCL
// still refuses a name that exists.
const TEMP_SERIAL_MODULUS = 2 ** (TEMP_RANDOM_BYTES * 8);
let tempSerial = randomInt(TEMP_SERIAL_MODULUS - 1); // randomInt takes ranges below 2^48

/**
 * `.clawpeer-tmp-p<pid>-<12 hex>-<basename>`, with the basename cut so the name fits NAME_MAX.
 * The pid names the writing process, so a sweep can tell a dead writer's leftovers from a live
 * transfer's files at once instead of waiting for them to age (removeStaleTempFiles).
 */
export function tempNameFor(baseName: string, pid = process.pid): string {
  tempSerial = (tempSerial + 1) % TEMP_SERIAL_MODULUS;
  const serial = tempSerial.toString(16).padStart(TEMP_RANDOM_BYTES * 2, '0');
  if (pid === process.pid) liveSerials.add(serial);
  const prefix = `${TEMP_FILE_PREFIX}p${pid}-${serial}-`;
  let base = baseName;
  while (Buffer.byteLength(prefix + base, 'utf8') > NAME_MAX_BYTES) base = Array.from(base).slice(0, -1).join('');
  return prefix + base;
}

/**
 * The serials of the temp names this process handed out and has not released: files it may still
 * write or rename. A file of this process's pid whose serial is not here is an orphan, left
 * where nothing of ours will touch it again: a user renamed its directory while a publish wrote
 * into it (the rename into place then failed, ENOENT). The sweep removes it at once, instead of
 * after STALE_TEMP_AGE_MS.
 */
const liveSerials = new Set<string>();

/** The serial in a temp file name (tempNameFor), or undefined for names without one. */
function serialOf(name: string): string | undefined {
  return TEMP_OWNER_PID.exec(name)?.[2];
}

/**
 * The temp file at `pathOrName` (named by tempNameFor) was renamed into place or removed, or
 * will never be written again: a file left under its name is now an orphan the sweep may delete.
 * Every user of tempNameFor calls it when done (a forgotten call only delays the cleanup).
 */
export function releaseTempName(pathOrName: string): void {
  const name = path.basename(pathOrName);
  if (tempFileOwnerPid(name) !== process.pid) return;
  const serial = serialOf(name);
  if (serial !== undefined) liveSerials.delete(serial);
}

/** Temp files untouched for this long are leftovers of a killed process: 1 hour. */
export const STALE_TEMP_AGE_MS = 3600 * 1000;

export interface StaleTempOptions {
  readonly nowMs: number;
  /** Only files whose status changed at least this long ago (default STALE_TEMP_AGE_MS). */
  readonly minAgeMs?: number;
  readonly signal?: AbortSignal;
}

/**
 * Deletes the `.clawpeer-tmp-*` files anywhere in the share that no live transfer can own (a
 * process killed mid-publish leaves them; resumable transfers keep their bytes in the partial
 * store instead): those whose name carries the pid of a process no longer running on this host,
 * and any whose status changed more than `minAgeMs` before `nowMs`. ctime, not mtime, measures
 * the age: the publisher sets a temp file's mtime to the sender's (possibly years old) just
 * before renaming it, while ctime moves with every write and cannot be set back.
 * Residual risk, accepted: a writer on another host or in another pid namespace sharing the
 * directory (a network file system, a volume shared by containers) looks dead; its transfer then
 * fails at commit and a rerun completes (nothing wrong is ever published). A dead writer's pid
 * reused by a live process only delays the cleanup to the age rule. Returns how many were removed.
 */
export async function removeStaleTempFiles(shareRoot: string, options: StaleTempOptions): Promise<number> {
  let removed = 0;
  const scan = scanTree(shareRoot, {
    rootName: null,
    onIssue: () => undefined,
    nameRules: LOCAL_NAME_RULES, // a push's `aux/` may hold temp files too (on Linux)
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  for await (const entry of scan) {
    if (entry.kind === 'dir' || !isTempFileName(path.posix.basename(entry.relPath))) continue;
    if (removeTempFileIfStale(path.join(shareRoot, ...entry.relPath.split('/')), options)) removed++;
  }
  return removed;
}

/**
 * Sweeps stale temp files where a transfer into `root` that lands at `relPath` stages its files:
 * the directory that holds `relPath` (its own entries only, not the subtrees of its other
 * entries) and, when `relPath` is a directory, everything under it. `relPath` '' sweeps all of
 * `root`. A missing `root` or `relPath` is nothing to sweep. Returns how many were removed.
 */
export async function removeStaleTempFilesAt(
  root: string,
  relPath: string,
  options: StaleTempOptions,
): Promise<number> {
  const rel = relPath === '' ? '' : normalizeSharePath(relPath, LOCAL_NAME_RULES);
  const isDir = async (p: string): Promise<boolean> => (await lstat(p).catch(() => undefined))?.isDirectory() === true;
  if (rel === '') return (await isDir(root)) ? removeStaleTempFiles(root, options) : 0;
  const segments = rel.split('/');
  const parent = path.join(root, ...segments.slice(0, -1));
  let removed = 0;
  for (const name of await readdir(parent).catch(() => [] as string[])) {
    if (isTempFileName(name) && removeTempFileIfStale(path.join(parent, name), options)) removed++;
  }
  const target = path.join(root, ...segments);
  if (await isDir(target)) removed += await removeStaleTempFiles(target, options);
  return removed;
}

/** The writer's pid in a temp file name (tempNameFor), or undefined for names without one. */
export function tempFileOwnerPid(name: string): number | undefined {
  const m = TEMP_OWNER_PID.exec(name);
  const pid = m?.[1] === undefined ? Number.NaN : Number(m[1]);
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
}

const TEMP_OWNER_PID = new RegExp(
  `^${TEMP_FILE_PREFIX.replace(/[.]/g, '\\.')}p(\\d{1,10})-([0-9a-f]{${TEMP_RANDOM_BYTES * 2}})-`,
);

/**
 * Unlinks `abs` (a temp file or link, never a directory) if its writer is gone (another
 * process that died, or this one, which released the name) or it is old enough; true when removed. Synchronous: the sync scanner calls it mid-walk.
 */
export function removeTempFileIfStale(abs: string, options: StaleTempOptions): boolean {
  try {
    const st = lstatSync(abs);
    if (st.isDirectory()) return false;
    const name = path.basename(abs);
    const owner = tempFileOwnerPid(name);
    const ownerGone =
      owner === process.pid ? !liveSerials.has(serialOf(name) ?? '') : owner !== undefined && !processAlive(owner);
    if (!ownerGone && options.nowMs - st.ctimeMs < (options.minAgeMs ?? STALE_TEMP_AGE_MS)) return false;
    unlinkSync(abs);
    return true;
  } catch {
    return false; // gone already, or not ours to delete
  }
}
