// Want bitmaps: which chunks a receiver lacks (bit i is bit i % 8 of byte i >> 3: LSB first).
import { UINT32_MAX, checkUint } from './wire-helpers.js';

/** Bytes of a bitmap of `bits` bits. */
export function bitmapBytes(bits: number): number {
  return Math.ceil(bits / 8);
}

/** An all-zero bitmap of `bits` bits (ceil(bits / 8) bytes). */
export function newBitmap(bits: number): Uint8Array {
  checkUint('bitmap bits', bits, UINT32_MAX);
  return new Uint8Array(bitmapBytes(bits));
}

function bitmapIndex(bitmap: Uint8Array, i: number): void {
  if (!Number.isInteger(i) || i < 0 || i >= bitmap.length * 8)
    throw new RangeError(`bit ${i} is outside a ${bitmap.length}-byte bitmap`);
}

export function bitmapSet(bitmap: Uint8Array, i: number): void {
  bitmapIndex(bitmap, i);
  bitmap[i >>> 3] = (bitmap[i >>> 3] ?? 0) | (1 << (i & 7));
}

export function bitmapGet(bitmap: Uint8Array, i: number): boolean {
  bitmapIndex(bitmap, i);
  return ((bitmap[i >>> 3] ?? 0) & (1 << (i & 7))) !== 0;
}

/** What is wrong with a `bits`-bit bitmap, or undefined: its length and its padding bits. */
export function bitmapProblem(bitmap: Uint8Array, bits: number): string | undefined {
  const expected = bitmapBytes(bits);
  if (bitmap.length !== expected) return `${bitmap.length} bytes for ${bits} chunks, expected ${expected}`;
  const used = bits & 7;
  if (used !== 0 && (bitmap[expected - 1] ?? 0) >> used !== 0) return `padding bits after chunk ${bits - 1} are set`;
  return undefined;
}
