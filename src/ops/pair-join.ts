// `pair join CODE --addr HOST:PORT`: the joining side of pairing by invite (pair-invite.ts).
// Connect, prove the code with our PairRequest, check the listener's proof in its PairAccept,
// and only then pin the key the listener's TLS proved, under a name and the address we dialled.
import { nodeIdFromPublicKey } from '../crypto/node-id.js';
import type { Identity } from '../crypto/identity.js';
import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import { encodeControlFrame } from '../protocol/messages.js';
import type { HostPort } from '../transport/types.js';
import { formatHostPort } from '../home/address.js';
import type { NodeConfig } from '../home/config.js';
import { readLoneMessage } from '../session/control-channel.js';
import { connectTransport, openControlStream } from '../session/dialer.js';
import { pairProof, pickPeerName, proofMatches, suggestedName } from '../home/pair-invite.js';
import type { PeerEntry, PeerStore } from '../home/peer-store.js';

export interface JoinOptions {
  readonly identity: Identity;
  readonly peers: PeerStore;
  readonly address: HostPort;
  /** The invite's secret (parseInviteCode). */
  readonly secret: Uint8Array;
  /** What to pin the listener under; default its own suggestion, else peer-<id>. */
  readonly name?: string;
  readonly config: NodeConfig;
  readonly log: Logger;
  readonly signal?: AbortSignal;
}

/** Pairs with the listener at `address`; returns its entry here (created: it was not pinned before). AUTH_FAILED when it cannot prove the code. */
export async function joinByInvite(o: JoinOptions): Promise<{ entry: PeerEntry; created: boolean }> {
  const where = formatHostPort(o.address);
  const conn = await connectTransport({
    identity: o.identity,
    address: o.address,
    label: where,
    config: o.config,
    log: o.log,
    ...(o.signal === undefined ? {} : { signal: o.signal }),
  });
  try {
    const inviterKey = conn.remotePublicKey;
    const inviterId = nodeIdFromPublicKey(inviterKey);
    if (inviterId === o.identity.nodeId) throw new ClawpeerError('USAGE', `${where} is this node itself`);
    const taken = new Set((await o.peers.list()).filter((p) => p.id !== inviterId).map((p) => p.name));
    if (o.name !== undefined && taken.has(o.name))
      throw new ClawpeerError(
        'USAGE',
        `peer name ${JSON.stringify(o.name)} is already used by another peer: pick another --name`,
      );
    const stream = await openControlStream(conn, o.config.handshakeTimeoutMs, where, o.signal);
    await stream.write(
      encodeControlFrame({
        type: 'pair-request',
        proof: pairProof(o.secret, 'joiner', inviterKey, o.identity.publicKey),
        name: suggestedName(),
      }),
    );
    const answer = await readLoneMessage(stream, o.config.handshakeTimeoutMs, o.signal).catch((err: unknown) => {
      // The listener's own protocol error: a listener of an older version that has our key pinned
      // already (and not by this code: a retry of the join that pinned us gets its PairAccept
      // again) runs its handshake on our request, and wants a Hello. A current one answers a
      // right code with PairAccept and a wrong one with AUTH_FAILED; an unpinned key's is NOT_PAIRED.
      // Nothing proved that key here, so the command left is the owner's to check.
      if (err instanceof ClawpeerError && err.code === 'PROTOCOL' && err.wire !== undefined) {
        throw new ClawpeerError(
          'USAGE',
          `the node at ${where} (${inviterId}) has this node paired already, not by this code: if that is its id (\`clawpeer id\` there), pin it here with \`clawpeer pair add ${inviterId} --name <NAME> --addr ${where}\``,
          { cause: err },
        );
      }
      throw err;
    });
    if (answer?.type !== 'pair-accept')
      throw new ClawpeerError(
        'PROTOCOL',
        `${where} answered the pairing with ${answer === null ? 'nothing' : answer.type}`,
      );
    // It pinned us already if its proof is good; if not, it is not who printed the code.
    if (!proofMatches(pairProof(o.secret, 'inviter', inviterKey, o.identity.publicKey), answer.proof)) {
      throw new ClawpeerError(
        'AUTH_FAILED',
        `the node at ${where} (${inviterId}) could not prove it knows the invite code: not pinned`,
      );
    }
    await stream.finish().catch(() => undefined);
    // The name is chosen with peers.json locked: a pairing at the same moment may have taken one.
    return await o.peers.add(
      inviterId,
      (takenNow, existing) => o.name ?? existing?.name ?? pickPeerName([answer.name], inviterId, takenNow),
      where,
    );
  } finally {
    await conn.close().catch(() => undefined);
  }
}
