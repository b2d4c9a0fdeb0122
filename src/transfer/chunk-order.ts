// The order both sides give the distinct chunks of a transfer: first appearance over the
// manifest entries in order. The receiver's Want is a bitmap over this order, so it costs one
// bit per distinct chunk instead of a 32-byte id.
import { ClawpeerError } from '../errors.js';
import { bitmapBytes, bitmapGet, bitmapSet, newBitmap, type ManifestEntry } from '../protocol/messages.js';
import { CHUNK_ID_BYTES, chunkKey } from './plan.js';

export function chunkIdAt(entry: ManifestEntry, index: number): Uint8Array {
  return entry.chunkIds.subarray(index * CHUNK_ID_BYTES, (index + 1) * CHUNK_ID_BYTES);
}

/** Distinct chunk ids (as hex keys) in first-appearance order, with their ids. */
export function uniqueChunks(entries: readonly ManifestEntry[]): { keys: string[]; ids: Map<string, Uint8Array> } {
  const ids = new Map<string, Uint8Array>();
  for (const entry of entries) {
    for (let i = 0; i < entry.chunkLengths.length; i++) {
      const id = chunkIdAt(entry, i);
      const key = chunkKey(id);
      if (!ids.has(key)) ids.set(key, id);
    }
  }
  return { keys: [...ids.keys()], ids };
}

/** The receiver's Want: a bitmap over the distinct chunks in this order (set = lacking). */
export interface WantInfo {
  readonly lacking: Uint8Array;
  readonly uniqueCount: number;
}

/** The keys a Want asks for; PROTOCOL when it does not match the announced chunk count. */
export function lackingKeys(keys: readonly string[], want: WantInfo): Set<string> {
  const { lacking: bitmap, uniqueCount } = want;
  if (uniqueCount !== keys.length) {
    throw new ClawpeerError(
      'PROTOCOL',
      `want covers ${uniqueCount} chunks, but the manifest has ${keys.length} distinct chunks`,
    );
  }
  if (bitmap.length !== bitmapBytes(keys.length))
    throw new ClawpeerError('PROTOCOL', `want bitmap has ${bitmap.length} bytes for ${keys.length} chunks`);
  const out = new Set<string>();
  keys.forEach((key, i) => {
    if (bitmapGet(bitmap, i)) out.add(key);
  });
  return out;
}

export function bitmapFromKeys(keys: readonly string[], lacking: ReadonlySet<string>): Uint8Array {
  const bitmap = newBitmap(keys.length);
  keys.forEach((key, i) => {
    if (lacking.has(key)) bitmapSet(bitmap, i);
  });
  return bitmap;
}
