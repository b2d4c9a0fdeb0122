// LAN discovery, Syncthing's local discovery in spirit: IPv4 broadcast on one UDP port. A dialer
// that needs a peer's address broadcasts a query for its key (lan-query.ts) on each interface;
// a listener that is that node answers, to the query's source, with its signed announcement
// (protocol/announcement.ts) listing the addresses it listens on. The dialer keeps only answers
// signed by the key it asked for (so a neighbour can stay silent but never redirect it), not
// expired, and the highest seq per node.
//
// Query and answer only, no periodic broadcast: nothing is sent unless a dialer on the LAN asks,
// and a listener bound to loopback hears and answers loopback queries only (tests on one
// machine never put a packet on a real network).
import { createSocket, type Socket } from 'node:dgram';
import { networkInterfaces } from 'node:os';
import type { Identity } from '../crypto/identity.js';
import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import {
  decodeAnnouncement,
  encodeAnnouncement,
  MAX_ANNOUNCED_ADDRESSES,
  type AnnouncedAddress,
  type Announcement,
} from '../protocol/announcement.js';
import { decodeLanQuery, encodeLanQuery, isLanQuery, type LanQuery } from '../protocol/lan-query.js';
import type { HostPort } from '../transport/types.js';
import type { ReachConfig } from '../home/config-file.js';
import type { DialCandidate, PathSource, PeerToReach } from './paths.js';

/** How long a LAN answer stays valid: a listener that moved is found again on the next query. */
export const LAN_ANNOUNCEMENT_TTL_MS = 60_000;
/** A dialer sends its query this many ms after the start (broadcast is lossy: three tries). */
const QUERY_SCHEDULE_MS = [0, 150, 400];
/** A listener answers at most this many queries per second (a LAN host flooding queries gets no amplification). */
const MAX_ANSWERS_PER_SECOND = 20;
const LOOPBACK_BROADCAST = '127.255.255.255';

export interface LanDiscoveryOptions {
  readonly port: number;
  /** How long a dialer listens for answers. */
  readonly timeoutMs: number;
  /** Interface names to use (default: all IPv4 interfaces). */
  readonly interfaces?: readonly string[];
  /** Ask on loopback only (the peer to find is on this machine, or a test). */
  readonly loopbackOnly?: boolean;
  readonly log?: Logger;
}

/** The LAN options of a node's reach config. */
export function lanOptionsFrom(
  config: ReachConfig,
  extra: { readonly loopbackOnly?: boolean; readonly log?: Logger } = {},
): LanDiscoveryOptions {
  return {
    port: config.lanDiscoveryPort,
    timeoutMs: config.lanDiscoveryTimeoutMs,
    ...(config.lanInterfaces === undefined ? {} : { interfaces: config.lanInterfaces }),
    ...(extra.loopbackOnly === true ? { loopbackOnly: true } : {}),
    ...(extra.log === undefined ? {} : { log: extra.log }),
  };
}

export function isLoopbackHost(host: string): boolean {
  return host.startsWith('127.') || host === '::1' || host === 'localhost';
}

interface InterfaceAddress {
  readonly name: string;
  readonly address: string;
  readonly broadcast: string;
  readonly internal: boolean;
}

function ipv4ToInt(ip: string): number {
  return ip.split('.').reduce((acc, o) => ((acc << 8) | Number(o)) >>> 0, 0);
}

function intToIpv4(n: number): string {
  return [n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff].join('.');
}

/** The IPv4 addresses of this host's interfaces, each with its subnet's broadcast address. */
export function ipv4Interfaces(names?: readonly string[]): InterfaceAddress[] {
  const out: InterfaceAddress[] = [];
  for (const [name, entries] of Object.entries(networkInterfaces())) {
    if (names !== undefined && !names.includes(name)) continue;
    for (const e of entries ?? []) {
      if (e.family !== 'IPv4') continue;
      const broadcast = e.internal
        ? LOOPBACK_BROADCAST
        : intToIpv4((ipv4ToInt(e.address) | ~ipv4ToInt(e.netmask)) >>> 0);
      out.push({ name, address: e.address, broadcast, internal: e.internal });
    }
  }
  return out;
}

function broadcastTargets(options: LanDiscoveryOptions): { targets: string[]; where: string } {
  if (options.loopbackOnly === true) return { targets: [LOOPBACK_BROADCAST], where: 'loopback' };
  const ifaces = ipv4Interfaces(options.interfaces);
  return {
    targets: [...new Set(ifaces.map((i) => i.broadcast))],
    where: [...new Set(ifaces.map((i) => i.name))].join(', ') || 'no interface',
  };
}

function openSocket(host: string, port: number, reuseAddr: boolean): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = createSocket({ type: 'udp4', reuseAddr });
    const onError = (err: Error): void => {
      socket.close();
      reject(new ClawpeerError('IO', `LAN discovery cannot bind UDP ${host}:${port}: ${err.message}`, { cause: err }));
    };
    socket.once('error', onError);
    socket.bind(port, host, () => {
      socket.off('error', onError);
      resolve(socket);
    });
  });
}

/** One answer heard: the checked announcement and where it came from. */
export interface LanAnswer {
  readonly announcement: Announcement;
  readonly from: HostPort;
}

/**
 * Broadcasts `query` and yields each valid answer `accept`s, newest seq per node only (an older
 * or repeated one is skipped), until `timeoutMs` passes or `signal` aborts. Forged, malformed and
 * expired answers are dropped (logged at debug).
 */
export async function* queryLan(
  query: LanQuery,
  accept: (a: Announcement) => boolean,
  options: LanDiscoveryOptions,
  signal?: AbortSignal,
): AsyncGenerator<LanAnswer> {
  const { targets } = broadcastTargets(options);
  if (targets.length === 0) return;
  const socket = await openSocket(options.loopbackOnly === true ? '127.0.0.1' : '0.0.0.0', 0, false);
  const queue: LanAnswer[] = [];
  let wake: (() => void) | undefined;
  let done = false;
  const finish = (): void => {
    done = true;
    wake?.();
  };
  const newest = new Map<string, number>();
  socket.on('message', (msg, rinfo) => {
    let a: Announcement;
    try {
      a = decodeAnnouncement(msg, Date.now());
    } catch (err) {
      options.log?.debug('dropped a LAN answer', { from: rinfo.address, error: (err as Error).message });
      return;
    }
    if (!accept(a)) return;
    const seen = newest.get(a.nodeId);
    if (seen !== undefined && a.seq <= seen) return;
    newest.set(a.nodeId, a.seq);
    queue.push({ announcement: a, from: { host: rinfo.address, port: rinfo.port } });
    wake?.();
  });
  socket.on('error', (err) => options.log?.debug('LAN discovery socket error', { error: err.message }));
  socket.setBroadcast(true);
  const bytes = encodeLanQuery(query);
  const timers = QUERY_SCHEDULE_MS.filter((ms) => ms < options.timeoutMs).map((ms) =>
    setTimeout(() => {
      for (const t of targets)
        socket.send(
          bytes,
          options.port,
          t,
          (err) => err !== null && options.log?.debug('LAN query not sent', { to: t, error: err.message }),
        );
    }, ms),
  );
  timers.push(setTimeout(finish, options.timeoutMs));
  signal?.addEventListener('abort', finish, { once: true });
  if (signal?.aborted === true) finish();
  try {
    while (!done || queue.length > 0) {
      const next = queue.shift();
      if (next !== undefined) {
        yield next;
        continue;
      }
      if (signal?.aborted === true) break;
      await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
    }
  } finally {
    for (const t of timers) clearTimeout(t);
    signal?.removeEventListener('abort', finish);
    socket.close();
  }
}

/** The listen addresses of an answer, the one it came from first (the path that just worked). */
export function listenAddressesOf(answer: LanAnswer): HostPort[] {
  // A loopback address from another machine would be this machine (its own listener, perhaps).
  const fromHere = isLoopbackHost(answer.from.host);
  const out = answer.announcement.addresses
    .filter((a) => a.role === 'listen' && (fromHere || !isLoopbackHost(a.host)))
    .map((a) => ({ host: a.host, port: a.port }));
  return out.sort((x, y) => Number(y.host === answer.from.host) - Number(x.host === answer.from.host));
}

function formatAddr(a: HostPort): string {
  return a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}

/**
 * LAN discovery as a dial path source: asks for the peer's key; each address answered is a
 * 'lan' candidate. The address the answer came from gets `priority` (default 0), the node's
 * other addresses (other interfaces, a container bridge) one more, so they are dialled only
 * if it fails or is slow.
 */
export function lanSource(options: LanDiscoveryOptions, priority = 0): PathSource {
  return {
    name: 'lan',
    async *find(peer: PeerToReach, signal: AbortSignal): AsyncIterable<DialCandidate> {
      const seen = new Set<string>();
      for await (const answer of queryLan(
        { kind: 'node', publicKey: peer.publicKey },
        (a) => a.nodeId === peer.id,
        options,
        signal,
      )) {
        for (const address of listenAddressesOf(answer)) {
          const key = formatAddr(address);
          if (seen.has(key)) continue;
          seen.add(key);
          const p = address.host === answer.from.host ? priority : priority + 1;
          yield { address, path: () => 'lan', describe: `lan ${key}`, priority: p, release: () => undefined };
        }
      }
      if (seen.size === 0 && !signal.aborted) {
        const { where } = broadcastTargets(options);
        throw new ClawpeerError(
          'UNREACHABLE',
          `no answer on the LAN (UDP port ${options.port}, ${where}) within ${options.timeoutMs} ms`,
        );
      }
    },
  };
}

/** A node holding an open nameplate, as LAN discovery found it (its key is proven by the signature only: pairing's PAKE authenticates it). */
export interface NameplateHolder {
  readonly nodeId: string;
  readonly publicKey: Uint8Array;
  readonly addresses: readonly HostPort[];
}

/**
 * The nodes on the LAN announcing `nameplate` (short-code pairing): resolves shortly after the
 * first answer (others answering within 100 ms are included), or with [] after the timeout.
 */
export async function findByNameplate(
  nameplate: number,
  options: LanDiscoveryOptions & { readonly signal?: AbortSignal },
): Promise<NameplateHolder[]> {
  const found = new Map<string, NameplateHolder>();
  const stop = new AbortController();
  const signal = options.signal === undefined ? stop.signal : AbortSignal.any([options.signal, stop.signal]);
  let grace: NodeJS.Timeout | undefined;
  try {
    for await (const answer of queryLan(
      { kind: 'nameplate', nameplate },
      (a) => a.nameplate === nameplate,
      options,
      signal,
    )) {
      const a = answer.announcement;
      found.set(a.nodeId, { nodeId: a.nodeId, publicKey: a.publicKey, addresses: listenAddressesOf(answer) });
      grace ??= setTimeout(() => stop.abort(), 100);
    }
  } finally {
    clearTimeout(grace);
  }
  return [...found.values()];
}

export interface LanResponderOptions {
  readonly identity: Identity;
  /** Where the listener is bound (host may be 0.0.0.0: every interface's address is announced). */
  readonly bound: readonly HostPort[];
  readonly port: number;
  readonly interfaces?: readonly string[];
  /** Nameplates of the short-code invites open now: a query for one of them is answered too. */
  readonly openNameplates?: () => readonly number[];
  readonly log: Logger;
}

export interface LanResponder {
  close(): Promise<void>;
}

/**
 * Answers LAN queries for this node (and for its open nameplates) until closed. A listener bound
 * to loopback hears only loopback broadcasts; one bound to an interface's address or to 0.0.0.0
 * hears the whole port on every interface and announces the matching addresses. IPv4 only.
 */
export async function startLanResponder(o: LanResponderOptions): Promise<LanResponder> {
  const loopbackOnly = o.bound.every((b) => isLoopbackHost(b.host));
  // Announced: IPv4 addresses only (the query came over IPv4); a wildcard bind means every interface's.
  const wildcard = (host: string): boolean => host === '0.0.0.0' || host === '::';
  const v4 = o.bound.filter((b) => wildcard(b.host) || !b.host.includes(':'));
  // A socket bound to the loopback broadcast address hears loopback broadcasts and nothing else.
  const hear = await openSocket(loopbackOnly ? LOOPBACK_BROADCAST : '0.0.0.0', o.port, true);
  const speakHost = loopbackOnly ? '127.0.0.1' : v4.length === 1 && !wildcard(v4[0]!.host) ? v4[0]!.host : '0.0.0.0';
  let speak: Socket;
  try {
    speak = await openSocket(speakHost, 0, false);
  } catch (err) {
    hear.close();
    throw err;
  }
  speak.on('error', (err) => o.log.debug('LAN answer socket error', { error: err.message }));
  hear.on('error', (err) => o.log.debug('LAN discovery socket error', { error: err.message }));
  let seq = 0;
  let windowStart = 0;
  let answered = 0;
  /** Loopback addresses only to a querier on this machine: to another they name itself. */
  const addressesFor = (toLoopback: boolean): AnnouncedAddress[] => {
    const out = new Map<string, AnnouncedAddress>();
    for (const b of v4) {
      const hosts = (wildcard(b.host) ? ipv4Interfaces(o.interfaces).map((i) => i.address) : [b.host]).filter(
        (h) => toLoopback || !isLoopbackHost(h),
      );
      for (const host of hosts) out.set(`${host}:${b.port}`, { host, port: b.port, role: 'listen', source: 'local' });
    }
    return [...out.values()].slice(0, MAX_ANNOUNCED_ADDRESSES);
  };
  hear.on('message', (msg, rinfo) => {
    if (!isLanQuery(msg)) return;
    if (loopbackOnly && !isLoopbackHost(rinfo.address)) return;
    let q: LanQuery;
    try {
      q = decodeLanQuery(msg);
    } catch (err) {
      o.log.debug('dropped a LAN query', { from: rinfo.address, error: (err as Error).message });
      return;
    }
    const nameplates = o.openNameplates?.() ?? [];
    const forUs =
      q.kind === 'node'
        ? Buffer.from(q.publicKey).equals(Buffer.from(o.identity.publicKey))
        : nameplates.includes(q.nameplate);
    if (!forUs) return;
    const now = Date.now();
    if (now - windowStart >= 1000) [windowStart, answered] = [now, 0];
    if (++answered > MAX_ANSWERS_PER_SECOND) return;
    seq = Math.max(seq + 1, now);
    const nameplate = q.kind === 'nameplate' ? q.nameplate : undefined;
    const addresses = addressesFor(isLoopbackHost(rinfo.address));
    if (addresses.length === 0) return;
    const bytes = encodeAnnouncement(o.identity, {
      seq,
      issuedAtMs: now,
      ttlMs: LAN_ANNOUNCEMENT_TTL_MS,
      addresses,
      ...(nameplate === undefined ? {} : { nameplate }),
    });
    speak.send(
      bytes,
      rinfo.port,
      rinfo.address,
      (err) => err !== null && o.log.debug('LAN answer not sent', { to: rinfo.address, error: err.message }),
    );
    o.log.debug('answered a LAN query', { from: rinfo.address, kind: q.kind });
  });
  o.log.info('LAN discovery answering', { port: o.port, scope: loopbackOnly ? 'loopback' : 'all interfaces' });
  return {
    close: async () => {
      await Promise.all([
        new Promise<void>((r) => hear.close(() => r())),
        new Promise<void>((r) => speak.close(() => r())),
      ]);
    },
  };
}
