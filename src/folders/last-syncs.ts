// The end of the last completed sync of each shared folder with each of its peers, kept across
// listener restarts in the folder's `.clawpeer/last-syncs.json` (beside its revision log), so
// `status` after a restart says `last sync 5 min ago`, not `never synced`. The folder service
// loads a folder's file when it starts the folder and writes it after each sync that moved a
// time: one small atomic write per completed sync, none per file. A cache: a missing or
// unreadable file is an empty one, and a failed write is only logged.
import path from 'node:path';
import { INTERNAL_DIR_NAME } from '../store/internal-names.js';
import { removeDeadTemps, writeFileAtomic } from '../support/atomic-file.js';
import { readBounded } from '../support/read-bounded.js';

export const LAST_SYNCS_FILE = 'last-syncs.json';
const MAX_FILE_BYTES = 1 << 20;

export function lastSyncsFile(folderDir: string): string {
  return path.join(folderDir, INTERNAL_DIR_NAME, LAST_SYNCS_FILE);
}

/** The times in a folder's file, ms since the epoch by peer id (empty when missing or unreadable). */
export async function readLastSyncs(folderDir: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  try {
    // Bounded, and a regular file only: a FIFO there would hang the folder's start.
    const text = (await readBounded(lastSyncsFile(folderDir), MAX_FILE_BYTES)).toString('utf8');
    const raw = JSON.parse(text) as { version?: unknown; peers?: unknown };
    if (raw.version !== 1 || typeof raw.peers !== 'object' || raw.peers === null) return out;
    for (const [peer, v] of Object.entries(raw.peers as Record<string, { lastSyncAt?: unknown }>)) {
      const at = v?.lastSyncAt;
      if (typeof at === 'number' && Number.isSafeInteger(at) && at > 0) out.set(peer, at);
    }
  } catch {
    // none yet, or unreadable: as if never synced
  }
  return out;
}

interface Folder {
  readonly dir: string;
  readonly times: Map<string, number>;
  /** The last write of this folder's file: the next waits for it, so an older map never lands last. */
  written: Promise<void>;
}

/** The folders' last sync times as the folder service keeps them (by folder id). */
export class LastSyncs {
  readonly #folders = new Map<string, Folder>();
  readonly #onWriteError: (folderId: string, err: Error) => void;

  constructor(onWriteError: (folderId: string, err: Error) => void) {
    this.#onWriteError = onWriteError;
  }

  /** Reads folder `folderId`'s file in `dir` (again: a folder started anew may have moved). */
  async load(folderId: string, dir: string): Promise<void> {
    await removeDeadTemps(lastSyncsFile(dir));
    const times = await readLastSyncs(dir);
    this.#folders.set(folderId, { dir, times, written: Promise.resolve() });
  }

  /** The last sync of `folderId` with `peer` known here, ms since the epoch. */
  of(folderId: string, peer: string): number | undefined {
    return this.#folders.get(folderId)?.times.get(peer);
  }

  /** Keeps `at` as the last sync of the pair when it is newer than the one known: written to the folder's file. */
  record(folderId: string, peer: string, at: number): void {
    const f = this.#folders.get(folderId);
    if (f === undefined || (f.times.get(peer) ?? 0) >= at) return;
    f.times.set(peer, at);
    f.written = f.written.then(async () => {
      const peers = Object.fromEntries([...f.times].map(([id, lastSyncAt]) => [id, { lastSyncAt }]));
      await writeFileAtomic(lastSyncsFile(f.dir), JSON.stringify({ version: 1, peers }) + '\n', 0o600).catch(
        (err: unknown) => this.#onWriteError(folderId, err as Error),
      );
    });
  }

  /** The writes under way, done. */
  async flushed(): Promise<void> {
    await Promise.all([...this.#folders.values()].map((f) => f.written));
  }
}
