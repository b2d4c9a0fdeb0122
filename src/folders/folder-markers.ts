// A shared folder's `.clawpeer/` directory is its marker, as Syncthing's `.stfolder`: the
// listener makes it when it first starts the folder (`folder add` makes it too), and remembers
// that it did in the home's `folders-started.json` (folder id and path). Missing afterwards, it
// means the folder's disk is not mounted, or the folder was deleted or moved: the folder is not
// synced then, so nothing is fetched into an empty mount point (filling the disk below it) and
// no peer is asked for anything. Making the directory again (`mkdir PATH/.clawpeer`) syncs the
// folder anew from its peers; the listener notices within seconds.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { FolderConfig } from '../home/folders-config.js';
import { markerMissingText, markerPresent } from '../folder-sync/synced-folder.js';
import { INTERNAL_DIR_NAME } from '../store/internal-names.js';
import { removeDeadTemps, writeFileAtomic } from '../support/atomic-file.js';
import { readBounded } from '../support/read-bounded.js';

export const FOLDERS_STARTED_FILE = 'folders-started.json';
/** Folders remembered at most (the oldest starts go first). */
const MAX_REMEMBERED = 1024;
const MAX_FILE_BYTES = 1 << 20;
/** How often a folder whose marker is gone is looked at again, ms. */
export const MARKER_POLL_MS = 2_000;

/** The folders (id and path) this home's listener has started, as kept in `folders-started.json`. */
export class StartedFolders {
  readonly #file: string;
  readonly #started: Map<string, number>;
  #written: Promise<void> = Promise.resolve();

  private constructor(file: string, started: Map<string, number>) {
    this.#file = file;
    this.#started = started;
  }

  /** The home's record; a missing or unreadable file is an empty one (every folder starts as new). */
  static async load(homeDir: string): Promise<StartedFolders> {
    const file = path.join(homeDir, FOLDERS_STARTED_FILE);
    await removeDeadTemps(file);
    const started = new Map<string, number>();
    try {
      const raw = JSON.parse((await readBounded(file, MAX_FILE_BYTES)).toString('utf8')) as {
        version?: unknown;
        folders?: unknown;
      };
      if (raw.version === 1 && Array.isArray(raw.folders))
        for (const f of raw.folders as ({ id?: unknown; path?: unknown; at?: unknown } | null)[])
          if (typeof f?.id === 'string' && typeof f.path === 'string' && typeof f.at === 'number')
            started.set(keyOf(f.id, f.path), f.at);
    } catch {
      // none yet, or unreadable: every folder counts as new (its marker is made, as before)
    }
    return new StartedFolders(file, started);
  }

  has(id: string, dir: string): boolean {
    return this.#started.has(keyOf(id, dir));
  }

  /** Remembers that folder `id` at `dir` was started; written before it returns. */
  async add(id: string, dir: string, nowMs = Date.now()): Promise<void> {
    if (this.has(id, dir)) return;
    this.#started.set(keyOf(id, dir), nowMs);
    while (this.#started.size > MAX_REMEMBERED) {
      const oldest = [...this.#started].reduce((a, b) => (b[1] < a[1] ? b : a));
      this.#started.delete(oldest[0]);
    }
    await this.#write();
  }

  /** Forgets folder `id` at any path (removed from config.json): added again, it is new. */
  async forget(id: string): Promise<void> {
    const keys = [...this.#started.keys()].filter((k) => (JSON.parse(k) as { id: string }).id === id);
    for (const k of keys) this.#started.delete(k);
    if (keys.length > 0) await this.#write();
  }

  async #write(): Promise<void> {
    const folders = [...this.#started].map(([key, at]) => ({ ...(JSON.parse(key) as object), at }));
    const write = this.#written.then(() =>
      writeFileAtomic(this.#file, JSON.stringify({ version: 1, folders }) + '\n', 0o600),
    );
    this.#written = write.catch(() => undefined);
    await write;
  }
}

const keyOf = (id: string, dir: string): string => JSON.stringify({ id, path: dir });

/**
 * The folder service's side: whether a folder may start (its marker there, or made now for a
 * folder never started), and a watch on the folders that may not, which calls `onBack` once the
 * marker is there again.
 */
export class FolderMarkers {
  readonly #started: StartedFolders;
  readonly #onBack: (folderId: string) => void;
  /** Folders whose marker is gone: folder id -> path. */
  readonly #gone = new Map<string, string>();
  #timer: NodeJS.Timeout | undefined;

  constructor(started: StartedFolders, onBack: (folderId: string) => void) {
    this.#started = started;
    this.#onBack = onBack;
  }

  /** Why folder `f` may not start (a folder started here before whose marker is gone), watched until it is back. */
  async missing(f: FolderConfig): Promise<string | undefined> {
    this.#gone.delete(f.id);
    if (!this.#started.has(f.id, f.path) || (await markerPresent(f.path))) return undefined;
    this.#gone.set(f.id, f.path);
    this.#timer ??= setInterval(() => void this.#poll(), MARKER_POLL_MS).unref();
    return markerMissingText(f.path);
  }

  /** Folder `f` starts in `dir` (made if missing): its marker made when missing, and remembered. */
  async started(f: FolderConfig, dir: string): Promise<void> {
    await mkdir(path.join(dir, INTERNAL_DIR_NAME), { recursive: true }); // as `folder add` (facade.ts makeFolderMarker)
    await this.#started.add(f.id, f.path);
  }

  /** Folder `id` left config.json: no longer watched, and new if it comes back. */
  async removed(id: string): Promise<void> {
    this.#gone.delete(id);
    await this.#started.forget(id);
  }

  close(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  async #poll(): Promise<void> {
    for (const [id, dir] of [...this.#gone]) {
      if (!(await markerPresent(dir)) || this.#gone.get(id) !== dir) continue;
      this.#gone.delete(id);
      this.#onBack(id);
    }
    if (this.#gone.size === 0) this.close();
  }
}
