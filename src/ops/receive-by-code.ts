// `clawpeer receive CODE [DIR]`: the receiving side of `send` (listener/send-by-code.ts). Find
// the sender by the code's nameplate (or --addr), prove the code by the same PAKE as `pair join`
// (pair-code-join.ts), the sender pinned in memory only (MemoryPeerStore: nothing in peers.json),
// then pull everything it offers (the paths it named) into DIR on one session, as `pull` would:
// nothing replaced unless --force, each file published whole. Before the first pull the offer
// is counted (push-pull/offer-totals.ts): refused when it cannot fit in DIR's file system
// (keeping pull's 1% margin, store/free-space.ts), else the user is asked (`accept`, the CLI's
// question): a no is DECLINED, told to the sender, nothing written.
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { ClawpeerError } from '../errors.js';
import { publicKeyFromNodeId } from '../crypto/node-id.js';
import { parseHostPort } from '../home/address.js';
import { MemoryPeerStore } from '../home/memory-peer-store.js';
import { fileSystemSpace, spaceShortfall } from '../store/free-space.js';
import { pullAllFromPinned, type OfferTotals, type PinnedPullOptions } from '../push-pull/transfer-with-peer.js';
import { joinByCode, type CodeJoinOptions } from './pair-code-join.js';

export interface ReceiveByCodeOptions
  extends
    Pick<CodeJoinOptions, 'code' | 'address' | 'directories' | 'confirm' | 'config' | 'log'>,
    Omit<PinnedPullOptions, 'peer' | 'onOffer'> {
  /** The sender proved the code: its node id and the verification string. */
  readonly onSender?: (s: { readonly id: string; readonly verify: string }) => void;
  /** What is offered, counted, before anything is checked or written. */
  readonly onOffer?: (offer: OfferTotals) => void;
  /** What is offered, once it fits: false declines it (absent: accepted). */
  readonly accept?: (offer: OfferTotals) => Promise<boolean>;
}

export type ReceiveOutcome = Awaited<ReturnType<typeof pullAllFromPinned>> & {
  readonly sender: string;
  readonly verify: string;
};

export async function receiveByCode(o: ReceiveByCodeOptions): Promise<ReceiveOutcome> {
  const { code, address, directories, confirm, onSender, onOffer, accept, ...pullOptions } = o;
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
    onOffer: async (offer) => {
      onOffer?.(offer);
      if (o.dryRun !== true) await ensureRoom(o.localPath, offer.bytes);
      if (accept !== undefined && !(await accept(offer)))
        throw new ClawpeerError('DECLINED', `declined what the sender ${entry.id} offers: nothing was received`);
    },
  });
  return { ...outcome, sender: entry.id, verify };
}

/**
 * IO when `bytes` would not fit in `dir`'s file system keeping pull's margin (the figures named,
 * not the path: the sender reads the same words). A file system that cannot say is not checked.
 */
async function ensureRoom(dir: string, bytes: number): Promise<void> {
  if (bytes <= 0) return;
  const space = await fileSystemSpace(await nearestDir(dir)).catch(() => undefined);
  const short = space === undefined ? undefined : spaceShortfall(bytes, space);
  if (short !== undefined)
    throw new ClawpeerError('IO', `not enough disk space for what the sender offers: ${short}; nothing was received`);
}

/** `dir`, or the nearest directory above it that exists (the pull makes the rest): where its file system is asked. */
async function nearestDir(dir: string): Promise<string> {
  for (let at = path.resolve(dir); ; at = path.dirname(at)) {
    const st = await stat(at).catch(() => undefined);
    if (st?.isDirectory() === true || path.dirname(at) === at) return at;
  }
}
