// The listener's side of reach through a rendezvous: a traversal socket beside the quinn
// listener that registers the node's signed announcement (its listen addresses, its mapped
// ones, its traversal socket as the rendezvous sees it) and re-registers before it expires,
// punches toward a dialer when the rendezvous says CALL_ME_MAYBE, accepts relay sessions
// offered for it, and forwards all of that QUIC to the local quinn server. pathOf tells the
// server which path a forwarded connection took (quinn sees every one from 127.0.0.1).
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Identity } from '../crypto/identity.js';
import { nodeIdFromPublicKey } from '../crypto/node-id.js';
import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import { encodeAnnouncement, type AnnouncedAddress } from '../protocol/announcement.js';
import type { WireAddress } from '../protocol/rendezvous-wire.js';
import type { HostPort } from '../transport/types.js';
import { claimNameplate, lookupNameplate, releaseNameplate, type NameplateEntry } from './nameplates.js';
import type { PathKind } from './paths.js';
import { ask, formatAddress } from './rendezvous-client.js';
import { TraversalSocket } from './traversal-socket.js';
import { TEST_HOOKS } from '../support/test-hooks.js';

/** How long the rendezvous keeps an announcement, ms. */
export const ANNOUNCEMENT_TTL_MS = 90_000;
/** How often a listener registers again (well inside the TTL, and often enough to keep a NAT mapping open), ms. */
export const REREGISTER_MS = 25_000;
/** After a registration got no answer: how soon to try again. */
export const REGISTER_RETRY_MS = 2_000;
/** Punching: PINGs toward a dialer, this often, this many. */
export const PUNCH_INTERVAL_MS = 100;
export const PUNCH_TRIES = 30;
/** The listener's first punches toward a dialer are short-lived (traversal-socket.ts sendShortLived). */
export const SHORT_PUNCHES = 2;

export interface BoundAddress {
  readonly transport: string;
  readonly host: string;
  readonly port: number;
}

export interface ListenerReachOptions {
  readonly identity: Identity;
  readonly rendezvous: HostPort;
  /** The listener's bound transports (Listener.bound): the quic one receives forwarded datagrams. */
  readonly bound: readonly BoundAddress[];
  /** Port mappings to announce (natlab's startPortMapping().mapped). */
  readonly mapped?: () => readonly AnnouncedAddress[];
  readonly log: Logger;
  /** The traversal socket's bind address and port (default 0.0.0.0 or ::, any port). */
  readonly muxHost?: string;
  readonly muxPort?: number;
  /** Which dialers to punch toward and relay for (default: any; TLS pins keys anyway). */
  readonly accepts?: (nodeId: string) => boolean | Promise<boolean>;
  readonly reregisterMs?: number;
  readonly ttlMs?: number;
}

export interface ListenerReach {
  /** The traversal socket's local address. */
  readonly mux: HostPort;
  /** Where the rendezvous sees the traversal socket (after the first registration). */
  reflexive(): HostPort | undefined;
  /** Resolves once registered (rejects if the rendezvous never answered the first time). */
  readonly registered: Promise<void>;
  /** For ServerOptions.pathOf: the path of a connection quinn sees from `remote`. */
  pathOf(remote: HostPort): PathKind | undefined;
  readonly nameplates: {
    claim(nameplate: number): Promise<void>;
    lookup(nameplate: number): Promise<NameplateEntry | undefined>;
    release(nameplate: number): Promise<void>;
  };
  close(): Promise<void>;
}

/** Resolves a rendezvous HOST:PORT once, so datagrams are not each resolved again. */
export async function resolveRendezvous(rendezvous: HostPort): Promise<HostPort> {
  if (isIP(rendezvous.host) !== 0) return rendezvous;
  try {
    const r = await lookup(rendezvous.host);
    return { host: r.address, port: rendezvous.port };
  } catch (cause) {
    throw new ClawpeerError('UNREACHABLE', `cannot resolve the rendezvous host ${JSON.stringify(rendezvous.host)}`, {
      cause,
    });
  }
}

const WILDCARDS = new Set(['0.0.0.0', '::', '']);

/** The addresses a bound listener is reachable at from elsewhere: its host, or every interface's for a wildcard. */
export function listenAddresses(bound: readonly BoundAddress[]): AnnouncedAddress[] {
  const quic = bound.find((b) => b.transport === 'quic') ?? bound[0];
  if (quic === undefined) return [];
  if (!WILDCARDS.has(quic.host)) return [{ host: quic.host, port: quic.port, role: 'listen', source: 'local' }];
  const v6 = quic.host === '::';
  const out: AnnouncedAddress[] = [];
  for (const list of Object.values(networkInterfaces())) {
    for (const i of list ?? []) {
      if (i.internal || (i.family === 'IPv6' && (!v6 || i.address.startsWith('fe80')))) continue;
      out.push({ host: i.address, port: quic.port, role: 'listen', source: 'local' });
    }
  }
  return out.slice(0, 8);
}

export async function startListenerReach(o: ListenerReachOptions): Promise<ListenerReach> {
  const log = o.log;
  const quic = o.bound.find((b) => b.transport === 'quic');
  const server = await resolveRendezvous(o.rendezvous);
  const socket = await TraversalSocket.open({
    host: o.muxHost ?? (isIP(server.host) === 6 ? '::' : '0.0.0.0'),
    port: o.muxPort ?? 0,
    log,
  });
  if (quic !== undefined) socket.serveInbound({ host: quic.host, port: quic.port });
  else log.warn('the listener has no QUIC transport: punched and relayed connections cannot reach it');
  const ttlMs = o.ttlMs ?? ANNOUNCEMENT_TTL_MS;
  let reflexive: WireAddress | undefined;
  let lastSeq = 0;
  const punching = new Map<string, NodeJS.Timeout>();
  const accepts = async (key: Uint8Array): Promise<boolean> =>
    o.accepts === undefined ? true : await o.accepts(nodeIdFromPublicKey(key));
  const nextSeq = (): number => (lastSeq = Math.max(Date.now(), lastSeq + 1));
  const addresses = (): AnnouncedAddress[] => {
    const local = socket.address;
    const list: AnnouncedAddress[] = [...listenAddresses(o.bound), ...(o.mapped?.() ?? [])];
    if (reflexive !== undefined)
      list.push({ host: reflexive.host, port: reflexive.port, role: 'mux', source: 'reflexive' });
    if (!WILDCARDS.has(local.host)) list.push({ host: local.host, port: local.port, role: 'mux', source: 'local' });
    return list.slice(0, 16);
  };
  const fields = (): { seq: number; issuedAtMs: number; ttlMs: number; addresses: AnnouncedAddress[] } => ({
    seq: nextSeq(),
    issuedAtMs: Date.now(),
    ttlMs,
    addresses: addresses(),
  });

  const register = async (): Promise<void> => {
    const announcement = encodeAnnouncement(o.identity, fields());
    const got = await ask(socket, server, { type: 'register', announcement }, (m) =>
      m.type === 'registered' ? m : undefined,
    );
    const moved =
      reflexive === undefined || reflexive.host !== got.reflexive.host || reflexive.port !== got.reflexive.port;
    reflexive = got.reflexive;
    // The first answer tells us our reflexive address: announce it at once.
    if (moved) {
      log.info('registered with the rendezvous', {
        rendezvous: formatAddress(server),
        reflexive: formatAddress(got.reflexive),
      });
      const again = encodeAnnouncement(o.identity, fields());
      await ask(socket, server, { type: 'register', announcement: again }, (m) =>
        m.type === 'registered' ? m : undefined,
      );
    }
  };

  const punch = (dialer: Uint8Array, to: WireAddress): void => {
    const k = formatAddress(to);
    if (punching.has(k)) return;
    let n = 0;
    const nonce = randomBytes(8);
    const tick = (): void => {
      if (++n > PUNCH_TRIES) {
        punching.delete(k);
        return;
      }
      // The first punches die before the dialer's NAT: they only open ours (sendShortLived).
      if (n <= SHORT_PUNCHES) socket.sendShortLived({ type: 'ping', nonce, from: o.identity.publicKey }, to);
      else socket.send({ type: 'ping', nonce, from: o.identity.publicKey }, to);
      punching.set(k, setTimeout(tick, PUNCH_INTERVAL_MS));
    };
    log.debug('punching toward a dialer', { dialer: nodeIdFromPublicKey(dialer), to: k });
    tick();
  };
  const stopPunching = (from: HostPort): void => {
    const k = formatAddress(from);
    const t = punching.get(k);
    if (t !== undefined) {
      clearTimeout(t);
      punching.delete(k);
    }
  };

  socket.on((m, from) => {
    const fromServer = from.port === server.port && from.host === server.host;
    switch (m.type) {
      case 'callMeMaybe':
        if (!fromServer) return;
        void accepts(m.dialer).then((ok) =>
          ok
            ? punch(m.dialer, m.dialerMux)
            : log.debug('ignored a call from an unaccepted node', { dialer: nodeIdFromPublicKey(m.dialer) }),
        );
        break;
      case 'relayOffer':
        if (!fromServer) return;
        void accepts(m.from).then((ok) => {
          if (!ok) return;
          socket.acceptRelay(server, m.token);
          socket.send({ type: 'relayBind', from: o.identity.publicKey, to: m.from, token: m.token }, server);
        });
        break;
      case 'pong':
      case 'ping':
        // The dialer's socket answered (or punches too): the hole is open both ways.
        stopPunching(from);
        break;
      default:
        break;
    }
  });

  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  // While the rendezvous does not answer (it restarted, or the network is down), try again every
  // few seconds rather than at the next refresh: a restarted rendezvous knows nobody until then.
  let failing = false;
  const attempt = (p: Promise<void>): Promise<void> =>
    p.then(
      () => {
        if (failing) log.info('registered with the rendezvous again', { rendezvous: formatAddress(server) });
        failing = false;
      },
      (err: unknown) => {
        if (!failing)
          log.warn('cannot register with the rendezvous; trying again', {
            rendezvous: formatAddress(server),
            error: (err as Error).message,
          });
        failing = true;
      },
    );
  const every = o.reregisterMs ?? TEST_HOOKS.reregisterMs ?? REREGISTER_MS;
  const loop = (): void => {
    timer = setTimeout(
      () => {
        void attempt(register()).finally(() => {
          if (!closed) loop();
        });
      },
      failing ? Math.min(REGISTER_RETRY_MS, every) : every,
    );
    timer.unref();
  };
  const registered = register();
  void attempt(registered).finally(() => {
    if (!closed) loop();
  });

  const npOptions = { identity: o.identity, socket, server };
  return {
    mux: socket.address,
    reflexive: () => reflexive,
    registered,
    pathOf: (remote) => socket.pathOf(remote),
    nameplates: {
      claim: (nameplate) =>
        claimNameplate({ ...npOptions, fields: { ...fields(), ttlMs: Math.min(ttlMs, 10 * 60_000) }, nameplate }),
      lookup: (nameplate) => lookupNameplate({ ...npOptions, nameplate }),
      release: (nameplate) => releaseNameplate({ ...npOptions, fields: fields(), nameplate }),
    },
    close: async () => {
      closed = true;
      clearTimeout(timer);
      for (const t of punching.values()) clearTimeout(t);
      await socket.close();
    },
  };
}
