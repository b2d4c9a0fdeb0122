// Short-code pairing's nameplates on a rendezvous: the inviter claims a number with a signed
// announcement carrying it (so only its key can hold or release it), the joiner looks the
// number up and gets that announcement, which it verifies itself. The PAKE runs end to end over
// QUIC once connected; nothing secret passes the rendezvous.
import { isIP } from 'node:net';
import type { Identity } from '../crypto/identity.js';
import { ClawpeerError } from '../errors.js';
import {
  decodeAnnouncement,
  encodeAnnouncement,
  type Announcement,
  type AnnouncementFields,
} from '../protocol/announcement.js';
import type { HostPort } from '../transport/types.js';
import { ask, formatAddress } from './rendezvous-client.js';
import { TraversalSocket } from './traversal-socket.js';
import { silentLogger } from '../logger.js';

/** A nameplate's holder: its verified announcement (node id, key, addresses). */
export type NameplateEntry = Announcement;

export interface NameplateOptions {
  readonly identity: Identity;
  readonly rendezvous?: HostPort;
  /** Ask through this socket (a listener's traversal socket); default: a socket of its own for the one request. */
  readonly socket?: TraversalSocket;
  /** The rendezvous, resolved (with `socket`). */
  readonly server?: HostPort;
  readonly nameplate: number;
}

const DEFAULT_TTL_MS = 10 * 60_000;

function checkNameplate(n: number): void {
  if (!Number.isInteger(n) || n < 0 || n > 0xffff_ffff)
    throw new ClawpeerError('USAGE', `nameplate ${n} is not an integer 0..4294967295`);
}

async function withSocket<T>(
  o: NameplateOptions,
  use: (socket: TraversalSocket, server: HostPort) => Promise<T>,
): Promise<T> {
  checkNameplate(o.nameplate);
  const server = o.server ?? o.rendezvous;
  if (server === undefined) throw new ClawpeerError('USAGE', 'no rendezvous named for the nameplate');
  if (o.socket !== undefined) return use(o.socket, server);
  const socket = await TraversalSocket.open({
    host: isIP(server.host) === 6 ? '::' : '0.0.0.0',
    port: 0,
    log: silentLogger,
  });
  try {
    return await use(socket, server);
  } finally {
    await socket.close();
  }
}

function fieldsWith(fields: Partial<AnnouncementFields> | undefined, nameplate: number): AnnouncementFields {
  const now = Date.now();
  return {
    seq: fields?.seq ?? now,
    issuedAtMs: fields?.issuedAtMs ?? now,
    ttlMs: fields?.ttlMs ?? DEFAULT_TTL_MS,
    addresses: fields?.addresses ?? [],
    nameplate,
  };
}

/** Claims `nameplate` for this node; PEER_BUSY when another node holds it. */
export async function claimNameplate(
  o: NameplateOptions & { readonly fields?: Partial<AnnouncementFields> },
): Promise<void> {
  await withSocket(o, async (socket, server) => {
    const announcement = encodeAnnouncement(o.identity, fieldsWith(o.fields, o.nameplate));
    const status = await ask(socket, server, { type: 'nameplateClaim', announcement }, (m) =>
      m.type === 'nameplateReply' && m.op === 'claim' && m.nameplate === o.nameplate ? m.status : undefined,
    );
    if (status === 'taken')
      throw new ClawpeerError(
        'PEER_BUSY',
        `nameplate ${o.nameplate} is taken on rendezvous ${formatAddress(server)}: pick another code`,
      );
  });
}

/** Releases a nameplate this node holds (nothing happens for one it does not hold). */
export async function releaseNameplate(
  o: NameplateOptions & { readonly fields?: Partial<AnnouncementFields> },
): Promise<void> {
  await withSocket(o, async (socket, server) => {
    const announcement = encodeAnnouncement(o.identity, fieldsWith(o.fields, o.nameplate));
    await ask(socket, server, { type: 'nameplateRelease', announcement }, (m) =>
      m.type === 'nameplateReply' && m.op === 'release' && m.nameplate === o.nameplate ? m.status : undefined,
    );
  });
}

/** The verified holder of `nameplate`, or undefined. A forged or expired answer throws PROTOCOL. */
export async function lookupNameplate(
  o: Omit<NameplateOptions, 'identity'> & { readonly identity?: Identity },
): Promise<NameplateEntry | undefined> {
  return withSocket(o as NameplateOptions, async (socket, server) => {
    const reply = await ask(socket, server, { type: 'nameplateLookup', nameplate: o.nameplate }, (m) =>
      m.type === 'nameplateReply' && m.op === 'lookup' && m.nameplate === o.nameplate ? m : undefined,
    );
    if (reply.status !== 'ok' || reply.announcement === undefined) return undefined;
    const a = decodeAnnouncement(reply.announcement, Date.now());
    if (a.nameplate !== o.nameplate)
      throw new ClawpeerError(
        'PROTOCOL',
        `rendezvous ${formatAddress(server)} answered nameplate ${o.nameplate} with an announcement for ${a.nameplate ?? 'none'}`,
      );
    return a;
  });
}
