// Shared helpers for the sync tests: random id sets, a naive set-difference oracle, and a
// loop that runs both reconcile roles against each other through the real codec.

import { createHash, randomBytes } from 'node:crypto';
import { MerkleIdSet, REVISION_ID_BYTES } from '../../src/sync/merkle-root.js';
import {
  decodeReconcileMessage,
  encodeReconcileMessage,
  type ReconcileMessage,
} from '../../src/sync/reconcile-codec.js';
import { ReconcileInitiator, ReconcileResponder, type ReconcileOptions } from '../../src/sync/reconcile.js';

export const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

/** Two packed id sets: `common` shared ids, `onlyA` ids only in A, `onlyB` only in B. */
export function randomSets(
  common: number,
  onlyA: number,
  onlyB: number,
  bytes: (n: number) => Uint8Array = randomBytes,
): { a: Uint8Array; b: Uint8Array } {
  const all = bytes((common + onlyA + onlyB) * REVISION_ID_BYTES);
  const c = all.subarray(0, common * REVISION_ID_BYTES);
  const xa = all.subarray(common * REVISION_ID_BYTES, (common + onlyA) * REVISION_ID_BYTES);
  const xb = all.subarray((common + onlyA) * REVISION_ID_BYTES);
  return { a: Buffer.concat([c, xa]), b: Buffer.concat([xb, c]) };
}

/**
 * A deterministic stand-in for randomBytes: SHA-256 in counter mode from `seed`, fresh bytes on
 * every call. For statistical assertions, which must not fail on a rare draw.
 */
export function seededBytes(seed: string): (n: number) => Uint8Array {
  let counter = 0;
  return (n) => {
    const out = Buffer.allocUnsafe(n);
    for (let at = 0; at < n; at += 32) createHash('sha256').update(`${seed}/${counter++}`).digest().copy(out, at);
    return out;
  };
}

/** The obvious set difference: hex ids of `a` not in `b`, sorted. */
export function naiveDifference(a: Uint8Array, b: Uint8Array): string[] {
  const inB = new Set<string>();
  for (let o = 0; o < b.length; o += REVISION_ID_BYTES) inB.add(hex(b.subarray(o, o + REVISION_ID_BYTES)));
  const out = new Set<string>();
  for (let o = 0; o < a.length; o += REVISION_ID_BYTES) {
    const id = hex(a.subarray(o, o + REVISION_ID_BYTES));
    if (!inB.has(id)) out.add(id);
  }
  return [...out].sort();
}

export const sortedHex = (ids: readonly Uint8Array[]): string[] => ids.map(hex).sort();

/**
 * Runs a whole exchange, every message encoded and decoded on the way. `tamper` may replace a
 * message the responder sends (to play a lying peer).
 */
export function reconcile(
  initiatorIds: Uint8Array,
  responderIds: Uint8Array,
  options: ReconcileOptions = {},
  tamper?: (m: ReconcileMessage, index: number) => ReconcileMessage,
): { initiator: ReconcileInitiator; responder: ReconcileResponder; wireBytes: number } {
  const initiator = new ReconcileInitiator(MerkleIdSet.fromPacked(initiatorIds), options);
  const responder = new ReconcileResponder(MerkleIdSet.fromPacked(responderIds), options);
  let wireBytes = 0;
  let sentByResponder = 0;
  const viaWire = (m: ReconcileMessage): ReconcileMessage => {
    const bytes = encodeReconcileMessage(m);
    wireBytes += bytes.length;
    const decoded = decodeReconcileMessage(bytes);
    if (decoded.kind !== 'message' || decoded.bytesRead !== bytes.length) throw new Error('codec did not round-trip');
    return decoded.message;
  };
  let toResponder = [...initiator.start()];
  for (let steps = 0; toResponder.length > 0; steps++) {
    if (steps > 1000) throw new Error('exchange did not terminate');
    const toInitiator: ReconcileMessage[] = [];
    for (const m of toResponder) {
      for (const r of responder.receive(viaWire(m)))
        toInitiator.push(tamper === undefined ? r : tamper(r, sentByResponder++));
    }
    toResponder = [];
    for (const m of toInitiator) toResponder.push(...initiator.receive(viaWire(m)));
  }
  return { initiator, responder, wireBytes };
}
