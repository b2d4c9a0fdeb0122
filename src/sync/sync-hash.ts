// The one hash the sync core uses: plain BLAKE3 with a 32-byte output, for Merkle nodes.
//
// Kept behind this single import; it is src/chunking/blake3.ts's (which picks a native or wasm
// backend, and hashes inputs this small in wasm, where they are faster). Non-goals: keyed or XOF
// modes; the RIBLT cell checksums deliberately do not use this (see riblt.ts: they need ~50 ns
// per id, a native call costs ~3 µs on this machine).

import { blake3 } from '../chunking/blake3.js';

/** Output length of `syncHash`, bytes. */
export const SYNC_HASH_BYTES = 32;

/** BLAKE3(data), 32 bytes. */
export function syncHash(data: Uint8Array): Uint8Array {
  return blake3(data);
}
