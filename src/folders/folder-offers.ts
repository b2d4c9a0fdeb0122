// Folder offers, as Syncthing's "bob wants to share folder docs. Add?": a paired peer's sync of a
// share this listener neither serves nor has as a folder (SHARE_UNKNOWN: the peer ran `folder
// add --id docs --with us`, and we did not) is remembered here as an offer, so that `status` and
// `folder list` can say so on this side too, with the command that accepts it. An offer goes
// once the folder's id is in config.json (added, with whichever peers), its peer is unpaired, or
// it was not seen again for OFFER_TTL_MS.
//
// Bounded against a hostile paired peer: only valid folder ids count (shown escaped anyway), at
// most MAX_OFFERS_PER_PEER per peer and MAX_OFFERS in all; new ones beyond are dropped, never
// the standing ones. Unpaired peers never get here (refused at the handshake; the dispatcher
// refuses a peer unpaired since), and a peer not in peers.json as the folder service last read
// it is ignored too. Kept across restarts in the home's folder-offers.json (one small atomic
// write per new or gone offer; a peer's retries move `lastSeen` in the file at most every
// LAST_SEEN_WRITE_STEP_MS), a cache: missing or unreadable, it is empty.
import path from 'node:path';
import { isClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import { isFolderId, type FolderConfig } from '../home/folders-config.js';
import type { PeerEntry } from '../home/peer-store.js';
import { removeDeadTemps, writeFileAtomic } from '../support/atomic-file.js';
import { readBounded } from '../support/read-bounded.js';
import { pairKey } from './pair-key.js';

export const FOLDER_OFFERS_FILE = 'folder-offers.json';
/** Offers kept at most, all peers together. */
export const MAX_OFFERS = 64;
/** Offers kept at most per peer: one peer cannot crowd out the others'. */
export const MAX_OFFERS_PER_PEER = 16;
/** An offer not seen again for this long is gone (its peer removed the folder, or stopped asking), ms. */
export const OFFER_TTL_MS = 24 * 60 * 60 * 1000;
/** How far `lastSeen` moves before the file is written again, ms (a peer retrying every few seconds is no write each). */
export const LAST_SEEN_WRITE_STEP_MS = 10 * 60 * 1000;
const MAX_FILE_BYTES = 64 * 1024;
/** A node id is 52 characters; anything much longer in the file is no peer's. */
const MAX_PEER_ID_CHARS = 128;

export interface FolderOffer {
  /** The offering peer's node id. */
  readonly peer: string;
  /** The folder id it asked for (a valid folder id). */
  readonly folder: string;
  /** ms since the epoch. */
  readonly firstSeen: number;
  readonly lastSeen: number;
}

/** An offer as `status` and `folder list` report it: with the peer's pair name here. */
export interface FolderOfferRecord extends FolderOffer {
  readonly name?: string;
}

export function folderOffersFile(homeDir: string): string {
  return path.join(homeDir, FOLDER_OFFERS_FILE);
}

/** The command that accepts an offer: `clawpeer folder add DIR --id docs --with bob`. */
export function acceptCommand(o: FolderOfferRecord): string {
  return `clawpeer folder add DIR --id ${o.folder} --with ${o.name ?? o.peer}`;
}

/**
 * The offers that stand with this config and these pairs at `nowMs`: seen within OFFER_TTL_MS,
 * of a paired peer, of a folder id config.json does not have; with pair names, oldest first.
 */
export function standingOffers(
  offers: Iterable<FolderOffer>,
  folders: readonly FolderConfig[],
  pairs: readonly PeerEntry[],
  nowMs: number,
): FolderOfferRecord[] {
  const names = new Map(pairs.map((p) => [p.id, p.name]));
  const ids = new Set(folders.map((f) => f.id));
  return [...offers]
    .filter((o) => names.has(o.peer) && !ids.has(o.folder) && nowMs - o.lastSeen < OFFER_TTL_MS)
    .map((o) => ({ ...o, name: names.get(o.peer) ?? o.peer }))
    .sort((x, y) => x.firstSeen - y.firstSeen || (x.folder < y.folder ? -1 : 1));
}

/** The offers in the home's file, checked and capped (empty when missing or unreadable). */
export async function readFolderOffers(homeDir: string): Promise<FolderOffer[]> {
  try {
    // Bounded, and a regular file only: a FIFO there would hang the listener's start.
    const text = (await readBounded(folderOffersFile(homeDir), MAX_FILE_BYTES)).toString('utf8');
    const raw = JSON.parse(text) as { version?: unknown; offers?: unknown };
    if (raw.version !== 1 || !Array.isArray(raw.offers)) return [];
    const out: FolderOffer[] = [];
    for (const o of raw.offers as Partial<Record<keyof FolderOffer, unknown>>[]) {
      const { peer, folder, firstSeen, lastSeen } = o ?? {};
      if (typeof peer !== 'string' || peer.length === 0 || peer.length > MAX_PEER_ID_CHARS) continue;
      if (typeof folder !== 'string' || !isFolderId(folder)) continue;
      if (!isTime(firstSeen) || !isTime(lastSeen)) continue;
      out.push({ peer, folder, firstSeen, lastSeen });
    }
    return capped(out);
  } catch {
    return []; // none yet, or unreadable: no offers
  }
}

const isTime = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v > 0;

/** The first offers within MAX_OFFERS_PER_PEER and MAX_OFFERS (a file edited by hand holds no more). */
function capped(offers: readonly FolderOffer[]): FolderOffer[] {
  const perPeer = new Map<string, number>();
  const keys = new Set<string>();
  return offers.filter((o) => {
    const n = perPeer.get(o.peer) ?? 0;
    const key = pairKey(o.folder, o.peer);
    if (n >= MAX_OFFERS_PER_PEER || keys.size >= MAX_OFFERS || keys.has(key)) return false;
    perPeer.set(o.peer, n + 1);
    keys.add(key);
    return true;
  });
}

interface KeptOffer {
  readonly peer: string;
  readonly folder: string;
  readonly firstSeen: number;
  lastSeen: number;
  /** The `lastSeen` the file has. */
  written: number;
}

/** The listener's offers: told of refused syncs (dispatch) and of config.json and peers.json (the folder service). */
export class FolderOffers {
  readonly #homeDir: string;
  readonly #log: Logger;
  /** By pairKey(folder, peer), with the `lastSeen` last written to the file. */
  readonly #offers = new Map<string, KeptOffer>();
  #folders: readonly FolderConfig[] = [];
  /** Empty until the folder service first read peers.json: no offer is taken before. */
  #pairs: readonly PeerEntry[] = [];
  /** The folder service read config.json and peers.json once: the file's offers can be checked. */
  #followed = false;
  #written: Promise<void> = Promise.resolve();

  private constructor(homeDir: string, log: Logger) {
    this.#homeDir = homeDir;
    this.#log = log;
  }

  /** The offers of the home's file (a listener's earlier run saw them). */
  static async load(homeDir: string, log: Logger): Promise<FolderOffers> {
    const offers = new FolderOffers(homeDir, log);
    await removeDeadTemps(folderOffersFile(homeDir));
    for (const o of await readFolderOffers(homeDir))
      offers.#offers.set(pairKey(o.folder, o.peer), { ...o, written: o.lastSeen });
    return offers;
  }

  /** config.json or peers.json as the folder service read them now: offers that no longer stand go. */
  follow(folders: readonly FolderConfig[], pairs: readonly PeerEntry[], nowMs = Date.now()): void {
    this.#folders = folders;
    this.#pairs = pairs;
    this.#followed = true;
    this.#prune(nowMs);
  }

  /**
   * A paired peer's sync of `share` was refused with `err`: an offer when the refusal is
   * SHARE_UNKNOWN and `share` could be a folder of ours-to-be (a valid id config.json lacks).
   */
  refused(peerId: string, share: string, err: unknown, nowMs = Date.now()): void {
    if (!isClawpeerError(err, 'SHARE_UNKNOWN') || !isFolderId(share)) return;
    const pair = this.#pairs.find((p) => p.id === peerId);
    if (pair === undefined || this.#folders.some((f) => f.id === share)) return;
    this.#prune(nowMs);
    const key = pairKey(share, peerId);
    const known = this.#offers.get(key);
    if (known !== undefined) {
      known.lastSeen = Math.max(known.lastSeen, nowMs);
      if (known.lastSeen - known.written >= LAST_SEEN_WRITE_STEP_MS) this.#write();
      return;
    }
    const ofPeer = [...this.#offers.values()].filter((o) => o.peer === peerId).length;
    if (ofPeer >= MAX_OFFERS_PER_PEER || this.#offers.size >= MAX_OFFERS) {
      this.#log.debug('folder offer dropped: too many offers', { peer: peerId, offers: this.#offers.size });
      return;
    }
    const offer = { peer: peerId, folder: share, firstSeen: nowMs, lastSeen: nowMs, written: nowMs };
    this.#offers.set(key, offer);
    this.#log.info(`${pair.name} offers folder ${share}: ${acceptCommand({ ...offer, name: pair.name })}`, {
      peer: peerId,
      folder: share,
    });
    this.#write();
  }

  /** The standing offers, oldest first, for `clawpeer status`. */
  list(nowMs = Date.now()): FolderOfferRecord[] {
    this.#prune(nowMs);
    return standingOffers(this.#offers.values(), this.#folders, this.#pairs, nowMs).map(
      ({ peer, name, folder, firstSeen, lastSeen }) => ({
        peer,
        ...(name === undefined ? {} : { name }),
        folder,
        firstSeen,
        lastSeen,
      }),
    );
  }

  /** The writes under way, done. */
  flushed(): Promise<void> {
    return this.#written;
  }

  /** Drops the offers that no longer stand (none before config.json and peers.json were read). */
  #prune(nowMs: number): void {
    if (!this.#followed) return;
    const standing = new Set(
      standingOffers(this.#offers.values(), this.#folders, this.#pairs, nowMs).map((o) => pairKey(o.folder, o.peer)),
    );
    const gone = [...this.#offers.keys()].filter((k) => !standing.has(k));
    if (gone.length === 0) return;
    for (const k of gone) this.#offers.delete(k);
    this.#write();
  }

  /** Writes the offers to the home's file after the writes before (an older set never lands last). */
  #write(): void {
    this.#written = this.#written.then(async () => {
      const offers = [...this.#offers.values()].map((o) => {
        o.written = o.lastSeen;
        return { peer: o.peer, folder: o.folder, firstSeen: o.firstSeen, lastSeen: o.lastSeen };
      });
      await writeFileAtomic(
        folderOffersFile(this.#homeDir),
        JSON.stringify({ version: 1, offers }) + '\n',
        0o600,
      ).catch((err: unknown) => this.#log.warn('cannot keep the folder offers', { error: (err as Error).message }));
    });
  }
}
