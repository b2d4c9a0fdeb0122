// How a dialer finds a way to a paired peer when no single address is known to work: each
// source (the address the user typed or pinned, LAN discovery, a rendezvous lookup, a punched
// or relayed path through the traversal socket) offers candidates, and the dialer races them
// (session/dialer.ts). The path a connection took is reported to users (ping, status, pair list,
// the done records) as one of these names.
import type { HostPort, TransportName } from '../transport/types.js';

/**
 * `lan`: found by LAN discovery; `direct`: an address typed, pinned or announced, dialled as
 * is; `mapped`: a UPnP/NAT-PMP port mapping; `punched`: a hole punched through NAT by the
 * traversal socket; `relayed`: through a rendezvous server's relay.
 */
export type PathKind = 'lan' | 'direct' | 'mapped' | 'punched' | 'relayed';
export const PATH_KINDS: readonly PathKind[] = ['lan', 'direct', 'mapped', 'punched', 'relayed'];

export interface PeerToReach {
  readonly id: string;
  readonly publicKey: Uint8Array;
  /** How messages name it (the pair name). */
  readonly name: string;
}

export interface DialCandidate {
  /** Where the transport connects: the peer itself, or a local forwarder of the traversal socket. */
  readonly address: HostPort;
  /** The path now: a forwarded connection that starts relayed may become punched. */
  path(): PathKind;
  /** What the user would recognise: `192.0.2.7:7700`, `relay 203.0.113.1:7800`. */
  readonly describe: string;
  /** A relay candidate's rendezvous, HOST:PORT (a lost connection names it). */
  readonly relay?: string;
  /** Only this transport (a traversal forwarder carries UDP: 'quic'); absent: as configured. */
  readonly transport?: TransportName;
  /** Lower goes first; candidates of one priority are dialled in parallel. */
  readonly priority: number;
  /** Frees what the candidate holds (a forwarder) once its connection is closed or lost the race. */
  release(): void;
}

/** One source of candidates. `find` yields as it learns; it stops when `signal` aborts. */
export interface PathSource {
  readonly name: string;
  find(peer: PeerToReach, signal: AbortSignal): AsyncIterable<DialCandidate>;
}
