// `pair join CODE`: the joining side of pairing by short code (pairing/code-pake.ts). Find the
// inviter (the --addr typed, else whoever the nameplate directories say holds the code's
// nameplate), connect, run the PAKE over the control stream, and pin the inviter only after its
// key confirmation passed and the node id it sealed under the key matched the key its TLS proved.
import { randomBytes } from 'node:crypto';
import { nodeIdFromPublicKey } from '../crypto/node-id.js';
import type { Identity } from '../crypto/identity.js';
import { ClawpeerError, WIRE_ERRORS } from '../errors.js';
import type { Logger } from '../logger.js';
import { encodeControlFrame } from '../protocol/messages.js';
import type { Connection, HostPort } from '../transport/types.js';
import { formatHostPort } from '../home/address.js';
import type { NodeConfig } from '../home/config.js';
import { pickPeerName, suggestedName } from '../home/pair-invite.js';
import type { PeerEntry, PeerStore } from '../home/peer-store.js';
import { readLoneMessage } from '../session/control-channel.js';
import { connectTransport, openControlStream } from '../session/dialer.js';
import { JoinerPake } from '../pairing/code-pake.js';
import type { ParsedCode } from '../pairing/code-words.js';
import type { NameplateCandidate, NameplateDirectory } from '../pairing/nameplate-directory.js';

/** How long the inviter has to answer each message, ms (it answers at once). */
const ANSWER_TIMEOUT_MS = 15_000;

export interface CodeJoinOptions {
  readonly identity: Identity;
  readonly peers: PeerStore;
  readonly code: ParsedCode;
  /** --addr: where the inviter listens; when absent, the directories are asked. */
  readonly address?: HostPort;
  readonly directories: readonly NameplateDirectory[];
  /** What to pin the inviter under; default its own suggestion, else peer-<id>. */
  readonly name?: string;
  /** Where this node listens (HOST:PORT), told to the inviter under the key so it can dial back. */
  readonly ownAddrs?: readonly string[];
  /**
   * Called with the verification string once the inviter proved the code, before anything is
   * pinned or revealed: false stops (nothing pinned; the inviter burns the code). Default: go on.
   */
  readonly confirm?: (verify: string) => Promise<boolean>;
  readonly config: NodeConfig;
  readonly log: Logger;
  readonly signal?: AbortSignal;
}

export interface CodeJoinResult {
  readonly entry: PeerEntry;
  readonly created: boolean;
  /** The verification string (the inviter's `pair invite` prints the same). */
  readonly verify: string;
}

/**
 * Pairs with whoever holds the code's nameplate: the --addr given, else each candidate the
 * directories name in turn, until one holds it (one that answers it has no such code did not use
 * it up, so the next may be tried). AUTH_FAILED on a wrong code (burnt on both sides).
 */
export async function joinByCode(o: CodeJoinOptions): Promise<CodeJoinResult> {
  const targets = await inviterCandidates(o);
  try {
    let last: unknown;
    for (const target of targets) {
      let conn: Connection;
      try {
        conn = await connectTransport({
          identity: o.identity,
          address: target.address,
          label: target.describe,
          config: o.config,
          log: o.log,
          ...(o.signal === undefined ? {} : { signal: o.signal }),
        });
      } catch (err) {
        if (o.signal?.aborted === true || targets.length === 1) throw err;
        o.log.info('inviter candidate did not connect', { candidate: target.describe, error: (err as Error).message });
        last = err;
        continue;
      }
      try {
        return await exchange(o, conn, target.pinnable !== false);
      } catch (err) {
        if (!(err instanceof NameplateNotHeld) || targets.length === 1) throw err;
        o.log.info('inviter candidate holds no such code', { candidate: target.describe, error: err.message });
        last = err;
      }
    }
    throw new ClawpeerError(
      'UNREACHABLE',
      `no candidate for nameplate ${o.code.nameplate} took the code (${targets.map((c) => c.describe).join(', ')}): ${(last as Error).message}`,
      { cause: last },
    );
  } finally {
    // Each connection is closed by now; what a candidate holds (a forwarder) can go.
    for (const c of targets) c.release();
  }
}

/** The candidate's answer to CodePairStart said it holds no open code of that number: nothing was used up. */
class NameplateNotHeld extends ClawpeerError {}

/** The PAKE over one connection; closes it. */
async function exchange(o: CodeJoinOptions, conn: Connection, pinnable: boolean): Promise<CodeJoinResult> {
  const where = formatHostPort(conn.remoteAddress);
  try {
    const inviterKey = conn.remotePublicKey;
    const inviterId = nodeIdFromPublicKey(inviterKey);
    if (inviterId === o.identity.nodeId) throw new NameplateNotHeld('USAGE', `${where} is this node itself`);
    // Checked before the code is used: a mistake here must not burn it.
    const clash = (await o.peers.list()).find((p) => p.id !== inviterId && p.name === o.name);
    if (clash !== undefined)
      throw new ClawpeerError(
        'USAGE',
        `peer name ${JSON.stringify(o.name)} is already used by ${clash.id}: pick another --name`,
      );
    const stream = await openControlStream(conn, o.config.handshakeTimeoutMs, where, o.signal);
    const pake = new JoinerPake({
      code: o.code,
      inviterKey,
      joinerKey: o.identity.publicKey,
      random: (n) => new Uint8Array(randomBytes(n)),
    });
    await stream.write(encodeControlFrame({ type: 'code-pair-start', ...pake.start() }));
    const reply = await readLoneMessage(stream, ANSWER_TIMEOUT_MS, o.signal).catch((err: unknown) => {
      if (err instanceof ClawpeerError && err.code === 'PEER_NOT_PAIRED')
        throw new NameplateNotHeld('PEER_NOT_PAIRED', err.message, {
          cause: err,
          ...(err.wire === undefined ? {} : { wire: err.wire }),
        });
      throw err;
    });
    if (reply?.type !== 'code-pair-reply')
      throw new ClawpeerError('PROTOCOL', `${where} answered the code with ${reply === null ? 'nothing' : reply.type}`);
    let verify: string;
    try {
      ({ verify } = pake.reply(reply));
    } catch (err) {
      // Tell the inviter, so its `pair invite` says at once that the code is burnt.
      await stream
        .write(
          encodeControlFrame({
            type: 'error',
            code: WIRE_ERRORS.AUTH_FAILED.wire,
            message: 'the pairing code did not match: burnt',
          }),
        )
        .catch(() => undefined);
      await stream.finish().catch(() => undefined);
      throw err;
    }
    if (o.confirm !== undefined && !(await o.confirm(verify))) {
      await stream
        .write(
          encodeControlFrame({
            type: 'error',
            code: WIRE_ERRORS.AUTH_FAILED.wire,
            message: "the joiner's user did not confirm the verification string",
          }),
        )
        .catch(() => undefined);
      await stream.finish().catch(() => undefined);
      throw new ClawpeerError(
        'AUTH_FAILED',
        'verification not confirmed: nothing pinned, and the code is burnt on both sides',
      );
    }
    await stream.write(
      encodeControlFrame({
        type: 'code-pair-finish',
        ...pake.finish({ id: o.identity.nodeId, addrs: o.ownAddrs ?? [], name: suggestedName() }),
      }),
    );
    const done = await readLoneMessage(stream, ANSWER_TIMEOUT_MS, o.signal);
    if (done?.type !== 'code-pair-done')
      throw new ClawpeerError(
        'PROTOCOL',
        `${where} answered the confirmation with ${done === null ? 'nothing' : done.type}`,
      );
    const inviter = pake.done(done);
    await stream.finish().catch(() => undefined);
    // The address we dialled worked; one the inviter told us is for when we dialled a relay. A
    // forwarder's loopback address (a punched or relayed path) is never pinned: the peer is
    // found again through the rendezvous.
    const addr = o.address !== undefined ? where : (inviter.addrs[0] ?? (pinnable ? where : undefined));
    const { entry, created } = await o.peers.add(
      inviterId,
      (takenNow, existing) => o.name ?? existing?.name ?? pickPeerName([inviter.name], inviterId, takenNow),
      addr,
    );
    return { entry, created, verify };
  } finally {
    await conn.close().catch(() => undefined);
  }
}

/** Where to dial: --addr alone, else what the directories say holds the nameplate. */
async function inviterCandidates(o: CodeJoinOptions): Promise<NameplateCandidate[]> {
  if (o.address !== undefined)
    return [{ address: o.address, describe: formatHostPort(o.address), release: () => undefined }];
  if (o.directories.length === 0) {
    throw new ClawpeerError(
      'USAGE',
      `cannot look up nameplate ${o.code.nameplate}: no LAN discovery or rendezvous is available; give the inviter's address: clawpeer pair join ${o.code.text} --addr HOST:PORT`,
    );
  }
  const nameplate = Number(o.code.nameplate);
  const found = await Promise.allSettled(
    o.directories.map((d) => d.lookup(nameplate, o.signal === undefined ? {} : { signal: o.signal })),
  );
  const asked: string[] = [];
  for (const [i, r] of found.entries()) {
    const name = o.directories[i]?.name ?? 'a directory';
    if (r.status === 'fulfilled') asked.push(name);
    else {
      const error = (r.reason as Error).message;
      o.log.info('nameplate lookup failed', { directory: name, error });
      asked.push(`${name}, which failed: ${error}`);
    }
  }
  const candidates = found.flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
  if (candidates.length === 0) {
    // A directory that failed (a rendezvous that is down, or that knows the holder but no way to
    // it) did not say nobody holds it.
    const lead = found.every((r) => r.status === 'rejected')
      ? `cannot reach the holder of nameplate ${o.code.nameplate}`
      : `nobody holds nameplate ${o.code.nameplate}`;
    throw new ClawpeerError(
      'UNREACHABLE',
      `${lead} (asked: ${asked.join('; ')}); check the number, or give the inviter's address with --addr HOST:PORT`,
    );
  }
  return candidates;
}
