// `clawpeer receive CODE [DIR]`: the receiving side of `send` (listener/send-by-code.ts). Find
// the sender by the code's nameplate (or --addr), prove the code by the same PAKE as `pair join`
// (pair-code-join.ts), the sender pinned in memory only (MemoryPeerStore: nothing in peers.json),
// then pull everything it offers (the paths it named) into DIR on one session, as `pull` would:
// nothing replaced unless --force, each file published whole.
import { ClawpeerError } from '../errors.js';
import { publicKeyFromNodeId } from '../crypto/node-id.js';
import { parseHostPort } from '../home/address.js';
import { MemoryPeerStore } from '../home/memory-peer-store.js';
import { pullAllFromPinned, type PinnedPullOptions } from '../push-pull/transfer-with-peer.js';
import { joinByCode, type CodeJoinOptions } from './pair-code-join.js';

export interface ReceiveByCodeOptions
  extends
    Pick<CodeJoinOptions, 'code' | 'address' | 'directories' | 'confirm' | 'config' | 'log'>,
    Omit<PinnedPullOptions, 'peer'> {
  /** The sender proved the code: its node id and the verification string. */
  readonly onSender?: (s: { readonly id: string; readonly verify: string }) => void;
}

export type ReceiveOutcome = Awaited<ReturnType<typeof pullAllFromPinned>> & {
  readonly sender: string;
  readonly verify: string;
};

export async function receiveByCode(o: ReceiveByCodeOptions): Promise<ReceiveOutcome> {
  const { code, address, directories, confirm, onSender, ...pullOptions } = o;
  const { entry, verify } = await joinByCode({
    identity: o.identity,
    peers: new MemoryPeerStore(''),
    code,
    directories,
    config: o.config,
    log: o.log,
    signal: o.signal,
    name: 'sender',
    ...(address === undefined ? {} : { address }),
    ...(confirm === undefined ? {} : { confirm }),
  }).catch((err: unknown) => {
    // pair join's words name `pair invite`; here a new code comes from the sender's `send`.
    if (err instanceof ClawpeerError && err.code === 'AUTH_FAILED')
      throw new ClawpeerError(
        'AUTH_FAILED',
        err.message.replace('make a new one with `clawpeer pair invite`', 'the sender must run `clawpeer send` again'),
        { cause: err },
      );
    throw err;
  });
  onSender?.({ id: entry.id, verify });
  if (entry.addr === undefined)
    throw new ClawpeerError(
      'UNREACHABLE',
      `the sender ${entry.id} proved the code, but was reached through a forwarded path that cannot be dialled again: ask for a new code and receive with --addr HOST:PORT`,
    );
  const outcome = await pullAllFromPinned({
    ...pullOptions,
    peer: {
      id: entry.id,
      name: entry.id,
      publicKey: publicKeyFromNodeId(entry.id),
      address: parseHostPort(entry.addr),
    },
  });
  return { ...outcome, sender: entry.id, verify };
}
