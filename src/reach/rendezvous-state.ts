// What a rendezvous server keeps and decides, without sockets or clocks (the driver,
// rendezvous-server.ts, passes each datagram in with its source and the time, and sends what
// comes back). Keeps: signed announcements by node id (highest seq wins, dropped at expiry),
// nameplates (short-code pairing) with expiry, relay sessions between two nodes, and per-IP
// request budgets. Lookups go by full public key only, so nothing here lists nodes.
//
// Trust: the server believes nothing it cannot check. An announcement must be signed by the key
// it names and unexpired (decodeAnnouncement); a replay of an older one is ignored, and one of
// the same seq from another address too, so a replayed announcement cannot redirect a node's
// punches or relay offers. Relay payloads are QUIC ciphertext, spliced as is: the server can
// drop or delay them, never read or forge them (TLS with pinned keys runs end to end).
import { decodeAnnouncement, type Announcement } from '../protocol/announcement.js';
import { nodeIdFromPublicKey } from '../crypto/node-id.js';
import {
  decodeTraversal,
  encodeTraversal,
  isTraversalMessage,
  RELAY_TOKEN_BYTES,
  TRAVERSAL_TYPES,
  type RefusalReason,
  type TraversalMessage,
  type WireAddress,
} from '../protocol/rendezvous-wire.js';

export interface RendezvousLimits {
  /** Relay bytes per second each node may send through the server. */
  readonly relayBytesPerSecond: number;
  /** Relay sessions each node may hold at once. */
  readonly relaySessionsPerNode: number;
  /** Requests (everything but relay data) per second from one IP address. */
  readonly requestsPerIpPerSecond: number;
  /** Announcements kept at most (a full table refuses new nodes until some expire). */
  readonly maxNodes: number;
}

export const DEFAULT_RENDEZVOUS_LIMITS: RendezvousLimits = Object.freeze({
  relayBytesPerSecond: 4 * 1024 * 1024,
  relaySessionsPerNode: 16,
  requestsPerIpPerSecond: 20,
  maxNodes: 100_000,
});

/** A relay session nobody sent through for this long is dropped, ms. */
export const RELAY_IDLE_MS = 120_000;
/** A relay session the target never bound is dropped after this, ms. */
export const RELAY_BIND_TIMEOUT_MS = 15_000;
/** Longest a nameplate stays claimed without a fresh claim, ms (the announcement's ttl, capped). */
export const MAX_NAMEPLATE_TTL_MS = 10 * 60_000;
/** How often expired entries are swept, ms. */
const SWEEP_EVERY_MS = 5_000;

/** A datagram to send: to `to`, out of the socket it came in on (`via`: 0 the main port, 1 the reflection port). */
export interface Outgoing {
  readonly to: WireAddress;
  readonly bytes: Uint8Array;
  readonly via: 0 | 1;
}

interface Registration {
  readonly announcement: Announcement;
  /** Where its REGISTER came from: its traversal socket as the internet sees it. */
  readonly from: WireAddress;
}

interface RelayEnd {
  readonly nodeId: string;
  address: WireAddress | undefined;
}

interface RelaySession {
  readonly token: string;
  readonly a: RelayEnd;
  readonly b: RelayEnd;
  readonly createdMs: number;
  lastMs: number;
}

/** A token bucket; refills with time passed in. */
class Bucket {
  tokens: number;
  lastMs: number;
  constructor(
    readonly rate: number,
    readonly burst: number,
    nowMs: number,
  ) {
    this.tokens = burst;
    this.lastMs = nowMs;
  }
  take(n: number, nowMs: number): boolean {
    this.tokens = Math.min(this.burst, this.tokens + ((nowMs - this.lastMs) * this.rate) / 1000);
    this.lastMs = nowMs;
    if (this.tokens < n) return false;
    this.tokens -= n;
    return true;
  }
}

const sameAddress = (a: WireAddress | undefined, b: WireAddress): boolean =>
  a !== undefined && a.host === b.host && a.port === b.port;
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

export interface RendezvousCounters {
  nodes: number;
  relaySessions: number;
  relayedBytes: number;
  relayDropped: number;
  refused: number;
  malformed: number;
}

export class RendezvousState {
  readonly #limits: RendezvousLimits;
  readonly #nodes = new Map<string, Registration>();
  readonly #nameplates = new Map<
    number,
    { readonly nodeId: string; readonly announcement: Announcement; readonly expiresMs: number }
  >();
  readonly #sessions = new Map<string, RelaySession>();
  readonly #sessionsPerNode = new Map<string, number>();
  readonly #ipBuckets = new Map<string, Bucket>();
  readonly #relayBuckets = new Map<string, Bucket>();
  #lastSweepMs = 0;
  readonly counters: RendezvousCounters = {
    nodes: 0,
    relaySessions: 0,
    relayedBytes: 0,
    relayDropped: 0,
    refused: 0,
    malformed: 0,
  };

  constructor(limits: Partial<RendezvousLimits> = {}) {
    this.#limits = { ...DEFAULT_RENDEZVOUS_LIMITS, ...limits };
  }

  /** What to send in answer to one datagram from `from`, received on port `via` at `nowMs`. */
  handle(buf: Uint8Array, from: WireAddress, via: 0 | 1, nowMs: number): Outgoing[] {
    if (nowMs - this.#lastSweepMs >= SWEEP_EVERY_MS) this.sweep(nowMs);
    if (!isTraversalMessage(buf)) {
      this.counters.malformed++;
      return [];
    }
    // Relay data is the hot path and not a request: it has its own per-node byte budget.
    if (buf[0] === TRAVERSAL_TYPES.relayData) return this.#relayData(buf, from, nowMs);
    if (!this.#ipBucket(from.host, nowMs).take(1, nowMs)) {
      this.counters.refused++;
      return [
        this.#refuse(
          buf[0] ?? 0,
          'rate-limited',
          `more than ${this.#limits.requestsPerIpPerSecond} requests per second from ${from.host}`,
          from,
          via,
        ),
      ];
    }
    let m: TraversalMessage;
    try {
      m = decodeTraversal(buf);
    } catch (err) {
      this.counters.malformed++;
      return [this.#refuse(buf[0] ?? 0, 'invalid', (err as Error).message, from, via)];
    }
    const reply = (msg: TraversalMessage, to: WireAddress = from): Outgoing => ({
      to,
      bytes: encodeTraversal(msg),
      via: to === from ? via : 0,
    });
    switch (m.type) {
      case 'reflect':
        return [reply({ type: 'reflected', nonce: m.nonce, address: from })];
      case 'register':
        return this.#register(m.announcement, from, via, nowMs);
      case 'lookup': {
        const r = this.#live(nodeIdFromPublicKey(m.publicKey), nowMs);
        return [
          reply(
            r === undefined
              ? { type: 'lookupReply', publicKey: m.publicKey }
              : { type: 'lookupReply', publicKey: m.publicKey, announcement: r.announcement.bytes },
          ),
        ];
      }
      case 'connect': {
        const r = this.#live(nodeIdFromPublicKey(m.target), nowMs);
        if (r === undefined) return [reply({ type: 'connectReply', target: m.target })];
        return [
          reply({ type: 'connectReply', target: m.target, mux: r.from }),
          reply({ type: 'callMeMaybe', dialer: m.dialer, dialerMux: from }, r.from),
        ];
      }
      case 'relayBind':
        return this.#relayBind(m.from, m.to, m.token, from, nowMs);
      case 'nameplateClaim':
      case 'nameplateRelease':
        return this.#nameplate(m.type, m.announcement, from, via, nowMs);
      case 'nameplateLookup': {
        const entry = this.#nameplates.get(m.nameplate);
        const live = entry !== undefined && entry.expiresMs > nowMs ? entry : undefined;
        return [
          reply(
            live === undefined
              ? { type: 'nameplateReply', op: 'lookup', status: 'absent', nameplate: m.nameplate }
              : {
                  type: 'nameplateReply',
                  op: 'lookup',
                  status: 'ok',
                  nameplate: m.nameplate,
                  announcement: live.announcement.bytes,
                },
          ),
        ];
      }
      default:
        // Replies and peer-to-peer messages are not for a server.
        this.counters.malformed++;
        return [];
    }
  }

  /** Drops expired announcements, nameplates, idle relay sessions and idle rate buckets. */
  sweep(nowMs: number): void {
    this.#lastSweepMs = nowMs;
    for (const [id, r] of this.#nodes) if (r.announcement.expiresAtMs <= nowMs) this.#nodes.delete(id);
    for (const [n, e] of this.#nameplates) if (e.expiresMs <= nowMs) this.#nameplates.delete(n);
    for (const s of this.#sessions.values()) {
      const bound = s.b.address !== undefined;
      if (nowMs - s.lastMs > RELAY_IDLE_MS || (!bound && nowMs - s.createdMs > RELAY_BIND_TIMEOUT_MS))
        this.#dropSession(s);
    }
    for (const [ip, b] of this.#ipBuckets) if (nowMs - b.lastMs > 10_000) this.#ipBuckets.delete(ip);
    for (const [id, b] of this.#relayBuckets) if (nowMs - b.lastMs > 10_000) this.#relayBuckets.delete(id);
    this.counters.nodes = this.#nodes.size;
    this.counters.relaySessions = this.#sessions.size;
  }

  /** The live announcement of a node, for tests and the driver's log. */
  announcementOf(nodeId: string, nowMs: number): Announcement | undefined {
    return this.#live(nodeId, nowMs)?.announcement;
  }

  #live(nodeId: string, nowMs: number): Registration | undefined {
    const r = this.#nodes.get(nodeId);
    if (r === undefined) return undefined;
    if (r.announcement.expiresAtMs <= nowMs) {
      this.#nodes.delete(nodeId);
      return undefined;
    }
    return r;
  }

  #ipBucket(ip: string, nowMs: number): Bucket {
    let b = this.#ipBuckets.get(ip);
    if (b === undefined) {
      const rate = this.#limits.requestsPerIpPerSecond;
      this.#ipBuckets.set(ip, (b = new Bucket(rate, rate, nowMs)));
    }
    return b;
  }

  #refuse(request: number, reason: RefusalReason, text: string, to: WireAddress, via: 0 | 1): Outgoing {
    return { to, via, bytes: encodeTraversal({ type: 'refused', request, reason, text }) };
  }

  #register(bytes: Uint8Array, from: WireAddress, via: 0 | 1, nowMs: number): Outgoing[] {
    let a: Announcement;
    try {
      a = decodeAnnouncement(bytes, nowMs);
    } catch (err) {
      this.counters.refused++;
      return [this.#refuse(TRAVERSAL_TYPES.register, 'invalid', (err as Error).message, from, via)];
    }
    const old = this.#live(a.nodeId, nowMs);
    if (
      old !== undefined &&
      (a.seq < old.announcement.seq || (a.seq === old.announcement.seq && !sameAddress(old.from, from)))
    ) {
      this.counters.refused++;
      return [
        this.#refuse(
          TRAVERSAL_TYPES.register,
          'stale',
          `seq ${a.seq} is not newer than ${old.announcement.seq}`,
          from,
          via,
        ),
      ];
    }
    if (old === undefined && this.#nodes.size >= this.#limits.maxNodes) {
      this.counters.refused++;
      return [
        this.#refuse(
          TRAVERSAL_TYPES.register,
          'full',
          `the server keeps at most ${this.#limits.maxNodes} nodes`,
          from,
          via,
        ),
      ];
    }
    this.#nodes.set(a.nodeId, { announcement: a, from });
    this.counters.nodes = this.#nodes.size;
    return [
      {
        to: from,
        via,
        bytes: encodeTraversal({
          type: 'registered',
          ttlS: Math.floor((a.expiresAtMs - nowMs) / 1000),
          reflexive: from,
        }),
      },
    ];
  }

  #nameplate(
    type: 'nameplateClaim' | 'nameplateRelease',
    bytes: Uint8Array,
    from: WireAddress,
    via: 0 | 1,
    nowMs: number,
  ): Outgoing[] {
    const op = type === 'nameplateClaim' ? 'claim' : 'release';
    let a: Announcement;
    try {
      a = decodeAnnouncement(bytes, nowMs);
      if (a.nameplate === undefined) throw new Error('the announcement carries no nameplate');
    } catch (err) {
      this.counters.refused++;
      return [this.#refuse(TRAVERSAL_TYPES[type], 'invalid', (err as Error).message, from, via)];
    }
    const nameplate = a.nameplate;
    const reply = (status: 'ok' | 'taken' | 'absent'): Outgoing[] => [
      { to: from, via, bytes: encodeTraversal({ type: 'nameplateReply', op, status, nameplate }) },
    ];
    const held = this.#nameplates.get(nameplate);
    const live = held !== undefined && held.expiresMs > nowMs ? held : undefined;
    if (live !== undefined && live.nodeId !== a.nodeId) return reply('taken');
    if (op === 'release') {
      if (live === undefined) return reply('absent');
      if (a.seq < live.announcement.seq) return reply('taken'); // an old claim replayed cannot release a newer one
      this.#nameplates.delete(nameplate);
      return reply('ok');
    }
    if (live !== undefined && a.seq < live.announcement.seq) return reply('ok');
    if (live === undefined && this.#nameplates.size >= this.#limits.maxNodes)
      return [this.#refuse(TRAVERSAL_TYPES.nameplateClaim, 'full', 'too many nameplates', from, via)];
    this.#nameplates.set(nameplate, {
      nodeId: a.nodeId,
      announcement: a,
      expiresMs: Math.min(a.expiresAtMs, nowMs + MAX_NAMEPLATE_TTL_MS),
    });
    return reply('ok');
  }

  #relayBind(fromKey: Uint8Array, toKey: Uint8Array, token: Uint8Array, from: WireAddress, nowMs: number): Outgoing[] {
    const tokenHex = hex(token);
    const fromId = nodeIdFromPublicKey(fromKey);
    const toId = nodeIdFromPublicKey(toKey);
    const ready = (status: 'ready' | 'unknown-peer' | 'over-cap', to: WireAddress = from): Outgoing => ({
      to,
      via: 0,
      bytes: encodeTraversal({ type: 'relayReady', token, status }),
    });
    const existing = this.#sessions.get(tokenHex);
    if (existing !== undefined) {
      // The dialer again (a retransmitted bind): offer again. The target: only from where it registered.
      if (existing.a.nodeId === fromId && existing.b.nodeId === toId && sameAddress(existing.a.address, from)) {
        if (existing.b.address !== undefined) return [ready('ready')];
        const target = this.#live(toId, nowMs);
        return target === undefined
          ? [ready('unknown-peer')]
          : [{ to: target.from, via: 0, bytes: encodeTraversal({ type: 'relayOffer', from: fromKey, token }) }];
      }
      if (existing.b.nodeId === fromId && existing.a.nodeId === toId) {
        const registered = this.#live(fromId, nowMs);
        if (registered === undefined || !sameAddress(registered.from, from)) return [];
        existing.b.address = from;
        existing.lastMs = nowMs;
        const dialer = existing.a.address;
        return dialer === undefined ? [ready('ready')] : [ready('ready'), ready('ready', dialer)];
      }
      return []; // someone else's token: say nothing
    }
    const target = this.#live(toId, nowMs);
    if (target === undefined) return [ready('unknown-peer')];
    const cap = this.#limits.relaySessionsPerNode;
    if ((this.#sessionsPerNode.get(fromId) ?? 0) >= cap || (this.#sessionsPerNode.get(toId) ?? 0) >= cap) {
      this.counters.refused++;
      return [ready('over-cap')];
    }
    if (token.length !== RELAY_TOKEN_BYTES) return [];
    const s: RelaySession = {
      token: tokenHex,
      a: { nodeId: fromId, address: from },
      b: { nodeId: toId, address: undefined },
      createdMs: nowMs,
      lastMs: nowMs,
    };
    this.#sessions.set(tokenHex, s);
    for (const id of [fromId, toId]) this.#sessionsPerNode.set(id, (this.#sessionsPerNode.get(id) ?? 0) + 1);
    this.counters.relaySessions = this.#sessions.size;
    return [{ to: target.from, via: 0, bytes: encodeTraversal({ type: 'relayOffer', from: fromKey, token }) }];
  }

  #dropSession(s: RelaySession): void {
    this.#sessions.delete(s.token);
    for (const id of [s.a.nodeId, s.b.nodeId]) {
      const n = (this.#sessionsPerNode.get(id) ?? 1) - 1;
      if (n <= 0) this.#sessionsPerNode.delete(id);
      else this.#sessionsPerNode.set(id, n);
    }
  }

  #relayData(buf: Uint8Array, from: WireAddress, nowMs: number): Outgoing[] {
    if (buf.length < 5 + RELAY_TOKEN_BYTES) return [];
    const s = this.#sessions.get(hex(buf.subarray(5, 5 + RELAY_TOKEN_BYTES)));
    if (s === undefined || s.b.address === undefined) return [];
    const [sender, receiver] = sameAddress(s.a.address, from)
      ? [s.a, s.b]
      : sameAddress(s.b.address, from)
        ? [s.b, s.a]
        : [undefined, undefined];
    if (sender === undefined || receiver?.address === undefined) return [];
    let bucket = this.#relayBuckets.get(sender.nodeId);
    if (bucket === undefined) {
      const rate = this.#limits.relayBytesPerSecond;
      // A quarter second of burst: QUIC's congestion control sees drops beyond the rate and backs off.
      this.#relayBuckets.set(sender.nodeId, (bucket = new Bucket(rate, Math.max(64 * 1024, rate / 4), nowMs)));
    }
    if (!bucket.take(buf.length, nowMs)) {
      this.counters.relayDropped++;
      return [];
    }
    s.lastMs = nowMs;
    this.counters.relayedBytes += buf.length;
    // The datagram goes on unchanged, token and all: no copy, nothing read.
    return [{ to: receiver.address, via: 0, bytes: buf }];
  }
}
