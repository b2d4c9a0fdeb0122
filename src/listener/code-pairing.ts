// The inviter's side of pairing by short code (pairing/code-pake.ts), served from the server's
// pre-auth path: an unpaired key (or a paired one pairing again) whose first message is a
// CodePairStart naming a nameplate of an open code invite. The invite is claimed first, so it is
// used up whatever happens next: a wrong code, a joiner that leaves before confirming, or a
// malformed message burns it (one online guess per code), and the `pair invite` that waits says
// so. The joiner is pinned only after its key confirmation passed and the node id sealed under
// the key matched the key its TLS proved.
import { randomBytes } from 'node:crypto';
import { nodeIdFromPublicKey } from '../crypto/node-id.js';
import type { Identity } from '../crypto/identity.js';
import { ClawpeerError, WIRE_ERRORS } from '../errors.js';
import { MemoryPeerStore } from '../home/memory-peer-store.js';
import type { Logger } from '../logger.js';
import { encodeControlFrame, type CodePairStartMessage } from '../protocol/messages.js';
import type { Connection, DuplexStream } from '../transport/types.js';
import { formatHostPort } from '../home/address.js';
import type { CodeInviteStore } from '../home/code-invites.js';
import { pickPeerName, suggestedName } from '../home/pair-invite.js';
import type { PeerStore } from '../home/peer-store.js';
import { readLoneMessage } from '../session/control-channel.js';
import { InviterPake } from '../pairing/code-pake.js';
import { settledWithin, withTimeout } from '../support/timeouts.js';

/**
 * How long the joiner has to send its confirmation after our reply, ms: its user may be
 * comparing the verification string (`pair join --verify`). Only a connection that claimed an
 * invite waits this long, so at most MAX_OPEN_CODE_INVITES pre-auth slots at once.
 */
export const CODE_CONFIRM_TIMEOUT_MS = 120_000;
/** After our last message, how long the joiner has to read it and close. */
const DONE_GRACE_MS = 2_000;

export interface CodePairingContext {
  readonly identity: Identity;
  readonly peers: PeerStore;
  readonly codeInvites: CodeInviteStore;
  /** HOST:PORT where this listener may be reached, told to the joiner under the key (may be empty). */
  readonly addrs: readonly string[];
  readonly log: Logger;
  readonly signal: AbortSignal;
}

/** Runs the inviter's side of one code pairing on `stream`; never throws for the peer's faults. */
export async function serveCodePairing(
  conn: Connection,
  stream: DuplexStream,
  start: CodePairStartMessage,
  ctx: CodePairingContext,
): Promise<void> {
  const { log, identity, codeInvites } = ctx;
  const joinerId = nodeIdFromPublicKey(conn.remotePublicKey);
  const addr = formatHostPort(conn.remoteAddress);
  const fields = { id: joinerId, addr, nameplate: start.nameplate };
  const refuse = async (wire: keyof typeof WIRE_ERRORS, message: string): Promise<void> => {
    await withTimeout(
      stream.write(encodeControlFrame({ type: 'error', code: WIRE_ERRORS[wire].wire, message })),
      1_000,
      'sending the refusal',
    ).catch(() => undefined);
    await stream.finish().catch(() => undefined);
    await settledWithin(conn.closed, DONE_GRACE_MS);
  };
  const claimed = await codeInvites.claim(start.nameplate).catch((err: unknown) => {
    log.warn('cannot read the code invites', { error: (err as Error).message });
    return undefined;
  });
  if (claimed === undefined) {
    log.info('code pairing refused: no open invite with that nameplate', fields);
    await refuse(
      'NOT_PAIRED',
      `node ${identity.nodeId} has no open pairing code with the number ${start.nameplate} (wrong number, used, or expired)`,
    );
    return;
  }
  const burn = async (reason: string): Promise<void> => {
    log.warn('pairing code burnt', { ...fields, reason });
    await codeInvites.settle(start.nameplate, { outcome: 'burnt', reason }).catch(() => undefined);
  };
  const pake = new InviterPake({
    code: claimed.code,
    inviterKey: identity.publicKey,
    joinerKey: conn.remotePublicKey,
    random: (n) => new Uint8Array(randomBytes(n)),
  });
  let finish;
  try {
    const reply = pake.start({ share: start.share });
    await withTimeout(
      stream.write(encodeControlFrame({ type: 'code-pair-reply', ...reply })),
      5_000,
      'sending CodePairReply',
      ctx.signal,
    );
    const timeoutMs = Math.max(1_000, Math.min(CODE_CONFIRM_TIMEOUT_MS, claimed.expiresAt - Date.now()));
    finish = await readLoneMessage(stream, timeoutMs, ctx.signal);
  } catch (err) {
    const why =
      err instanceof ClawpeerError && err.wire !== undefined
        ? `the joiner gave up: ${err.message}`
        : `the exchange failed: ${(err as Error).message}`;
    await burn(`${why} (it may have had a wrong code; someone may have tried to guess it)`);
    if (!(err instanceof ClawpeerError && err.wire !== undefined))
      await refuse('AUTH_FAILED', 'the pairing code exchange failed: the code is burnt');
    return;
  }
  if (finish?.type !== 'code-pair-finish') {
    await burn(
      `the joiner ${finish === null ? 'left' : `sent ${finish.type}`} before confirming the code (it may have had a wrong code; someone may have tried to guess it)`,
    );
    await refuse('PROTOCOL', 'expected CodePairFinish');
    return;
  }
  let joiner;
  try {
    joiner = pake.finish(finish);
  } catch (err) {
    await burn('a wrong code was tried: someone may have tried to guess it');
    await refuse('AUTH_FAILED', (err as Error).message);
    return;
  }
  // Pinned under the invite's name, else the joiner's suggestion, chosen with peers.json locked.
  const pinAddr = joiner.addrs.find((a) => a.length > 0);
  let entry;
  try {
    ({ entry } = await ctx.peers.add(
      joiner.id,
      (taken, existing) => existing?.name ?? pickPeerName([claimed.name, joiner.name], joiner.id, taken),
      pinAddr,
    ));
  } catch (err) {
    await burn(`the joiner could not be pinned: ${(err as Error).message}`);
    await refuse('IO', 'the inviter could not pin this node');
    return;
  }
  await codeInvites
    .settle(start.nameplate, { outcome: 'paired', id: entry.id, name: entry.name, verify: pake.verify })
    .catch(() => undefined);
  // Warn level, which a listener prints by default: a new key got in. Not for `clawpeer send`'s
  // pin of one transfer, held in memory (it says who proved the code on its own).
  if (ctx.peers instanceof MemoryPeerStore) log.info('code proved for one transfer', { ...fields, name: entry.name });
  else log.warn('paired by code', { ...fields, name: entry.name });
  const done = pake.done({ id: identity.nodeId, addrs: ctx.addrs, name: suggestedName() });
  await withTimeout(
    stream.write(encodeControlFrame({ type: 'code-pair-done', ...done })),
    1_000,
    'sending CodePairDone',
  ).catch(() => undefined);
  await stream.finish().catch(() => undefined);
  await settledWithin(conn.closed, DONE_GRACE_MS); // the joiner closes once it has read it
}
