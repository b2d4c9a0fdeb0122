// Tells a resident node when a synced folder's scan can be skipped: nothing in the tree changed
// since the last scan began.
//
// Goals: a no-op sync of a large folder without stat'ing every file (Syncthing's model: a
// watcher, plus a full rescan every so often). One inotify watch per directory (not per file,
// as Node's recursive fs.watch does on Linux), each set before its directory is read, so an
// entry created after the read raises an event. The answer errs one way only: any event, any
// watcher error, a directory still being added, or an old scan means "scan".
// Why a boolean is enough even when the kernel drops events (inotify queue overflow): a drop
// happens only behind a full queue of undelivered events, and those still arrive and mark the
// folder changed; the scan that follows reads the disk as it is.
// Ignored paths (the folder's .clawpeerignore, sync-ignore.ts) are what a scan neither enters nor
// records, so a change there changes nothing a scan would find: ignored directories get no watch
// (a node_modules tree would take thousands), and an event of a path ignored whatever its kind
// is dropped (no rescan, and peers that watch the share are not told). An edit of the ignore
// file itself counts, and the rules are read again before the follow-up re-reads the root, so a
// directory no longer ignored gets its watches. A malformed file means no rules: more events,
// never fewer (the sync reports the file's error).
// Which paths changed: every event names a directory and (nearly always) an entry of it; the
// entries named since the last scan began are kept (up to MAX_NAMED_PATHS), so a scan can look
// at just those when each is a plain file change (folder-scanner.ts `onlyChanged`: a file
// edited, chmod'ed, created or removed raises its name). Anything else there (a directory, an
// event without a name, too many paths or events) means the whole walk.
// Non-goals: network file systems (their remote changes raise no events: never skipped there).
import { lstatSync, watch, type FSWatcher } from 'node:fs';
import { lstat, readdir, statfs } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../logger.js';
import { isInternalDirName, isTempFileName } from '../store/internal-names.js';
import { IGNORE_FILE_NAME, loadSyncIgnore, syncIgnoreFrom, type SyncIgnore } from './sync-ignore.js';
import { QuietTimer } from '../support/quiet-timer.js';

/** Quiet time after the last event before the watcher follows up on a burst of them, ms. */
const FOLLOW_UP_DELAY_MS = 100;
/** Longest a follow-up waits under a steady stream of events, ms. */
const FOLLOW_UP_MAX_DELAY_MS = 1_000;

/** Paths named by events that a scan may look at alone; past this the whole tree is walked. */
export const MAX_NAMED_PATHS = 1024;
/**
 * Events since a scan began past which the whole tree is walked whatever they named. The kernel
 * drops events only behind a full queue (fs.inotify.max_queued_events, 16384 by default), and
 * every event of that queue is delivered after the drop, so a period in which one was dropped
 * counts more than this: a dropped creation is never left to a scan of named paths alone.
 */
export const MAX_NAMED_EVENTS = 4096;

/** A skipped scan is never trusted for longer than this after the last real one (Syncthing rescans hourly). */
export const MAX_SCAN_SKIP_AGE_MS = 3_600_000;

/**
 * statfs magic numbers of file systems whose changes may come from elsewhere without an event
 * here: NFS, SMB/CIFS, FUSE (sshfs and friends), 9p, Ceph, AFS.
 */
const REMOTE_FS_TYPES = new Set([
  0x6969, 0xff534d42, 0xfe534d42, 0x517b, 0x65735546, 0x01021997, 0x00c36400, 0x5346414f,
]);

/**
 * statfs magic numbers of file systems whose directories' link count is 2 plus their number of
 * subdirectories (ext2/3/4, XFS, tmpfs): a follow-up skips re-reading a directory whose count
 * has not moved (#linksUnchanged). Elsewhere (btrfs says 1) every dirty directory is re-read.
 */
const SUBDIR_LINK_FS_TYPES = new Set([0xef53, 0x58465342, 0x01021994]);

export interface FolderWatcherOptions {
  readonly log: Logger;
  /** Clock for the skip age, ms (tests). */
  readonly now?: () => number;
  readonly maxSkipAgeMs?: number;
  /** Told about every event outside .clawpeer: the directory and the entry name (null: not given). */
  readonly onEvent?: (dir: string, name: string | null) => void;
}

export class FolderWatcher {
  readonly root: string;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #maxSkipAgeMs: number;
  /** Told about every event: the onEvent option, and subscribers added and removed at any time (a listener's share watches). */
  readonly #subscribers = new Set<(dir: string, name: string | null) => void>();
  /** Watched directories and the inode each watch is on (a path can later name another directory). */
  readonly #watchers = new Map<string, { readonly watcher: FSWatcher; readonly ino: bigint }>();
  /** Bumped by every event and every completed addition of watches. */
  #generation = 0;
  /** Watch additions (walks) in progress. */
  #pending = 0;
  /** Set for good by a watcher error or an unwatchable file system: never skip again. */
  #broken: string | undefined;
  #closed = false;
  /** Generation at the start of the last certified scan, and when it started. */
  #certified: { generation: number; atMs: number } | undefined;
  /** Directories with events since the last follow-up: re-read for new subdirectories. */
  readonly #dirtyDirs = new Set<string>();
  /** The file system counts subdirectories in a directory's links (SUBDIR_LINK_FS_TYPES). */
  #subdirLinks = false;
  /**
   * Watched directories as last read whole: their link count, kept only when it was 2 plus the
   * subdirectories the read found, and those subdirectories' names. Dropped when an event there
   * names one of them or no entry (a subdirectory may have gone while another came: the count
   * did not move), or its watch is lost.
   */
  readonly #listedLinks = new Map<string, { readonly links: bigint; readonly subdirs: ReadonlySet<string> }>();
  /** Directories being read whole, and the entries events named there meanwhile ('' for none). */
  readonly #namedWhileListing = new Map<string, Set<string>[]>();
  /** Watched directories an event named (removed, moved, or made again): watched anew if still there. */
  readonly #fresh = new Set<string>();
  readonly #followUp = new QuietTimer(FOLLOW_UP_DELAY_MS, FOLLOW_UP_MAX_DELAY_MS, () => {
    void this.#followUpEvents().finally(() => this.#additionDone());
  });
  #idleWaiters: Array<() => void> = [];
  /** The folder's ignore rules, as last read. */
  #ignore: SyncIgnore = syncIgnoreFrom([]);
  /** The ignore file changed since it was read: read it again before the follow-up. */
  #ignoreStale = false;
  /** Root-relative paths events named since the last scan began; 'many' past MAX_NAMED_PATHS or after an event without a name. */
  #named: Set<string> | 'many' = new Set();
  /** Events counted into #named since the last scan began. */
  #namedEvents = 0;

  private constructor(root: string, o: FolderWatcherOptions) {
    this.root = root;
    this.#log = o.log;
    this.#now = o.now ?? Date.now;
    this.#maxSkipAgeMs = o.maxSkipAgeMs ?? MAX_SCAN_SKIP_AGE_MS;
    if (o.onEvent !== undefined) this.#subscribers.add(o.onEvent);
  }

  /** Starts watching `root` (a real path). The tree is walked in the background; until that ends, no scan is skipped. */
  static start(root: string, o: FolderWatcherOptions): FolderWatcher {
    const w = new FolderWatcher(root, o);
    w.#pending++;
    void w.#startWalk().finally(() => w.#additionDone());
    return w;
  }

  async #startWalk(): Promise<void> {
    try {
      const fs = await statfs(this.root);
      if (REMOTE_FS_TYPES.has(fs.type)) {
        this.#break(
          `${this.root} is on a network or FUSE file system (type 0x${fs.type.toString(16)}): its changes may raise no events here`,
        );
        return;
      }
      this.#subdirLinks = SUBDIR_LINK_FS_TYPES.has(fs.type);
    } catch (err) {
      this.#break(`cannot statfs ${this.root}: ${(err as Error).message}`);
      return;
    }
    await this.#readIgnore();
    await this.#walk(this.root);
  }

  async #readIgnore(): Promise<void> {
    this.#ignoreStale = false;
    try {
      this.#ignore = await loadSyncIgnore(this.root);
    } catch (err) {
      this.#ignore = syncIgnoreFrom([]);
      this.#log.debug('folder watcher: the ignore file cannot be used; watching everything', {
        folder: this.root,
        error: (err as Error).message,
      });
    }
  }

  /** The root-relative '/'-path of `abs`. */
  #relOf(abs: string): string {
    return path.relative(this.root, abs).split(path.sep).join('/');
  }

  /** Directories watched (tests). */
  get watchedDirs(): number {
    return this.#watchers.size;
  }

  /** True when the folder is known unchanged since the last scan began: that scan's record still holds. */
  canSkipScan(): boolean {
    return this.#trusted() && this.#certified?.generation === this.#generation;
  }

  /** The log was changed apart from the disk (a revert): the next scan looks at everything, events or not. */
  distrust(): void {
    this.#certified = undefined;
  }

  /**
   * The paths events named since the last scan began, when the watcher vouches that nothing
   * else changed (as for canSkipScan, but events allowed); undefined when it cannot, or events
   * named none or too many. Ask before scanStarting().
   */
  changedSinceScan(): readonly string[] | undefined {
    // Nothing named but something counted (canSkipScan said no): not a list to trust.
    return this.#trusted() && this.#named !== 'many' && this.#named.size > 0 ? [...this.#named] : undefined;
  }

  /** The last scan was certified, recently, and every directory has had its watch since. */
  #trusted(): boolean {
    const c = this.#certified;
    return (
      c !== undefined &&
      !this.#closed &&
      this.#broken === undefined &&
      this.#pending === 0 &&
      this.#now() - c.atMs < this.#maxSkipAgeMs &&
      this.#rootIsWatched()
    );
  }

  /** Call as a scan starts; call the result when it ends: `certified` when it recorded everything it saw (no unstable or unreadable entries). */
  scanStarting(): (certified: boolean) => void {
    if (!this.#closed && this.#broken === undefined && this.#pending === 0 && !this.#rootIsWatched()) {
      // The folder itself was replaced (removed and made again): nothing of ours watches the new one.
      this.#unwatchUnder(this.root);
      this.#pending++;
      void this.#walk(this.root).finally(() => this.#additionDone());
    }
    const covered = this.#pending === 0 && this.#broken === undefined && !this.#closed;
    const generation = this.#generation;
    const atMs = this.#now();
    this.#certified = undefined;
    this.#named = new Set(); // what happens from now on is for the next scan
    this.#namedEvents = 0;
    return (certified) => {
      if (covered && certified) this.#certified = { generation, atMs };
    };
  }

  /** How many subscribers it has now. */
  get subscriberCount(): number {
    return this.#subscribers.size;
  }

  /** Calls `listener` with every event outside .clawpeer from now on, until the returned function is called. */
  subscribe(listener: (dir: string, name: string | null) => void): () => void {
    this.#subscribers.add(listener);
    return () => this.#subscribers.delete(listener);
  }

  close(): void {
    this.#closed = true;
    this.#subscribers.clear();
    this.#followUp.cancel();
    this.#unwatchUnder(this.root);
  }

  /** The root's watch is on the directory now at the root's path (its parent is not watched: no event tells). */
  #rootIsWatched(): boolean {
    const watched = this.#watchers.get(this.root);
    if (watched === undefined) return false;
    try {
      return lstatSync(this.root, { bigint: true }).ino === watched.ino;
    } catch {
      return false;
    }
  }

  #break(reason: string): void {
    if (this.#broken !== undefined) return;
    this.#broken = reason;
    this.#generation++;
    this.#log.warn('folder watcher off: changes in this folder are found by scanning only', {
      folder: this.root,
      reason,
    });
    this.#unwatchUnder(this.root);
  }

  #additionDone(): void {
    this.#pending--;
    this.#generation++; // a scan that began while watches were being added did not have them all
    if (this.#pending === 0) for (const wake of this.#idleWaiters.splice(0)) wake();
  }

  /** Resolves once no directory walk is in progress (the tree is covered as far as events told). */
  whenIdle(): Promise<void> {
    if (this.#pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /**
   * Watches `dir`, then reads it and walks its subdirectories (watch first: see the header). A
   * path watched on another inode (the directory was replaced) is watched afresh.
   */
  async #walk(dir: string): Promise<void> {
    if (this.#closed || this.#broken !== undefined) return;
    const ino = await inoOf(dir);
    if (ino === undefined) return; // gone already: its parent's event says so
    const watched = this.#watchers.get(dir);
    if (watched?.ino === ino) return;
    if (watched !== undefined) this.#unwatchUnder(dir);
    try {
      const w = watch(dir, { persistent: false }, (event, name) => this.#onEvent(dir, name, event));
      w.on('error', (err) => this.#onWatchError(dir, err));
      // The watch is on whatever was at `dir` when it was set: if that is not the inode read
      // before, the directory was replaced in between and its parent's event will recheck it.
      // A concurrent walk of the same directory may have set its watch meanwhile: keep one.
      if ((await inoOf(dir)) !== ino || this.#watchers.get(dir)?.ino === ino) {
        w.close();
        return;
      }
      this.#watchers.get(dir)?.watcher.close();
      this.#watchers.set(dir, { watcher: w, ino });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return;
      this.#break(
        code === 'ENOSPC'
          ? `out of inotify watches (fs.inotify.max_user_watches) at ${dir}`
          : `cannot watch ${dir}: ${(err as Error).message}`,
      );
      return;
    }
    if (!(await this.#walkChildren(dir))) this.#unwatchUnder(dir); // vanished meanwhile
  }

  /**
   * Events cost no system call here (a copy into the folder raises several per file): the
   * directory is marked, and a watched directory the event names is marked to be watched anew.
   * The follow-up (re-reading marked directories) runs once events pause, FOLLOW_UP_DELAY_MS,
   * or at the latest FOLLOW_UP_MAX_DELAY_MS after the first; until it ran, no scan certifies.
   * Only an event that may have added or replaced a directory marks anything: inotify's 'change'
   * (a write or a chmod, IN_MODIFY / IN_ATTRIB) never does, nor an event of a publisher temp file
   * (never a directory a scan enters). Publishing one file raises ~7 events, and re-reading its
   * directory after each burst cost a listener ~0.1 ms per file received.
   */
  #onEvent(dir: string, name: string | Buffer | null, event = 'rename'): void {
    const entry = name === null ? null : name.toString();
    // A subdirectory there may have gone while another came: the next follow-up reads the
    // directory whatever its link count.
    if (entry === null) this.#listedLinks.delete(dir);
    else if (this.#listedLinks.get(dir)?.subdirs.has(entry) === true) this.#listedLinks.delete(dir);
    if (this.#namedWhileListing.size > 0)
      for (const named of this.#namedWhileListing.get(dir) ?? []) named.add(entry ?? '');
    if (dir === this.root && entry !== null && isInternalDirName(entry)) return;
    let rel: string | undefined;
    // An edit of the ignore file is a write ('change'), and the follow-up re-reads the rules.
    const ignoreEdit = dir === this.root && entry === IGNORE_FILE_NAME;
    if (entry !== null) {
      if (ignoreEdit) {
        this.#ignoreStale = true;
        this.#listedLinks.delete(dir); // read again with the new rules
      } else if (this.#ignore.ignores((rel = this.#relOfEntry(dir, entry)), 'either')) return; // ignored as a file and as a directory
    }
    this.#generation++;
    this.#noteNamed(dir, entry, rel);
    for (const listener of this.#subscribers) listener(dir, entry);
    if (!ignoreEdit && !mayAddDirectory(event, entry)) return;
    this.#dirtyDirs.add(dir);
    if (entry !== null) {
      const named = path.join(dir, entry);
      if (this.#watchers.has(named)) this.#fresh.add(named);
      // A watched directory that is removed or moved reports it under its own name; its inode
      // number may come back at once for a new directory, so only a new watch is sure.
      if (entry === path.basename(dir)) this.#fresh.add(dir);
    }
    if (this.#followUp.poke()) this.#pending++;
  }

  /** The root-relative '/'-path of `entry` in the watched directory `dir` (a path below the root, as #walk joined it). */
  #relOfEntry(dir: string, entry: string): string {
    if (dir === this.root) return entry;
    const relDir = dir.startsWith(this.root + path.sep) ? dir.slice(this.root.length + 1) : this.#relOf(dir);
    return (path.sep === '/' ? relDir : relDir.split(path.sep).join('/')) + '/' + entry;
  }

  #noteNamed(dir: string, entry: string | null, rel: string | undefined): void {
    if (this.#named === 'many') return;
    if (entry === null || this.#named.size >= MAX_NAMED_PATHS || ++this.#namedEvents > MAX_NAMED_EVENTS) {
      this.#named = 'many';
      return;
    }
    this.#named.add(rel ?? this.#relOfEntry(dir, entry));
  }

  /** New directories get watches, replaced ones new watches, vanished ones none. */
  async #followUpEvents(): Promise<void> {
    if (this.#ignoreStale) await this.#readIgnore(); // the root is among the dirty directories: re-read with the new rules
    const dirs = new Set(this.#dirtyDirs);
    this.#dirtyDirs.clear();
    for (const p of this.#fresh) {
      if (this.#watchers.has(p)) this.#unwatchUnder(p);
      const parent = p === this.root ? p : path.dirname(p);
      this.#listedLinks.delete(parent); // replaced, its count may not have moved
      dirs.add(parent); // its parent's listing watches it again if it is there
    }
    this.#fresh.clear();
    for (const d of dirs) {
      if (this.#closed || this.#broken !== undefined) return;
      if (this.#watchers.has(d)) {
        if (!this.#linksUnchanged(d)) await this.#walkChildren(d);
      } else if (d === this.root) await this.#walk(d);
    }
  }

  /**
   * True when `dir` still has the link count it had when last read whole: no subdirectory came
   * or went since, so re-reading it finds none to watch (a first sync's files landing made a
   * listener re-read each directory ~25 times, 0.15-0.3 s of its CPU per 10,000 files). One
   * that went while another came keeps the count, but the event of its going named it, and
   * that dropped the count kept (#onEvent).
   */
  #linksUnchanged(dir: string): boolean {
    const links = this.#listedLinks.get(dir)?.links;
    if (links === undefined) return false;
    try {
      const st = lstatSync(dir, { bigint: true, throwIfNoEntry: false });
      return st !== undefined && st.isDirectory() && st.ino === this.#watchers.get(dir)?.ino && st.nlink === links;
    } catch {
      return false;
    }
  }

  /** Walks the subdirectories of `dir` (not .clawpeer, our own log and staging, nor ignored ones); false when `dir` cannot be read. */
  async #walkChildren(dir: string): Promise<boolean> {
    this.#listedLinks.delete(dir);
    let entries;
    let links: bigint | undefined;
    // Events delivered while the directory is read may tell of changes the read missed or saw
    // half of: the count is kept only if none named a subdirectory the read found, or no entry.
    const namedMeanwhile = new Set<string>();
    const listings = this.#namedWhileListing.get(dir) ?? [];
    this.#namedWhileListing.set(dir, [...listings, namedMeanwhile]);
    try {
      // The count before the read: a subdirectory made in between is read but not counted, so
      // the two differ and nothing is kept (the next follow-up reads it again).
      if (this.#subdirLinks) links = (await lstat(dir, { bigint: true })).nlink;
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return false;
    } finally {
      const left = (this.#namedWhileListing.get(dir) ?? []).filter((x) => x !== namedMeanwhile);
      if (left.length === 0) this.#namedWhileListing.delete(dir);
      else this.#namedWhileListing.set(dir, left);
    }
    if (links !== undefined && links >= 2n && !namedMeanwhile.has('')) {
      const subdirs = new Set<string>();
      for (const e of entries) if (e.isDirectory()) subdirs.add(e.name);
      const touched = [...namedMeanwhile].some((name) => subdirs.has(name));
      if (!touched && links === 2n + BigInt(subdirs.size)) this.#listedLinks.set(dir, { links, subdirs });
    }
    for (const e of entries) {
      if (!e.isDirectory() || (dir === this.root && isInternalDirName(e.name))) continue;
      const child = path.join(dir, e.name);
      if (!this.#ignore.matches(this.#relOf(child), true)) await this.#walk(child);
    }
    return true;
  }

  #unwatchUnder(p: string): void {
    const prefix = p + path.sep;
    for (const [dir, w] of this.#watchers) {
      if (dir === p || dir.startsWith(prefix)) {
        w.watcher.close();
        this.#watchers.delete(dir);
        this.#listedLinks.delete(dir);
      }
    }
  }

  #onWatchError(dir: string, err: Error): void {
    // A watched directory that is removed ends its watch; anything else leaves an unwatched hole.
    if (!this.#watchers.has(dir)) return;
    this.#watchers.get(dir)?.watcher.close();
    this.#watchers.delete(dir);
    this.#listedLinks.delete(dir);
    this.#listedLinks.delete(path.dirname(dir)); // its parent's count may not have moved
    this.#log.debug('folder watcher error; rechecking the directory', { dir, error: err.message });
    this.#onEvent(path.dirname(dir), path.basename(dir)); // counts as a change; the parent is re-read
  }
}

/** A listener's watchers, one per folder, started at a folder's first sync and kept until close. */
export class FolderWatchers {
  readonly #log: Logger;
  readonly #byRoot = new Map<string, FolderWatcher>();

  constructor(o: { log: Logger }) {
    this.#log = o.log;
  }

  forFolder(root: string): FolderWatcher {
    let w = this.#byRoot.get(root);
    if (w === undefined) {
      w = FolderWatcher.start(root, { log: this.#log });
      this.#byRoot.set(root, w);
    }
    return w;
  }

  /** Stops the folder's watcher when nothing subscribes to it any more (a shared folder removed from the config). */
  release(root: string): void {
    const w = this.#byRoot.get(root);
    if (w === undefined || w.subscriberCount > 0) return;
    w.close();
    this.#byRoot.delete(root);
  }

  close(): void {
    for (const w of this.#byRoot.values()) w.close();
    this.#byRoot.clear();
  }
}

/**
 * Whether an event may mean a new or replaced directory: on Linux, inotify's IN_MODIFY and
 * IN_ATTRIB arrive as 'change' and never do; elsewhere (kqueue, FSEvents) any event may. A
 * publisher temp file is never a directory a scan enters (it skips every path through one).
 */
function mayAddDirectory(event: string, entry: string | null): boolean {
  if (entry !== null && isTempFileName(entry)) return false;
  return event !== 'change' || process.platform !== 'linux';
}

async function inoOf(dir: string): Promise<bigint | undefined> {
  try {
    const st = await lstat(dir, { bigint: true });
    return st.isDirectory() ? st.ino : undefined;
  } catch {
    return undefined;
  }
}
