// The rendezvous as a nameplate directory for pairing by short code (pairing/nameplate-directory.ts):
// the inviter claims its code's number there with a signed announcement (nameplates.ts), and a
// joiner looks the number up, learns the holder's node id and key, and reaches it as it would
// reach a paired peer: the holder's announced addresses (the rendezvous lookup) and the traversal
// socket's punched or relayed path. The rendezvous only introduces: the PAKE runs end to end.
import type { Identity } from '../crypto/identity.js';
import type { Logger } from '../logger.js';
import { ClawpeerError } from '../errors.js';
import { formatHostPort } from '../home/address.js';
import type { HostPort } from '../transport/types.js';
import { claimNameplate, lookupNameplate, releaseNameplate } from './nameplates.js';
import type { DialCandidate, PathSource, PeerToReach } from './paths.js';
import { rendezvousSourcesFor } from './rendezvous-paths.js';

/** How long a joiner gathers ways to the holder (a hole punched, else the relay after ~1 s). */
const GATHER_MS = 4_000;

interface Claim {
  release(): Promise<void>;
}

export class RendezvousNameplateDirectory {
  readonly name: string;
  readonly #identity: Identity;
  readonly #rendezvous: HostPort;
  readonly #log: Logger;

  constructor(o: { readonly identity: Identity; readonly rendezvous: HostPort; readonly log: Logger }) {
    this.#identity = o.identity;
    this.#rendezvous = o.rendezvous;
    this.#log = o.log;
    this.name = `rendezvous ${formatHostPort(o.rendezvous)}`;
  }

  /** PEER_BUSY when another node holds the number there (nameplates.ts). */
  async claim(
    nameplate: number,
    options: { readonly expiresAt: number; readonly signal?: AbortSignal },
  ): Promise<Claim> {
    const o = { identity: this.#identity, rendezvous: this.#rendezvous, nameplate };
    await claimNameplate({ ...o, fields: { ttlMs: Math.max(1_000, options.expiresAt - Date.now()) } });
    return { release: () => releaseNameplate(o).catch(() => undefined) };
  }

  /**
   * Ways to the holder of `nameplate`: the traversal path first (it works behind any NAT pair,
   * through the relay at worst), then the addresses its listener announced. The candidates hold
   * the traversal socket; it closes once every one is released.
   */
  async lookup(
    nameplate: number,
    options: { readonly signal?: AbortSignal },
  ): Promise<(DialCandidate & { readonly pinnable?: boolean })[]> {
    const holder = await lookupNameplate({ rendezvous: this.#rendezvous, nameplate });
    if (holder === undefined) return [];
    const peer: PeerToReach = {
      id: holder.nodeId,
      publicKey: holder.publicKey,
      name: `the holder of nameplate ${nameplate}`,
    };
    const rv = rendezvousSourcesFor({ rendezvous: this.#rendezvous, identity: this.#identity, log: this.#log });
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(), GATHER_MS);
    const signal = options.signal === undefined ? stop.signal : AbortSignal.any([options.signal, stop.signal]);
    const gather = async (source: PathSource, out: DialCandidate[], firstEnds: boolean): Promise<void> => {
      try {
        for await (const c of source.find(peer, signal)) {
          out.push(c);
          if (firstEnds) stop.abort(); // one way through the NATs is enough to try first
        }
      } catch (err) {
        this.#log.debug('nameplate holder: a path source failed', {
          source: source.name,
          error: (err as Error).message,
        });
      }
    };
    const traversed: DialCandidate[] = [];
    const announced: DialCandidate[] = [];
    try {
      await Promise.all([gather(rv.traversal, traversed, true), gather(rv.lookup, announced, false)]);
    } finally {
      clearTimeout(timer);
      rv.release(); // the socket stays open while a candidate holds it
    }
    if (traversed.length === 0 && announced.length === 0 && options.signal?.aborted !== true) {
      // Someone holds the number, but the rendezvous knows no way to it: not "nobody holds it".
      throw new ClawpeerError(
        'UNREACHABLE',
        `${this.name} says node ${holder.nodeId} holds nameplate ${nameplate}, but knows no address of it and cannot relay to it: the inviter's listener is not registered there (it must run with --rendezvous ${formatHostPort(this.#rendezvous)})`,
      );
    }
    return [...traversed.map((c) => ({ ...c, pinnable: false })), ...announced];
  }
}
