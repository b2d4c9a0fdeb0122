// A paired set kept in memory only: `clawpeer send` / `receive` pin each other for one transfer
// by the short code's PAKE and write nothing to peers.json. The listener and the PAKE take it
// where they take the home's PeerStore; `file` names a path that is never written (the server
// watches it for `pair remove`, which cannot happen here).
import { ClawpeerError } from '../errors.js';
import { publicKeyFromNodeId } from '../crypto/node-id.js';
import { parseHostPort } from './address.js';
import { PeerStore, validatePeerName, type PeerEntry } from './peer-store.js';

export class MemoryPeerStore extends PeerStore {
  #peers: PeerEntry[] = [];

  override async list(): Promise<PeerEntry[]> {
    return [...this.#peers];
  }

  override async add(
    id: string,
    name: string | ((taken: ReadonlySet<string>, existing: PeerEntry | undefined) => string),
    addr?: string,
  ): Promise<{ entry: PeerEntry; created: boolean }> {
    publicKeyFromNodeId(id); // throws USAGE naming the bad id
    if (addr !== undefined) parseHostPort(addr);
    const existing = this.#peers.find((p) => p.id === id);
    const others = this.#peers.filter((p) => p.id !== id);
    const chosen = validatePeerName(
      typeof name === 'string' ? name : name(new Set(others.map((p) => p.name)), existing),
    );
    if (others.some((p) => p.name === chosen))
      throw new ClawpeerError('USAGE', `peer name ${JSON.stringify(chosen)} is already used`);
    const entry: PeerEntry = {
      id,
      name: chosen,
      ...(addr !== undefined ? { addr } : existing?.addr !== undefined ? { addr: existing.addr } : {}),
      addedAt: existing?.addedAt ?? new Date().toISOString(),
    };
    this.#peers = [...others, entry];
    return { entry, created: existing === undefined };
  }

  override async edit(): Promise<PeerEntry> {
    throw new ClawpeerError('USAGE', 'a pairing for one transfer cannot be edited');
  }

  override async remove(idOrName: string): Promise<PeerEntry> {
    const entry = this.#peers.find((p) => p.id === idOrName) ?? this.#peers.find((p) => p.name === idOrName);
    if (entry === undefined)
      throw new ClawpeerError('PEER_UNKNOWN', `no paired peer named or with id ${JSON.stringify(idOrName)}`);
    this.#peers = this.#peers.filter((p) => p.id !== entry.id);
    return entry;
  }
}
