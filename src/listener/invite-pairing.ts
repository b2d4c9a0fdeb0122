// Pairing by invite on a listener's connection (server.ts): an unpaired key's PairRequest or
// short-code start while an invite is open, and a paired key's PairRequest (a joiner retrying,
// or joining again with a new code). A proof of an open invite pins the key and is answered with
// our proof; anything else is refused with its reason.
import { nodeIdFromPublicKey } from '../crypto/node-id.js';
import type { Identity } from '../crypto/identity.js';
import { WIRE_ERRORS } from '../errors.js';
import type { Logger } from '../logger.js';
import { encodeControlFrame, type ControlMessage } from '../protocol/messages.js';
import type { Connection, DuplexStream } from '../transport/types.js';
import { formatHostPort } from '../home/address.js';
import { readLoneMessage } from '../session/control-channel.js';
import { pairProof, pickPeerName, proofMatches, suggestedName, type InviteStore } from '../home/pair-invite.js';
import type { CodeInviteStore } from '../home/code-invites.js';
import type { PeerStore } from '../home/peer-store.js';
import { settledWithin, withTimeout } from '../support/timeouts.js';
import { serveCodePairing } from './code-pairing.js';

/** How long a joiner (or a refused one) gets to read our answer and close, ms (server.ts REFUSAL_TIMEOUT_MS). */
const ANSWER_READ_MS = 2_000;

export interface InvitePairingOptions {
  readonly identity: Identity;
  readonly peers: PeerStore;
  readonly log: Logger;
  readonly codeInvites: CodeInviteStore | undefined;
  /** The listener's bound addresses: a short code's joiner learns them. */
  readonly bound: readonly { readonly host: string; readonly port: number }[];
  /** The listener's stop. */
  readonly signal: AbortSignal;
}

export class InvitePairing {
  readonly #o: InvitePairingOptions;

  constructor(o: InvitePairingOptions) {
    this.#o = o;
  }

  /**
   * An unpaired key's one message while an invite is open. A PairRequest whose proof matches an
   * open invite pins the key and is answered with our proof (undefined: done); anything else is
   * refused (the refusal text, or 'not-paired' for the usual one).
   */
  async pairByInvite(
    conn: Connection,
    stream: DuplexStream,
    invites: InviteStore | undefined,
    timeoutMs: number,
  ): Promise<string | undefined> {
    const { log, identity, peers } = this.#o;
    const peerId = nodeIdFromPublicKey(conn.remotePublicKey);
    const request = await readLoneMessage(stream, timeoutMs, this.#o.signal).catch(() => null);
    if (request?.type === 'code-pair-start' && this.#o.codeInvites !== undefined) {
      await serveCodePairing(conn, stream, request, this.#codePairingContext(this.#o.codeInvites));
      return undefined; // answered (paired, or refused with its own reason)
    }
    if (request?.type !== 'pair-request' || invites === undefined) return 'not-paired';
    const redeemed = await invites.redeem((secret) =>
      proofMatches(pairProof(secret, 'joiner', identity.publicKey, conn.remotePublicKey), request.proof),
    );
    if (redeemed === undefined)
      return `node ${peerId} is not paired with ${identity.nodeId}: the invite code was not accepted (wrong, used or expired)`;
    // Chosen with peers.json locked: redemptions at the same moment must not pick one name.
    const { entry } = await peers.add(peerId, (taken) => pickPeerName([redeemed.name, request.name], peerId, taken));
    const { name } = entry;
    // Told at warn level, which a listener prints by default: a new key got in.
    log.warn('paired by invite', { id: peerId, name, addr: formatHostPort(conn.remoteAddress) });
    await this.#acceptPairing(conn, stream, redeemed.secret);
    return undefined;
  }

  /**
   * A paired key's PairRequest instead of a Hello: the joiner of an invite we redeemed for it,
   * retrying because our PairAccept never reached it (its proof matches that used invite), or a
   * node paired here already joining with a new code. A proof of an open invite uses it up and
   * gets our proof (the joiner pins us: what it asked for); a wrong, used or expired code is
   * refused with AUTH_FAILED saying it is paired here already, as an unpaired key's wrong code
   * is refused. False: not a PairRequest (the handshake refuses it).
   */
  async confirmPairing(
    conn: Connection,
    stream: DuplexStream,
    invites: InviteStore,
    request: ControlMessage,
  ): Promise<boolean> {
    if (request.type === 'code-pair-start' && this.#o.codeInvites !== undefined) {
      // A node paired here already, joining with a new code: its pin and name stay as they are.
      await serveCodePairing(conn, stream, request, this.#codePairingContext(this.#o.codeInvites));
      return true;
    }
    if (request.type !== 'pair-request') return false;
    const { identity, log } = this.#o;
    const peerId = nodeIdFromPublicKey(conn.remotePublicKey);
    const addr = formatHostPort(conn.remoteAddress);
    const proves = (secret: Uint8Array): boolean =>
      proofMatches(pairProof(secret, 'joiner', identity.publicKey, conn.remotePublicKey), request.proof);
    const used = await invites.confirm(proves).catch(() => undefined);
    if (used !== undefined) {
      // Warn level, as 'paired by invite': someone used the invite's code.
      log.warn('pairing by invite confirmed again (the joiner retried)', { id: peerId, addr });
      await this.#acceptPairing(conn, stream, used.secret);
      return true;
    }
    const redeemed = await invites.redeem(proves).catch(() => undefined);
    if (redeemed !== undefined) {
      // Its pin (and name) here stay as they are; the joiner pins us with the code's proof.
      log.warn('invite used by a node paired already: confirmed', { id: peerId, addr });
      await this.#acceptPairing(conn, stream, redeemed.secret);
      return true;
    }
    log.info('pairing refused: a node paired already sent a wrong, used or expired invite code', { id: peerId, addr });
    const message = `the invite code was not accepted (wrong, used or expired); node ${peerId} is paired with ${identity.nodeId} already and needs no invite here`;
    await withTimeout(
      stream.write(encodeControlFrame({ type: 'error', code: WIRE_ERRORS.AUTH_FAILED.wire, message })),
      1_000,
      'sending AUTH_FAILED',
    ).catch(() => undefined);
    await stream.finish().catch(() => undefined);
    await settledWithin(conn.closed, ANSWER_READ_MS);
    return true;
  }

  #codePairingContext(codeInvites: CodeInviteStore): Parameters<typeof serveCodePairing>[3] {
    const { identity, peers, log } = this.#o;
    // Our addresses as bound; a wildcard bind cannot say which one the joiner reaches (it pins the one it dialled).
    const addrs = [
      ...new Set(
        this.#o.bound
          .filter((b) => b.host !== '0.0.0.0' && b.host !== '::')
          .map((b) => formatHostPort({ host: b.host, port: b.port })),
      ),
    ];
    return { identity, peers, codeInvites, addrs, log, signal: this.#o.signal };
  }

  /** Sends our PairAccept (our proof of the invite's secret) and lets the joiner close. */
  async #acceptPairing(conn: Connection, stream: DuplexStream, secret: Uint8Array): Promise<void> {
    const { identity } = this.#o;
    await withTimeout(
      stream.write(
        encodeControlFrame({
          type: 'pair-accept',
          proof: pairProof(secret, 'inviter', identity.publicKey, conn.remotePublicKey),
          name: suggestedName(),
        }),
      ),
      1_000,
      'sending PairAccept',
    ).catch(() => undefined);
    await stream.finish().catch(() => undefined);
    await settledWithin(conn.closed, ANSWER_READ_MS); // the joiner closes once it has read it
  }
}
