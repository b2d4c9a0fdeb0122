// What kind of NAT this node is behind, asked of a rendezvous: REFLECT from one socket to the
// server's port P and to P+1, and compare the addresses it saw.
// - none: the server saw our own interface address and port (a public address);
// - endpoint-independent: the same mapping toward both ports (punching works from either side);
// - symmetric: a new mapping per destination (punching mostly fails: expect the relay).
import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { Logger } from '../logger.js';
import type { HostPort } from '../transport/types.js';
import { resolveRendezvous } from './listener-reach.js';
import { ask, sameBytes } from './rendezvous-client.js';
import { TraversalSocket } from './traversal-socket.js';

export type NatKind = 'none' | 'endpoint-independent' | 'symmetric';

export interface NatProbe {
  readonly kind: NatKind;
  /** As the server's port P and P+1 saw us. */
  readonly reflexive: readonly [HostPort, HostPort];
  readonly local: HostPort;
  readonly rttMs: number;
}

function isLocalAddress(host: string): boolean {
  return Object.values(networkInterfaces()).some((list) => (list ?? []).some((i) => i.address === host));
}

/** Probes the NAT through `rendezvous`; UNREACHABLE when the server does not answer. */
export async function probeNatKind(o: {
  rendezvous: HostPort;
  log: Logger;
  signal?: AbortSignal;
  host?: string;
}): Promise<NatProbe> {
  const server = await resolveRendezvous(o.rendezvous);
  const socket = await TraversalSocket.open({
    host: o.host ?? (isIP(server.host) === 6 ? '::' : '0.0.0.0'),
    port: 0,
    log: o.log,
  });
  try {
    const started = Date.now();
    const reflect = async (port: number): Promise<HostPort> => {
      const nonce = randomBytes(8);
      return ask(
        socket,
        { host: server.host, port },
        { type: 'reflect', nonce },
        (m) => (m.type === 'reflected' && sameBytes(m.nonce, nonce) ? m.address : undefined),
        { ...(o.signal ? { signal: o.signal } : {}) },
      );
    };
    const first = await reflect(server.port);
    const rttMs = Date.now() - started;
    const second = await reflect(server.port + 1);
    const local = socket.address;
    const kind: NatKind =
      first.port === local.port && isLocalAddress(first.host)
        ? 'none'
        : first.host === second.host && first.port === second.port
          ? 'endpoint-independent'
          : 'symmetric';
    return { kind, reflexive: [first, second], local, rttMs };
  } finally {
    await socket.close();
  }
}
