// FastCDC's hot loop: roll the gear hash over a run of bytes until a masked test hits.
//
// Goal: the same answer as the plain loop in `gearScanJs` (fastcdc.ts defines the hash), faster.
// Why WebAssembly: the JS loop ran at ~400-800 MB/s of hashed bytes here (bounds checks, and a
// Buffer reaching it deoptimises it); this small wasm loop, unrolled 8x, runs ~2-3x faster, which
// took ~1.3 of the ~2 s a 1 GiB file spent being chunked before its push could start.
// How: one small module, assembled below from its opcodes (no toolchain, no binary file), whose
// memory holds the gear table at 0..1023 and a block of input after it. Input is copied in, a
// block at a time: the copy costs ~0.1 s/GiB, less than the loop saves. Synchronous and
// single-threaded like the rest of a chunker; every thread that imports this gets its own instance.
// Fallback: gearScanJs when WebAssembly cannot be instantiated (e.g. node --jitless).

import { GEAR_TABLE_I32 } from './gear-table.js';

/**
 * Rolls `hash` over bytes[start, stop): hash = ((hash << 1) + GEAR[b]) | 0 per byte, stopping at
 * the first byte after which (hash & mask) === 0. Returns that byte's index (the chunk ends after
 * it) or -1 when no byte hit; `hash` is the state after the last byte rolled either way.
 */
export interface GearScan {
  (bytes: Uint8Array, start: number, stop: number, hash: number, mask: number): { index: number; hash: number };
}

/** The reference loop (and the fallback): what the wasm function must match byte for byte. */
export const gearScanJs: GearScan = (input, start, stop, hash, mask) => {
  // A plain Uint8Array view keeps the loop monomorphic: a Buffer reaching it de-optimises it.
  const bytes =
    input.constructor === Uint8Array ? input : new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  const gear = GEAR_TABLE_I32;
  for (let j = start; j < stop; j++) {
    hash = ((hash << 1) + gear[bytes[j]!]!) | 0;
    if ((hash & mask) === 0) return { index: j, hash };
  }
  return { index: -1, hash };
};

const TABLE_BYTES = 1024;
/**
 * Input bytes copied in per call of the wasm loop. Small, because a call copies its whole block
 * before scanning it and the bytes after a hit are copied for nothing: with 1 MiB blocks, a chunk
 * whose hit came ~64 KiB into a 768 KiB run copied 12x what it scanned.
 */
export const WASM_BLOCK_BYTES = 64 << 10;
const PAGE_BYTES = 64 << 10;
const MEMORY_PAGES = Math.ceil((TABLE_BYTES + WASM_BLOCK_BYTES) / PAGE_BYTES);
/** Bytes rolled per pass of the unrolled loop: one compare-and-branch per UNROLL bytes, not per byte. */
const UNROLL = 8;

// The opcodes used (WebAssembly core spec, binary format).
const OP = {
  block: 0x02,
  loop: 0x03,
  if: 0x04,
  end: 0x0b,
  br: 0x0c,
  brIf: 0x0d,
  return: 0x0f,
  void: 0x40,
  localGet: 0x20,
  localSet: 0x21,
  localTee: 0x22,
  globalSet: 0x24,
  i32Load: 0x28,
  i32Load8u: 0x2d,
  i32Const: 0x41,
  i32Eqz: 0x45,
  i32GeU: 0x4f,
  i32GtU: 0x4b,
  i32Add: 0x6a,
  i32And: 0x71,
  i32Shl: 0x74,
} as const;
// The function's parameters, by local index.
const POS = 0;
const END = 1;
const HASH = 2;
const MASK = 3;

/** pos + k, on the stack. */
function posPlus(k: number): number[] {
  if (k > 63) throw new RangeError('i32.const immediates here are one-byte LEB128 (0..63)');
  return k === 0 ? [OP.localGet, POS] : [OP.localGet, POS, OP.i32Const, ...uleb(k), OP.i32Add];
}

/**
 * Rolls the byte at pos + k:  hash = (hash << 1) + GEAR[byte];  if (hash & mask) == 0, the
 * function stores hash in global 0 and returns pos + k.
 */
function rollByte(k: number): number[] {
  return [
    OP.localGet,
    HASH,
    OP.i32Const,
    1,
    OP.i32Shl,
    OP.localGet,
    POS,
    OP.i32Load8u,
    0,
    ...uleb(TABLE_BYTES + k), // the byte (input starts at TABLE_BYTES)
    OP.i32Const,
    2,
    OP.i32Shl,
    OP.i32Load,
    2,
    0, // GEAR[byte]: the table is at 0, 4 bytes per entry
    OP.i32Add,
    OP.localTee,
    HASH,
    OP.localGet,
    MASK,
    OP.i32And,
    OP.i32Eqz,
    OP.if,
    OP.void,
    OP.localGet,
    HASH,
    OP.globalSet,
    0,
    ...posPlus(k),
    OP.return,
    OP.end,
  ];
}

/**
 * `while (pos + step <= end) { roll bytes pos .. pos+step-1; pos += step }` as a block holding a
 * loop; `br_if 1` leaves the block, `br 0` repeats the loop.
 */
function rollLoop(step: number): number[] {
  const body: number[] = [];
  for (let k = 0; k < step; k++) body.push(...rollByte(k));
  return [
    OP.block,
    OP.void,
    OP.loop,
    OP.void,
    ...posPlus(step),
    OP.localGet,
    END,
    OP.i32GtU,
    OP.brIf,
    1,
    ...body,
    ...posPlus(step),
    OP.localSet,
    POS,
    OP.br,
    0,
    OP.end,
    OP.end,
  ];
}

/**
 * The module, as bytes. Its one function, scan(pos, end, hash, mask) with positions relative to
 * the input block at TABLE_BYTES, rolls UNROLL bytes per pass while that many are left, then one
 * at a time; on a hit it returns the position (hash in global 0), else -1 (hash in global 0).
 */
function moduleBytes(): Uint8Array {
  const I32 = 0x7f;
  const section = (id: number, body: number[]): number[] => [id, ...uleb(body.length), ...body];
  const name = (s: string): number[] => [s.length, ...Buffer.from(s, 'ascii')];
  const body = [
    0x00, // no locals beyond the params
    ...rollLoop(UNROLL),
    ...rollLoop(1),
    OP.localGet,
    HASH,
    OP.globalSet,
    0,
    OP.i32Const,
    0x7f, // no hit: hash out, return -1
    OP.end,
  ];
  return Uint8Array.from([
    0x00,
    0x61,
    0x73,
    0x6d,
    0x01,
    0x00,
    0x00,
    0x00, // "\0asm", version 1
    ...section(1, [1, 0x60, 4, I32, I32, I32, I32, 1, I32]), // type 0: (i32 x4) -> i32
    ...section(3, [1, 0]), // function 0 has type 0
    ...section(5, [1, 0x00, ...uleb(MEMORY_PAGES)]), // one memory, no maximum
    ...section(6, [1, I32, 0x01, OP.i32Const, 0, OP.end]), // global 0: mutable i32 = 0 (the hash out)
    ...section(7, [3, ...name('scan'), 0x00, 0, ...name('memory'), 0x02, 0, ...name('hash'), 0x03, 0]),
    ...section(10, [1, ...uleb(body.length), ...body]),
  ]);
}

function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n !== 0) byte |= 0x80;
    out.push(byte);
  } while (n !== 0);
  return out;
}

// The slice of the WebAssembly API used here (the compile target's lib does not declare it).
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { readonly exports: unknown };
}
interface WasmExports {
  scan: (pos: number, end: number, hash: number, mask: number) => number;
  memory: { readonly buffer: ArrayBuffer };
  hash: { readonly value: number };
}

function instantiate(): GearScan | undefined {
  const wasm = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
  if (wasm === undefined) return undefined;
  let exports: WasmExports;
  try {
    exports = new wasm.Instance(new wasm.Module(moduleBytes())).exports as WasmExports;
  } catch {
    return undefined; // no WebAssembly here: the JS loop gives the same boundaries
  }
  const memory = new Uint8Array(exports.memory.buffer); // fixed size: never grown, never detached
  const table = new DataView(exports.memory.buffer, 0, TABLE_BYTES);
  GEAR_TABLE_I32.forEach((v, i) => table.setInt32(i * 4, v, true)); // wasm memory is little-endian
  const { scan, hash: hashOut } = exports;
  return (bytes, start, stop, hash, mask) => {
    for (let from = start; from < stop; from += WASM_BLOCK_BYTES) {
      const n = Math.min(WASM_BLOCK_BYTES, stop - from);
      memory.set(bytes.subarray(from, from + n), TABLE_BYTES);
      const at = scan(0, n, hash, mask);
      hash = hashOut.value;
      if (at >= 0) return { index: from + at, hash };
    }
    return { index: -1, hash };
  };
}

// Built at the first scan, not at import: every command loads this module, few chunk anything,
// and compiling the module and filling its memory cost ~4 ms of start-up.
let implementation: GearScan | undefined;
const current = (): GearScan => (implementation ??= instantiate() ?? gearScanJs);

/** The fastest scan this runtime offers (wasm, else gearScanJs); identical results either way. */
export const gearScan: GearScan = (bytes, start, stop, hash, mask) => current()(bytes, start, stop, hash, mask);

/** Which implementation gearScan runs (tests). */
export function gearScanBackend(): 'wasm' | 'js' {
  return current() === gearScanJs ? 'js' : 'wasm';
}
