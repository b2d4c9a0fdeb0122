// LAN discovery as a nameplate directory for pairing by short code (pairing/nameplate-directory.ts):
// a listener answers LAN queries for the nameplates it holds (lan-discovery.ts answers a nameplate
// query when the nameplate is in `held()`), and a joiner with no address asks the LAN who holds
// its code's number. A claim first asks the LAN whether another node answers for that number:
// then it is busy and the inviter picks another.
// What a neighbour can do: stay silent, or answer for a nameplate it does not hold and take the
// joiner's one guess (the code is burnt, nothing pinned: the PAKE runs end to end).
import { ClawpeerError } from '../errors.js';
import { formatHostPort } from '../home/address.js';
import { findByNameplate, type LanDiscoveryOptions } from './lan-discovery.js';

interface Claim {
  readonly release: () => Promise<void>;
}

interface Candidate {
  readonly address: { readonly host: string; readonly port: number };
  readonly describe: string;
  release(): void;
}

export class LanNameplateDirectory {
  readonly name = 'lan';
  readonly #options: LanDiscoveryOptions;
  readonly #selfId: string;
  /** Nameplate -> when its claim expires (ms since the epoch); a count per nameplate for repeated claims. */
  readonly #held = new Map<number, { expiresAt: number; claims: number }>();

  constructor(options: LanDiscoveryOptions, selfNodeId: string) {
    this.#options = options;
    this.#selfId = selfNodeId;
  }

  /** The nameplates this process answers LAN queries for now. */
  held(): number[] {
    const now = Date.now();
    for (const [n, h] of this.#held) if (h.expiresAt <= now) this.#held.delete(n);
    return [...this.#held.keys()];
  }

  async claim(
    nameplate: number,
    options: { readonly expiresAt: number; readonly signal?: AbortSignal },
  ): Promise<Claim> {
    const others = (
      await findByNameplate(nameplate, {
        ...this.#options,
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      })
    ).filter((h) => h.nodeId !== this.#selfId);
    if (others.length > 0)
      throw new ClawpeerError(
        'PEER_BUSY',
        `nameplate ${nameplate} is held on the LAN by node ${others[0]?.nodeId ?? '?'}`,
      );
    const h = this.#held.get(nameplate);
    this.#held.set(nameplate, {
      expiresAt: Math.max(h?.expiresAt ?? 0, options.expiresAt),
      claims: (h?.claims ?? 0) + 1,
    });
    let released = false;
    return {
      release: async () => {
        if (released) return;
        released = true;
        const now = this.#held.get(nameplate);
        if (now === undefined) return;
        if (now.claims <= 1) this.#held.delete(nameplate);
        else this.#held.set(nameplate, { ...now, claims: now.claims - 1 });
      },
    };
  }

  async lookup(nameplate: number, options: { readonly signal?: AbortSignal }): Promise<Candidate[]> {
    const holders = await findByNameplate(nameplate, {
      ...this.#options,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
    return holders.flatMap((h) =>
      h.addresses.map((address) => ({
        address,
        describe: `${formatHostPort(address)} (lan)`,
        release: () => undefined,
      })),
    );
  }
}
