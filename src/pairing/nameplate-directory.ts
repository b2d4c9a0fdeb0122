// Finding an inviter by its code's nameplate, without an address: a NameplateDirectory is anything
// that can say "this node holds nameplate N" (claim, on the inviter's side) and "who holds N?"
// (lookup, on the joiner's side). LAN discovery and the rendezvous server implement it
// (src/reach/); ops/nameplate-directories.ts lists the ones a command uses. A directory only
// introduces: the PAKE runs end to end over the QUIC connection the joiner then dials, so a
// directory that lies can burn a code (one wrong guess) but can neither learn it nor get pinned.

/** An address to dial for a nameplate (a reach DialCandidate fits: it has these members and more). */
export interface NameplateCandidate {
  readonly address: { readonly host: string; readonly port: number };
  /** What the user would recognise: `192.0.2.7:7700 (lan)`. */
  readonly describe: string;
  /** Frees what the candidate holds (a forwarder) once dialled or given up. */
  release(): void;
  /** false: `address` is a local forwarder (a punched or relayed path), never to be pinned. */
  readonly pinnable?: boolean;
}

/** A claim held in a directory until released or expired. */
export interface NameplateClaim {
  release(): Promise<void>;
}

export interface NameplateDirectory {
  /** For messages: `lan`, `rendezvous 203.0.113.5:7800`. */
  readonly name: string;
  /**
   * Announces that this node holds `nameplate` until `expiresAt` (ms since the epoch), or until
   * released. Rejects with a ClawpeerError of code PEER_BUSY when another node holds it there
   * (the inviter picks another); any other rejection means the directory is unusable now.
   */
  claim(
    nameplate: number,
    options: { readonly expiresAt: number; readonly signal?: AbortSignal },
  ): Promise<NameplateClaim>;
  /** Whoever holds `nameplate` in this directory now; [] when nobody does. */
  lookup(nameplate: number, options: { readonly signal?: AbortSignal }): Promise<NameplateCandidate[]>;
}

/** Nameplates start at 1..SMALL (short to read out) and grow when those are taken. */
const RANGES: readonly (readonly [number, number])[] = [
  [1, 99],
  [100, 9_999],
  [10_000, 999_999],
];

/**
 * A nameplate not in `taken`: random among the smallest range that still has room (at most half
 * taken, so random picks rarely collide). `random(n)` gives n uniform bytes.
 */
export function pickNameplate(taken: ReadonlySet<number>, random: (n: number) => Uint8Array): number {
  for (const [lo, hi] of RANGES) {
    const size = hi - lo + 1;
    const inRange = [...taken].filter((n) => n >= lo && n <= hi).length;
    if (inRange * 2 > size) continue;
    for (;;) {
      const b = random(4);
      const v = (((b[0] ?? 0) << 24) | ((b[1] ?? 0) << 16) | ((b[2] ?? 0) << 8) | (b[3] ?? 0)) >>> 0;
      const n = lo + (v % size);
      if (!taken.has(n)) return n;
    }
  }
  throw new RangeError('no nameplate left');
}
