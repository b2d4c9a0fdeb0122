// FastCDC's hot loop: roll the gear hash over a run of bytes until a masked test hits.
//
// Goal: the same answer as the plain loop in `gearScanJs` (fastcdc.ts defines the hash), faster.
// Why WebAssembly: the JS loop ran at ~400-800 MB/s of hashed bytes here (bounds checks, and a
// Buffer reaching it deoptimises it); this 30-instruction wasm function runs ~2-3x faster, which
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
  const bytes = input.constructor === Uint8Array ? input : new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  const gear = GEAR_TABLE_I32;
  for (let j = start; j < stop; j++) {
    hash = ((hash << 1) + gear[bytes[j]!]!) | 0;
    if ((hash & mask) === 0) return { index: j, hash };
  }
  return { index: -1, hash };
};

const TABLE_BYTES = 1024;
/** Input bytes copied in per call of the wasm loop. */
export const WASM_BLOCK_BYTES = 1 << 20;
const PAGE_BYTES = 64 << 10;
const MEMORY_PAGES = Math.ceil((TABLE_BYTES + WASM_BLOCK_BYTES) / PAGE_BYTES);

/**
 * The module, as bytes. The function (params pos, end, hash, mask; positions relative to the
 * block at TABLE_BYTES) in text form:
 *   block
 *     pos >= end ? br 0
 *     loop
 *       hash = (hash << 1) + i32.load(i32.load8_u(TABLE_BYTES + pos) << 2)
 *       if (hash & mask) == 0 { global0 = hash; return pos }
 *       pos = pos + 1
 *       pos < end ? br 0 (loop)
 *     end
 *   end
 *   global0 = hash; return -1
 */
function moduleBytes(): Uint8Array {
  const I32 = 0x7f;
  const section = (id: number, body: number[]): number[] => [id, ...uleb(body.length), ...body];
  const name = (s: string): number[] => [s.length, ...Buffer.from(s, 'ascii')];
  const body = [
    0x00, // no locals beyond the params
    0x02, 0x40, // block
    0x20, 0, 0x20, 1, 0x4f, 0x0d, 0, // local.get pos, local.get end, i32.ge_u, br_if 0
    0x03, 0x40, // loop
    0x20, 2, 0x41, 1, 0x74, // local.get hash, i32.const 1, i32.shl
    0x20, 0, 0x2d, 0, ...uleb(TABLE_BYTES), // local.get pos, i32.load8_u offset=TABLE_BYTES
    0x41, 2, 0x74, 0x28, 2, 0, // i32.const 2, i32.shl, i32.load align=4 offset=0 (gear[b])
    0x6a, 0x22, 2, // i32.add, local.tee hash
    0x20, 3, 0x71, 0x45, // local.get mask, i32.and, i32.eqz
    0x04, 0x40, 0x20, 2, 0x24, 0, 0x20, 0, 0x0f, 0x0b, // if: global.set 0 (hash), return pos; end
    0x20, 0, 0x41, 1, 0x6a, 0x22, 0, // pos = pos + 1 (local.tee)
    0x20, 1, 0x49, 0x0d, 0, // local.get end, i32.lt_u, br_if 0 (loop)
    0x0b, // end loop
    0x0b, // end block
    0x20, 2, 0x24, 0, 0x41, 0x7f, // global.set 0 (hash), i32.const -1
    0x0b, // end function
  ];
  return Uint8Array.from([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // "\0asm", version 1
    ...section(1, [1, 0x60, 4, I32, I32, I32, I32, 1, I32]), // type 0: (i32 x4) -> i32
    ...section(3, [1, 0]), // function 0 has type 0
    ...section(5, [1, 0x00, ...uleb(MEMORY_PAGES)]), // one memory, no maximum
    ...section(6, [1, I32, 0x01, 0x41, 0, 0x0b]), // global 0: mutable i32 = 0 (the hash out)
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
  scan(pos: number, end: number, hash: number, mask: number): number;
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
