// Turns what a user typed (a pair name or a node id, plus an optional --addr) into the pinned
// key and the address to dial. Refuses unpaired ids: we never dial a key we do not pin.
import { ClawpeerError } from '../errors.js';
import { isNodeId, publicKeyFromNodeId } from '../crypto/node-id.js';
import type { HostPort } from '../transport/types.js';
import { parseHostPort } from './address.js';
import type { PeerStore } from './peer-store.js';

export interface ResolvedPeer {
  readonly id: string;
  readonly name: string;
  readonly publicKey: Uint8Array;
  /** Where to dial: --addr, else the pinned address; undefined when neither (discovery finds it). */
  readonly address?: HostPort;
  /** True when the address was typed (--addr): it is dialled alone. */
  readonly typed?: boolean;
}

export async function resolvePeer(store: PeerStore, peer: string, addr: string | undefined): Promise<ResolvedPeer> {
  const entry = await store.find(peer);
  if (entry === undefined) {
    if (isNodeId(peer)) {
      throw new ClawpeerError(
        'PEER_NOT_PAIRED',
        `peer ${peer} is not paired: run \`clawpeer pair add ${peer} --name <NAME> --addr <HOST:PORT>\` first`,
      );
    }
    throw new ClawpeerError(
      'PEER_UNKNOWN',
      `no paired peer named ${JSON.stringify(peer)} (see \`clawpeer pair list\`)`,
    );
  }
  const where = addr ?? entry.addr;
  const base = { id: entry.id, name: entry.name, publicKey: publicKeyFromNodeId(entry.id) };
  if (where === undefined) return base;
  return {
    ...base,
    address: parseHostPort(where, addr !== undefined ? '--addr' : `address of peer ${entry.name}`),
    ...(addr !== undefined ? { typed: true } : {}),
  };
}
