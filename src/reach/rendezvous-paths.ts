// The dialer's paths through a rendezvous, as two PathSources for the dial race:
// - lookup (priority 1): the peer's signed announcement, verified here (signed by the pinned key,
//   unexpired); its listen addresses are dialled as they are ('direct', or 'mapped' for a port
//   mapping).
// - traversal (priority 2): CONNECT makes the rendezvous tell the peer to punch toward this
//   node's traversal socket while this one punches toward the peer's; once a PING or PONG comes
//   back the hole is open and the candidate is a loopback forwarder whose datagrams leave
//   through that hole ('punched'). When no hole opens in time (symmetric NATs), a relay session
//   through the rendezvous ('relayed'): the same QUIC/TLS session inside, so the relay sees
//   only ciphertext. Forwarder candidates are QUIC only (they carry UDP).
//   A relayed candidate keeps punching in the background (every upgradeEveryMs, upgradeTries
//   times) while it is held; when a hole opens its forwarder moves there (traversal-socket.ts
//   moveTo: same loopback port, so quinn sees nothing change) and path() says 'punched'.
// One traversal socket serves every candidate of these sources; it closes when release() was
// called and every candidate released its forwarder.
import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import type { Identity } from '../crypto/identity.js';
import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import { decodeAnnouncement, type AnnouncedAddress } from '../protocol/announcement.js';
import type { WireAddress } from '../protocol/rendezvous-wire.js';
import type { HostPort } from '../transport/types.js';
import type { DialCandidate, PathKind, PathSource, PeerToReach } from './paths.js';
import { ask, formatAddress, sameBytes } from './rendezvous-client.js';
import { resolveRendezvous } from './listener-reach.js';
import { TraversalSocket, type ForwardRoute, type Forwarder } from './traversal-socket.js';

export interface RendezvousSourcesOptions {
  readonly rendezvous: HostPort;
  readonly identity: Identity;
  readonly log: Logger;
  /** Paths not to offer (tests force one path; also the env CLAWPEER_REACH_DISABLE=punched,relayed,...). */
  readonly disable?: readonly PathKind[];
  /** How long punching may take before the relay is tried, ms. */
  readonly relayAfterMs?: number;
  /** How long punching goes on at most, ms. */
  readonly punchTimeoutMs?: number;
  /** Test hook: the first punch waits this long, ms (past relayAfterMs: the dial starts relayed). */
  readonly firstPunchAfterMs?: number;
  /** A relayed candidate punches again this often to move to a direct path, ms. */
  readonly upgradeEveryMs?: number;
  /** ... this many times at most (0: it stays relayed). */
  readonly upgradeTries?: number;
}

export interface RendezvousSources {
  readonly lookup: PathSource;
  readonly traversal: PathSource;
  /** No more finds; the traversal socket closes once the last candidate is released. */
  release(): void;
}

export const DEFAULT_RELAY_AFTER_MS = 1_000;
export const DEFAULT_PUNCH_TIMEOUT_MS = 3_000;
const PUNCH_INTERVAL_MS = 100;
/**
 * The dialer's first punches are short-lived for longer than the listener's (2): its full
 * punches must not reach the listener's NAT before the listener's own short ones opened it,
 * however much later the rendezvous's CALL_ME_MAYBE reached the listener than its reply us.
 */
const DIALER_SHORT_PUNCHES = 4;
const RELAY_PRIORITY = 3;
export const DEFAULT_UPGRADE_EVERY_MS = 10_000;
export const DEFAULT_UPGRADE_TRIES = 6;

/** Waits `ms` unless `signal` aborts first; true when the time passed. */
function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve(false);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    timer.unref();
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** The paths an env var turns off, for tests and debugging (`CLAWPEER_REACH_DISABLE=punched`). */
export function disabledPathsFromEnv(env: NodeJS.ProcessEnv = process.env): PathKind[] {
  const v = env['CLAWPEER_REACH_DISABLE'];
  if (v === undefined || v === '') return [];
  return v
    .split(',')
    .map((s) => s.trim())
    .filter((s): s is PathKind => ['lan', 'direct', 'mapped', 'punched', 'relayed'].includes(s));
}

/**
 * The candidates of a verified announcement: its listen addresses, dialled as they are. A
 * loopback address is the dialer's own machine unless the rendezvous is there too (tests):
 * dialling it could only reach the wrong node (which TLS pinning would refuse).
 */
export function lookupCandidates(
  addresses: readonly AnnouncedAddress[],
  rendezvous: HostPort,
  disabled: ReadonlySet<PathKind> = new Set(),
): DialCandidate[] {
  const local = isLoopback(rendezvous.host);
  const out: DialCandidate[] = [];
  for (const addr of addresses) {
    if (addr.role !== 'listen' || (isLoopback(addr.host) && !local)) continue;
    const path: PathKind = addr.source === 'mapped' ? 'mapped' : 'direct';
    if (disabled.has(path)) continue;
    const where = formatAddress(addr);
    out.push({
      address: { host: addr.host, port: addr.port },
      path: () => path,
      describe: path === 'mapped' ? `mapped ${where}` : where,
      priority: 1,
      release: () => undefined,
    });
  }
  return out;
}

function isLoopback(host: string): boolean {
  return host.startsWith('127.') || host === '::1' || host.startsWith('::ffff:127.');
}

/** A queue an async generator can wait on while producers push from callbacks. */
class Channel<T> {
  readonly #items: T[] = [];
  #wake: (() => void) | undefined;
  #open = 0;
  #ended = false;
  producer(): () => void {
    this.#open++;
    return () => {
      if (--this.#open === 0) this.end();
    };
  }
  push(v: T): void {
    if (this.#ended) return;
    this.#items.push(v);
    this.#wake?.();
  }
  end(): void {
    this.#ended = true;
    this.#wake?.();
  }
  get ended(): boolean {
    return this.#ended;
  }
  async *drain(signal: AbortSignal): AsyncGenerator<T> {
    const onAbort = (): void => this.end();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) {
        const v = this.#items.shift();
        if (v !== undefined) {
          yield v;
          continue;
        }
        if (this.#ended) return;
        await new Promise<void>((resolve) => (this.#wake = resolve));
        this.#wake = undefined;
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }
}

export function rendezvousSourcesFor(o: RendezvousSourcesOptions): RendezvousSources {
  const log = o.log;
  const disabled = new Set<PathKind>([...(o.disable ?? []), ...disabledPathsFromEnv()]);
  let server: Promise<HostPort> | undefined;
  let socket: Promise<TraversalSocket> | undefined;
  let users = 0;
  let released = false;
  const resolved = (): Promise<HostPort> => (server ??= resolveRendezvous(o.rendezvous));
  const acquire = async (): Promise<TraversalSocket> => {
    users++;
    const s = await resolved();
    return (socket ??= TraversalSocket.open({ host: isIP(s.host) === 6 ? '::' : '0.0.0.0', port: 0, log }));
  };
  const unuse = (): void => {
    if (--users > 0 || !released || socket === undefined) return;
    const s = socket;
    socket = undefined;
    void s.then((t) => t.close()).catch(() => undefined);
  };

  const lookup: PathSource = {
    name: 'rendezvous lookup',
    async *find(peer: PeerToReach, signal: AbortSignal): AsyncIterable<DialCandidate> {
      if (disabled.has('direct') && disabled.has('mapped')) return;
      const t = await acquire();
      try {
        const s = await resolved();
        const bytes = await ask(
          t,
          s,
          { type: 'lookup', publicKey: peer.publicKey },
          (m) =>
            m.type === 'lookupReply' && sameBytes(m.publicKey, peer.publicKey) ? (m.announcement ?? null) : undefined,
          { signal },
        );
        if (bytes === null) {
          log.debug('the rendezvous does not know the peer', { peer: peer.name });
          return;
        }
        let a;
        try {
          a = decodeAnnouncement(bytes, Date.now());
        } catch (err) {
          log.warn('the rendezvous answered with an announcement that does not verify; ignored', {
            peer: peer.name,
            error: (err as Error).message,
          });
          return;
        }
        if (!sameBytes(a.publicKey, peer.publicKey)) {
          log.warn("the rendezvous answered with another node's announcement; ignored", {
            peer: peer.name,
            got: a.nodeId,
          });
          return;
        }
        yield* lookupCandidates(a.addresses, s, disabled);
      } finally {
        unuse();
      }
    },
  };

  const traversal: PathSource = {
    name: 'rendezvous traversal',
    async *find(peer: PeerToReach, signal: AbortSignal): AsyncIterable<DialCandidate> {
      const wantPunch = !disabled.has('punched');
      const wantRelay = !disabled.has('relayed');
      if (!wantPunch && !wantRelay) return;
      const t = await acquire();
      const s = await resolved().catch((err: unknown) => {
        unuse();
        throw err;
      });
      const out = new Channel<DialCandidate>();
      const candidateFor = async (
        route: ForwardRoute,
        describe: string,
        priority: number,
        onRelease?: () => void,
      ): Promise<Forwarder | undefined> => {
        users++;
        try {
          const f = await t.openDialForwarder(route);
          if (out.ended || signal.aborted) {
            // Found after the race moved on: nobody would release it (and its socket would keep the process alive).
            f.close();
            unuse();
            return undefined;
          }
          let done = false;
          out.push({
            address: f.address,
            path: () => f.path,
            describe,
            ...(route.kind === 'relay' ? { relay: formatAddress(route.server) } : {}),
            priority,
            transport: 'quic',
            release: () => {
              if (done) return;
              done = true;
              onRelease?.();
              f.close();
              unuse();
            },
          });
          return f;
        } catch (err) {
          unuse();
          throw err;
        }
      };
      let punched = false;
      const endPunch = out.producer();
      const endRelay = out.producer();
      const cleanups: (() => void)[] = [];
      // A hole: ask the rendezvous to have the peer punch toward us, and punch toward it.
      // both: only a PONG to our PING counts (both directions proven), for moving a live connection.
      const holeToward = async (stop: AbortSignal, both = false): Promise<WireAddress | undefined> => {
        const mux = await ask(
          t,
          s,
          { type: 'connect', target: peer.publicKey, dialer: o.identity.publicKey },
          (m) => (m.type === 'connectReply' && sameBytes(m.target, peer.publicKey) ? (m.mux ?? null) : undefined),
          { signal: stop },
        );
        if (mux === null) {
          log.debug('the rendezvous does not know the peer: no punching', { peer: peer.name });
          return undefined;
        }
        const opened = await new Promise<WireAddress | undefined>((resolve) => {
          const nonce = randomBytes(8);
          const deadline = Date.now() + (o.punchTimeoutMs ?? DEFAULT_PUNCH_TIMEOUT_MS);
          let timer: NodeJS.Timeout | undefined;
          const finish = (v: WireAddress | undefined): void => {
            clearTimeout(timer);
            off();
            stop.removeEventListener('abort', onAbort);
            resolve(v);
          };
          const onAbort = (): void => finish(undefined);
          // The peer may answer from another port than the rendezvous saw (some NATs): take the
          // first PING or PONG from its address; a PING carries its key, a PONG our nonce.
          const off = t.on((m, from) => {
            if (m.type === 'pong' && sameBytes(m.nonce, nonce) && from.host === mux.host) finish(from);
            else if (m.type === 'ping' && !both && sameBytes(m.from, peer.publicKey)) finish(from);
          });
          let sent = 0;
          const tick = (): void => {
            if (Date.now() > deadline) {
              finish(undefined);
              return;
            }
            // The first punches die before the peer's NAT: they only open ours (sendShortLived).
            if (sent++ < DIALER_SHORT_PUNCHES)
              t.sendShortLived({ type: 'ping', nonce, from: o.identity.publicKey }, mux);
            else t.send({ type: 'ping', nonce, from: o.identity.publicKey }, mux);
            timer = setTimeout(tick, PUNCH_INTERVAL_MS);
          };
          stop.addEventListener('abort', onAbort, { once: true });
          tick();
        });
        if (opened === undefined || stop.aborted) {
          log.debug('no hole opened toward the peer', { peer: peer.name, mux: formatAddress(mux) });
          return undefined;
        }
        return opened;
      };
      const punch = async (): Promise<void> => {
        if (!wantPunch) return;
        if (o.firstPunchAfterMs !== undefined && !(await pause(o.firstPunchAfterMs, signal))) return;
        const opened = await holeToward(signal);
        if (opened === undefined) return;
        punched = true;
        await candidateFor({ kind: 'direct', remote: opened }, `punched ${formatAddress(opened)}`, 2);
      };
      // While a relayed candidate is held: punch again now and then; a hole moves its forwarder there.
      const upgrade = async (f: Forwarder, stop: AbortSignal): Promise<void> => {
        const tries = wantPunch ? (o.upgradeTries ?? DEFAULT_UPGRADE_TRIES) : 0;
        for (let i = 0; i < tries; i++) {
          if (!(await pause(o.upgradeEveryMs ?? DEFAULT_UPGRADE_EVERY_MS, stop))) return;
          const opened = await holeToward(stop, true).catch(() => undefined);
          if (stop.aborted) return;
          if (opened !== undefined) {
            f.moveTo(opened);
            log.info('the relayed connection moves to a punched path', { peer: peer.name, to: formatAddress(opened) });
            return;
          }
        }
      };
      const relay = async (): Promise<void> => {
        if (!wantRelay) return;
        if (wantPunch) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, o.relayAfterMs ?? DEFAULT_RELAY_AFTER_MS);
            cleanups.push(() => {
              clearTimeout(timer);
              resolve();
            });
          });
          if (punched || signal.aborted) return;
        }
        const token = randomBytes(8);
        const status = await ask(
          t,
          s,
          { type: 'relayBind', from: o.identity.publicKey, to: peer.publicKey, token },
          (m) => (m.type === 'relayReady' && sameBytes(m.token, token) ? m.status : undefined),
          { signal, tries: 8 },
        );
        if (status !== 'ready') {
          log.info('the rendezvous would not relay', { peer: peer.name, status });
          return;
        }
        const upgrading = new AbortController();
        const f = await candidateFor(
          { kind: 'relay', server: s, token },
          `relay ${formatAddress(s)}`,
          RELAY_PRIORITY,
          () => upgrading.abort(),
        );
        if (f !== undefined) void upgrade(f, upgrading.signal);
      };
      const report =
        (what: string) =>
        (err: unknown): void => {
          if (!signal.aborted) log.info(`${what} failed`, { peer: peer.name, error: (err as Error).message });
        };
      punch().catch(report('punching')).finally(endPunch);
      relay().catch(report('the relay')).finally(endRelay);
      try {
        yield* out.drain(signal);
      } finally {
        for (const c of cleanups) c();
        unuse();
      }
    },
  };

  return {
    lookup,
    traversal,
    release: () => {
      if (released) return;
      released = true;
      users++;
      unuse();
    },
  };
}

/** For callers that must fail loudly: a rendezvous source run with nothing found. */
export function nothingFound(peer: PeerToReach, rendezvous: HostPort): ClawpeerError {
  return new ClawpeerError(
    'UNREACHABLE',
    `peer ${peer.name} not found through rendezvous ${formatAddress(rendezvous)} (is its listener running with the same --rendezvous?)`,
  );
}
