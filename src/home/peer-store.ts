// The paired set: the only keys this node will talk to. Stored as JSON in the home dir and
// re-read on every inbound connection, so `pair remove` takes effect on the next connect
// without restarting a listener.
import { readFile } from 'node:fs/promises';
import { makeDirs } from '../support/make-dirs.js';
import { dirname } from 'node:path';
import { ClawpeerError } from '../errors.js';
import { isNodeId, publicKeyFromNodeId } from '../crypto/node-id.js';
import { writeFileAtomic } from '../support/atomic-file.js';
import { parseHostPort } from './address.js';
import { FolderLock } from '../store/folder-lock.js';
import { assertPrivateHome } from './home.js';

export interface PeerEntry {
  readonly id: string;
  readonly name: string;
  /** HOST:PORT where the peer listens, when known. */
  readonly addr?: string;
  readonly addedAt: string;
}

interface PeersFile {
  readonly version: 1;
  readonly peers: PeerEntry[];
}

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const MAX_PEERS_FILE_BYTES = 4 << 20; // 4 MiB: far above any real pair list
/** The lock file next to peers.json (folder-lock.ts's protocol: a SIGKILLed holder's is broken). */
export const PEERS_LOCK_SUFFIX = '.lock';
/** How long a writer waits for another: each holds the lock for one read and one write. */
export const PEERS_LOCK_WAIT_MS = 30_000;
const PEERS_LOCK_POLL_MS = 10;

export function validatePeerName(name: string): string {
  if (!NAME_PATTERN.test(name)) {
    throw new ClawpeerError(
      'USAGE',
      `invalid peer name ${JSON.stringify(name)}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit`,
    );
  }
  if (isNodeId(name))
    throw new ClawpeerError('USAGE', `peer name ${JSON.stringify(name)} looks like a node id; pick a short name`);
  return name;
}

export class PeerStore {
  constructor(readonly file: string) {}

  async list(): Promise<PeerEntry[]> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw new ClawpeerError('IO', `cannot read ${this.file}: ${(err as Error).message}`, { cause: err });
    }
    if (text.length > MAX_PEERS_FILE_BYTES)
      throw new ClawpeerError('CONFIG_INVALID', `${this.file} is larger than ${MAX_PEERS_FILE_BYTES} bytes`);
    return parsePeersFile(text, this.file).peers;
  }

  /**
   * Adds a peer, or updates name/addr of an already paired id. Returns the entry and whether it
   * was new. `name` may be a chooser, called with the names other peers hold right now and this
   * id's entry if any (inside the lock): two pairings at once then never pick the same name.
   */
  async add(
    id: string,
    name: string | ((taken: ReadonlySet<string>, existing: PeerEntry | undefined) => string),
    addr?: string,
  ): Promise<{ entry: PeerEntry; created: boolean }> {
    publicKeyFromNodeId(id); // throws USAGE naming the bad id
    if (typeof name === 'string') validatePeerName(name);
    if (addr !== undefined) parseHostPort(addr);
    return this.#update((peers) => {
      const existing = peers.find((p) => p.id === id);
      const chosen =
        typeof name === 'string'
          ? name
          : validatePeerName(name(new Set(peers.filter((p) => p.id !== id).map((p) => p.name)), existing));
      const clash = peers.find((p) => p.name === chosen && p.id !== id);
      if (clash !== undefined)
        throw new ClawpeerError('USAGE', `peer name ${JSON.stringify(chosen)} is already used by ${clash.id}`);
      const entry: PeerEntry = {
        id,
        name: chosen,
        ...(addr !== undefined ? { addr } : existing?.addr !== undefined ? { addr: existing.addr } : {}),
        addedAt: existing?.addedAt ?? new Date().toISOString(),
      };
      const next = existing === undefined ? [...peers, entry] : peers.map((p) => (p.id === id ? entry : p));
      return { next, result: { entry, created: existing === undefined } };
    });
  }

  /**
   * Changes a paired peer's name and pinned address (by id or name); `addr: null` unpins the
   * address, so the peer is found by LAN discovery or a rendezvous again. Returns the new entry.
   */
  async edit(idOrName: string, change: { readonly name?: string; readonly addr?: string | null }): Promise<PeerEntry> {
    if (change.name !== undefined) validatePeerName(change.name);
    if (typeof change.addr === 'string') parseHostPort(change.addr);
    return this.#update((peers) => {
      const existing = findPeer(peers, idOrName);
      if (existing === undefined)
        throw new ClawpeerError('PEER_UNKNOWN', `no paired peer named or with id ${JSON.stringify(idOrName)}`);
      const name = change.name ?? existing.name;
      const clash = peers.find((p) => p.name === name && p.id !== existing.id);
      if (clash !== undefined)
        throw new ClawpeerError('USAGE', `peer name ${JSON.stringify(name)} is already used by ${clash.id}`);
      const addr = change.addr === undefined ? existing.addr : (change.addr ?? undefined);
      const entry: PeerEntry = {
        id: existing.id,
        name,
        ...(addr === undefined ? {} : { addr }),
        addedAt: existing.addedAt,
      };
      return { next: peers.map((p) => (p.id === existing.id ? entry : p)), result: entry };
    });
  }

  /** Removes by id or name; returns the removed entry. */
  async remove(idOrName: string): Promise<PeerEntry> {
    return this.#update((peers) => {
      const entry = findPeer(peers, idOrName);
      if (entry === undefined)
        throw new ClawpeerError('PEER_UNKNOWN', `no paired peer named or with id ${JSON.stringify(idOrName)}`);
      return { next: peers.filter((p) => p.id !== entry.id), result: entry };
    });
  }

  async find(idOrName: string): Promise<PeerEntry | undefined> {
    return findPeer(await this.list(), idOrName);
  }

  async isPaired(id: string): Promise<boolean> {
    return (await this.list()).some((p) => p.id === id);
  }

  /**
   * One read-modify-write of the file with the lock held: the CLI (`pair add/remove`) and the
   * listener (invite redemptions) write it from different processes, and a change made between
   * another writer's read and write would be lost.
   */
  async #update<T>(change: (peers: PeerEntry[]) => { next: PeerEntry[]; result: T }): Promise<T> {
    const dir = dirname(this.file);
    await makeDirs(dir, 0o700);
    await assertPrivateHome(dir);
    const lockFile = `${this.file}${PEERS_LOCK_SUFFIX}`;
    const lock = await FolderLock.acquireFile(
      lockFile,
      { waitMs: PEERS_LOCK_WAIT_MS, pollMs: PEERS_LOCK_POLL_MS },
      (who, waited) =>
        new ClawpeerError(
          'FOLDER_BUSY',
          `${this.file} is being changed by ${who} (lock file ${lockFile}${waited}); if no clawpeer is running, delete the lock file`,
        ),
    );
    try {
      const { next, result } = change(await this.list()); // read again under the lock
      const body: PeersFile = { version: 1, peers: next };
      await writeFileAtomic(this.file, JSON.stringify(body, null, 2) + '\n', 0o600);
      return result;
    } finally {
      await lock.release();
    }
  }
}

/** The entry with this id, or else this name. */
export function findPeer(peers: readonly PeerEntry[], idOrName: string): PeerEntry | undefined {
  return peers.find((p) => p.id === idOrName) ?? peers.find((p) => p.name === idOrName);
}

function parsePeersFile(text: string, file: string): PeersFile {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (cause) {
    throw new ClawpeerError('CONFIG_INVALID', `${file} is not valid JSON: ${(cause as Error).message}`, { cause });
  }
  if (
    typeof raw !== 'object' ||
    raw === null ||
    (raw as { version?: unknown }).version !== 1 ||
    !Array.isArray((raw as { peers?: unknown }).peers)
  ) {
    throw new ClawpeerError(
      'CONFIG_INVALID',
      `${file} is not a clawpeer peers file (expected {"version":1,"peers":[...]})`,
    );
  }
  const peers: PeerEntry[] = [];
  for (const [i, p] of (raw as { peers: unknown[] }).peers.entries()) {
    const e = p as Partial<Record<keyof PeerEntry, unknown>>;
    if (
      typeof e.id !== 'string' ||
      !isNodeId(e.id) ||
      typeof e.name !== 'string' ||
      (e.addr !== undefined && typeof e.addr !== 'string')
    ) {
      throw new ClawpeerError('CONFIG_INVALID', `${file}: peer #${i} is malformed (needs a node id and a name)`);
    }
    peers.push({
      id: e.id,
      name: e.name,
      ...(typeof e.addr === 'string' ? { addr: e.addr } : {}),
      addedAt: typeof e.addedAt === 'string' ? e.addedAt : '',
    });
  }
  return { version: 1, peers };
}
