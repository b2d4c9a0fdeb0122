// Fuzzing kit: a seeded PRNG, byte mutators and a runner that records reproducible failures.
//
// Goals: every iteration is reproducible from one 32-bit seed (the runner derives it from the
// run's base seed and the iteration number), so a failure is reported as a seed plus the exact
// input, which can be committed under test/fuzz/seeds/ and replayed without the generator.
// Mutations are cheap and protocol-aware where it pays (varints, u32 length fields, protobuf
// field spans), so a few thousand iterations reach past the first length check.
// Non-goals: coverage guidance (no instrumentation here), shrinking (inputs stay small instead).
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** splitmix32 -> xorshift128-style PRNG; fast, seedable, good enough to pick mutations. */
export class Rng {
  #a: number;
  #b: number;
  #c: number;
  #d: number;

  constructor(seed: number) {
    let s = seed >>> 0;
    const next = (): number => {
      s = (s + 0x9e3779b9) | 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.#a = next();
    this.#b = next();
    this.#c = next();
    this.#d = next() | 1;
  }

  /** Uniform u32 (xoshiro128**). */
  u32(): number {
    const result = Math.imul(rotl(Math.imul(this.#b, 5), 7), 9) >>> 0;
    const t = this.#b << 9;
    this.#c ^= this.#a;
    this.#d ^= this.#b;
    this.#b ^= this.#c;
    this.#a ^= this.#d;
    this.#c ^= t;
    this.#d = rotl(this.#d, 11);
    return result;
  }

  /** Uniform integer in [0, n) for n <= 2^32. */
  int(n: number): number {
    return n <= 1 ? 0 : Math.floor((this.u32() / 0x1_0000_0000) * n);
  }

  /** Integer in [lo, hi] inclusive. */
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  bool(p = 0.5): boolean {
    return this.u32() / 0x1_0000_0000 < p;
  }

  pick<T>(items: readonly T[]): T {
    const item = items[this.int(items.length)];
    if (item === undefined) throw new TypeError('pick from an empty list');
    return item;
  }

  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i += 4) {
      const v = this.u32();
      out[i] = v;
      if (i + 1 < n) out[i + 1] = v >>> 8;
      if (i + 2 < n) out[i + 2] = v >>> 16;
      if (i + 3 < n) out[i + 3] = v >>> 24;
    }
    return out;
  }

  /** A size biased towards small values and edges: most inputs stay tiny, some hit limits. */
  size(max: number): number {
    switch (this.int(4)) {
      case 0:
        return this.int(Math.min(max, 8) + 1);
      case 1:
        return this.int(Math.min(max, 64) + 1);
      case 2:
        return this.pick([0, 1, max, Math.max(0, max - 1)]);
      default:
        return this.int(max + 1);
    }
  }

  /** An integer that is often an edge value of a field of `bits` unsigned bits. */
  edgyUint(bits: 8 | 16 | 32 | 53): number {
    const max = bits === 53 ? Number.MAX_SAFE_INTEGER : 2 ** bits - 1;
    switch (this.int(5)) {
      case 0:
        return this.pick([0, 1, 2, 127, 128, 255, 256, max, max - 1]);
      case 1:
        return this.int(256);
      case 2:
        return bits === 53 ? this.u32() * 0x20_0000 + this.int(0x20_0000) : Math.min(max, this.u32() % (max + 1));
      default:
        return Math.min(max, this.int(Math.min(max, 0xffff_ffff) + 1));
    }
  }
}

function rotl(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r));
}

/** Seed of iteration `i` of a run with base seed `base` (so any iteration replays alone). */
export function iterationSeed(base: number, i: number): number {
  return (Math.imul(base ^ 0x5bd1e995, 0x9e3779b1) + Math.imul(i + 1, 0x85ebca77)) >>> 0;
}

// ---------------------------------------------------------------------------------------------
// Byte mutations

/** Byte strings that tend to break decoders: oversized varints, extreme u32s, tricky UTF-8. */
export const INTERESTING_SEQUENCES: readonly Uint8Array[] = [
  Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), // 10-byte varint, 2^64-1
  Uint8Array.of(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00), // 11-byte varint
  Uint8Array.of(0x80, 0x00), // non-minimal varint 0
  Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0x0f), // varint 2^32-1
  Uint8Array.of(0x80, 0x80, 0x80, 0x80, 0x10), // varint 2^32
  Uint8Array.of(0xff, 0xff, 0xff, 0xff), // u32 max
  Uint8Array.of(0x7f, 0xff, 0xff, 0xff), // i32 max
  Uint8Array.of(0x00, 0x00, 0x00, 0x00),
  Uint8Array.of(0x00, 0x01, 0x00, 0x00), // 64 KiB
  Uint8Array.of(0x01, 0x00, 0x00, 0x00), // 16 MiB
  Uint8Array.of(0x01, 0x00, 0x00, 0x01), // 16 MiB + 1
  Uint8Array.of(0xef, 0xbb, 0xbf), // UTF-8 BOM
  Uint8Array.of(0xed, 0xa0, 0x80), // CESU lone high surrogate
  Uint8Array.of(0xc0, 0xaf), // overlong '/'
  Uint8Array.of(0xc0, 0xae), // overlong '.'
  Uint8Array.of(0xf4, 0x90, 0x80, 0x80), // above U+10FFFF
  Uint8Array.of(0x2e, 0x2e, 0x2f), // '../'
  Uint8Array.of(0x00),
];

/** One random structural change to `input` (never mutates it). */
export function mutateOnce(rng: Rng, input: Uint8Array): Uint8Array {
  const n = input.length;
  switch (rng.int(10)) {
    case 0: {
      // bit flip
      if (n === 0) return rng.bytes(1);
      const out = input.slice();
      const i = rng.int(n);
      out[i] = (out[i] ?? 0) ^ (1 << rng.int(8));
      return out;
    }
    case 1: {
      // byte overwrite with an edge value
      if (n === 0) return Uint8Array.of(rng.pick([0, 0x7f, 0x80, 0xff]));
      const out = input.slice();
      out[rng.int(n)] = rng.pick([0, 1, 0x7f, 0x80, 0xfe, 0xff, rng.int(256)]);
      return out;
    }
    case 2:
      // truncation
      return input.slice(0, rng.int(n + 1));
    case 3:
      // append random bytes
      return concatBytes([input, rng.bytes(rng.size(32))]);
    case 4: {
      // duplicate a slice in place (field duplication when it hits a field boundary)
      const a = rng.int(n + 1);
      const b = a + rng.int(n - a + 1);
      return concatBytes([input.subarray(0, b), input.subarray(a, b), input.subarray(b)]);
    }
    case 5: {
      // delete a slice
      const a = rng.int(n + 1);
      const b = a + rng.int(Math.min(16, n - a) + 1);
      return concatBytes([input.subarray(0, a), input.subarray(b)]);
    }
    case 6: {
      // insert an interesting sequence
      const at = rng.int(n + 1);
      return concatBytes([input.subarray(0, at), rng.pick(INTERESTING_SEQUENCES), input.subarray(at)]);
    }
    case 7: {
      // overwrite with an interesting sequence
      const seq = rng.pick(INTERESTING_SEQUENCES);
      const at = rng.int(n + 1);
      const out = input.slice();
      out.set(seq.subarray(0, Math.max(0, n - at)), at);
      return out;
    }
    case 8: {
      // swap two bytes
      if (n < 2) return input.slice();
      const out = input.slice();
      const i = rng.int(n);
      const j = rng.int(n);
      [out[i], out[j]] = [out[j] ?? 0, out[i] ?? 0];
      return out;
    }
    default:
      // replace entirely with random bytes of a similar size
      return rng.bytes(rng.size(Math.max(8, n)));
  }
}

/** 1..maxRounds mutations in a row. */
export function mutate(rng: Rng, input: Uint8Array, maxRounds = 4): Uint8Array {
  let out = input;
  const rounds = rng.range(1, maxRounds);
  for (let r = 0; r < rounds; r++) out = mutateOnce(rng, out);
  return out;
}

export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Cut points that split `length` bytes into 1..maxPieces pushes (including empty pushes). */
export function randomSplits(rng: Rng, length: number, maxPieces = 16): number[] {
  const cuts: number[] = [];
  const pieces = rng.range(1, maxPieces);
  for (let i = 1; i < pieces; i++) cuts.push(rng.int(length + 1));
  return cuts.sort((a, b) => a - b);
}

export function piecesOf(bytes: Uint8Array, cuts: readonly number[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    out.push(bytes.subarray(at, Math.max(at, cut)));
    at = Math.max(at, cut);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Protobuf wire helpers (tolerant: they never throw on garbage, they give up)

export interface PbSpan {
  readonly field: number;
  readonly wireType: number;
  readonly start: number;
  readonly end: number;
  readonly valueStart: number;
}

/** Reads a varint at `pos`; undefined on a truncated or over-long one. */
export function readPbVarint(bytes: Uint8Array, pos: number): { value: number; next: number } | undefined {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < 10; i++) {
    const b = bytes[pos + i];
    if (b === undefined) return undefined;
    value += (b & 0x7f) * scale;
    scale *= 128;
    if ((b & 0x80) === 0) return { value, next: pos + i + 1 };
  }
  return undefined;
}

export function pbVarint(value: number): Uint8Array {
  const out: number[] = [];
  let v = value;
  while (v >= 0x80) {
    out.push((v % 128) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return Uint8Array.from(out);
}

/** Top-level fields of a protobuf message, or undefined if it does not parse. */
export function scanPb(bytes: Uint8Array): PbSpan[] | undefined {
  const spans: PbSpan[] = [];
  let pos = 0;
  while (pos < bytes.length) {
    const start = pos;
    const tag = readPbVarint(bytes, pos);
    if (tag === undefined) return undefined;
    pos = tag.next;
    const field = Math.floor(tag.value / 8);
    const wireType = tag.value % 8;
    let valueStart = pos;
    switch (wireType) {
      case 0: {
        const v = readPbVarint(bytes, pos);
        if (v === undefined) return undefined;
        pos = v.next;
        break;
      }
      case 1:
        pos += 8;
        break;
      case 2: {
        const len = readPbVarint(bytes, pos);
        if (len === undefined) return undefined;
        valueStart = len.next;
        pos = len.next + len.value;
        break;
      }
      case 5:
        pos += 4;
        break;
      default:
        return undefined;
    }
    if (pos > bytes.length) return undefined;
    spans.push({ field, wireType, start, end: pos, valueStart });
  }
  return spans;
}

/** A length-delimited field: tag, length, value. */
export function pbLenField(field: number, value: Uint8Array): Uint8Array {
  return concatBytes([pbVarint(field * 8 + 2), pbVarint(value.length), value]);
}

/**
 * A protobuf-aware mutation of an encoded message: duplicate, drop or reorder a field, add an
 * unknown field, replace a varint with an oversized one, or recurse into a sub-message (with its
 * length fixed up). Falls back to a byte mutation when the input does not parse.
 */
export function mutatePb(rng: Rng, message: Uint8Array, depth = 0): Uint8Array {
  const spans = scanPb(message);
  if (spans === undefined || spans.length === 0 || rng.bool(0.15)) return mutate(rng, message, 2);
  const part = (s: PbSpan): Uint8Array => message.subarray(s.start, s.end);
  const pieces = spans.map(part);
  const i = rng.int(spans.length);
  const span = spans[i]!;
  switch (rng.int(7)) {
    case 0: // duplicate a field (last-one-wins for scalars, an extra element for repeated)
      pieces.splice(rng.int(pieces.length + 1), 0, part(span));
      break;
    case 1: // drop a field
      pieces.splice(i, 1);
      break;
    case 2: {
      // reorder
      const j = rng.int(pieces.length);
      [pieces[i], pieces[j]] = [pieces[j]!, pieces[i]!];
      break;
    }
    case 3: {
      // unknown field of a random wire type
      const field = rng.pick([15, 99, 536_870_911, rng.range(1, 200)]);
      const wireType = rng.pick([0, 1, 2, 5]);
      const body =
        wireType === 0
          ? pbVarint(rng.edgyUint(53))
          : wireType === 1
            ? rng.bytes(8)
            : wireType === 5
              ? rng.bytes(4)
              : concatBytes([pbVarint(3), rng.bytes(3)]);
      pieces.splice(rng.int(pieces.length + 1), 0, concatBytes([pbVarint(field * 8 + wireType), body]));
      break;
    }
    case 4: {
      // the same field with an extreme varint value (or a wire type the schema does not expect)
      const tag = pbVarint(span.field * 8 + 0);
      pieces[i] = concatBytes([tag, rng.pick(INTERESTING_SEQUENCES.slice(0, 5))]);
      break;
    }
    case 5: {
      // recurse into a length-delimited value (a sub-message, string or bytes), fixing its length
      if (span.wireType !== 2 || depth >= 3) {
        pieces[i] = mutate(rng, part(span), 1);
        break;
      }
      const inner = message.subarray(span.valueStart, span.end);
      pieces[i] = pbLenField(span.field, rng.bool(0.7) ? mutatePb(rng, inner, depth + 1) : mutate(rng, inner, 2));
      break;
    }
    default:
      pieces[i] = mutate(rng, part(span), 1);
  }
  return concatBytes(pieces);
}

// ---------------------------------------------------------------------------------------------
// Targets, runs and failures

/** A broken property: what the fuzzer is looking for (distinct from the decoder's own errors). */
export class FuzzViolation extends Error {
  override readonly name = 'FuzzViolation';
}

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

export interface FuzzTarget<I> {
  readonly name: string;
  /** One input from a seeded PRNG. */
  generate(rng: Rng): I;
  /** Checks the properties on one input; throws FuzzViolation (or anything unexpected) on failure. */
  check(input: I): void;
  /** JSON form of an input, for seed files. */
  toJson(input: I): JsonValue;
  fromJson(json: JsonValue): I;
}

export interface FuzzFailure {
  readonly target: string;
  readonly seed: number;
  readonly error: string;
  readonly input: JsonValue;
}

export interface FuzzReport {
  readonly target: string;
  readonly iterations: number;
  readonly elapsedMs: number;
  readonly failures: readonly FuzzFailure[];
  /** Failures matching an open finding (a committed seed still marked todo): reported, not failed. */
  readonly known: readonly FuzzFailure[];
}

export interface RunOptions {
  readonly iterations: number;
  readonly seed: number;
  /** Stop early after this long (deep runs are time-boxed); the report states the count reached. */
  readonly timeBudgetMs?: number;
  /** Stop after this many distinct failures (default 5). */
  readonly maxFailures?: number;
  /** Error patterns of open findings (see SeedFile.matches). */
  readonly known?: readonly RegExp[];
}

function describeError(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return `${err.name}${typeof code === 'string' ? ` ${code}` : ''}: ${err.message}`;
  }
  return String(err);
}

/** Runs one iteration from its seed; the failure, or undefined. */
export function runOne<I>(target: FuzzTarget<I>, seed: number): FuzzFailure | undefined {
  const input = target.generate(new Rng(seed));
  try {
    target.check(input);
    return undefined;
  } catch (err) {
    return { target: target.name, seed, error: describeError(err).slice(0, 600), input: target.toJson(input) };
  }
}

export function runFuzz<I>(target: FuzzTarget<I>, options: RunOptions): FuzzReport {
  const started = performance.now();
  const failures: FuzzFailure[] = [];
  const known: FuzzFailure[] = [];
  const seen = new Set<string>();
  const maxFailures = options.maxFailures ?? 5;
  let i = 0;
  for (; i < options.iterations; i++) {
    // performance.now() costs ~50 ns: check the budget every 64 iterations only.
    if (options.timeBudgetMs !== undefined && (i & 63) === 0 && performance.now() - started > options.timeBudgetMs)
      break;
    const failure = runOne(target, iterationSeed(options.seed, i));
    if (failure === undefined) continue;
    // One failure per distinct message shape (numbers stripped): the same bug found twice is noise.
    const key = failureKey(failure.error);
    if (seen.has(key)) continue;
    seen.add(key);
    if (options.known?.some((re) => re.test(failure.error)) === true) {
      known.push(failure);
      continue;
    }
    failures.push(failure);
    if (failures.length >= maxFailures) {
      i++;
      break;
    }
  }
  return { target: target.name, iterations: i, elapsedMs: performance.now() - started, failures, known };
}

/** What makes two failures "the same bug": the message without quoted text and numbers. */
export function failureKey(error: string): string {
  return error
    .replace(/"(?:[^"\\]|\\.)*"/g, 'S')
    .replace(/[0-9]+/g, '#')
    .slice(0, 100);
}

/** JSON with every non-ASCII character escaped: safe inside a TAP comment line. */
export function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** One line for the TAP log: the reached count and time, so reports can quote them. */
export function describeReport(r: FuzzReport): string {
  const rate = r.elapsedMs > 0 ? Math.round((r.iterations / r.elapsedMs) * 1000) : 0;
  return `${r.target}: ${r.iterations} iterations in ${(r.elapsedMs / 1000).toFixed(2)} s (${rate}/s), ${r.failures.length} new failure(s), ${r.known.length} known`;
}

// ---------------------------------------------------------------------------------------------
// Committed seeds

export interface SeedFile {
  readonly target: string;
  /** What the input shows and what a fix must change; shown in the regression test's name. */
  readonly finding: string;
  /** When set, the replay is a `todo` until the fix lands (the reason names who fixes what). */
  readonly todo?: string;
  /**
   * While `todo` is set: a regular expression over failure messages of this finding, so the
   * random runs report it as known instead of failing CI until the fix lands.
   */
  readonly matches?: string;
  /** The iteration seed that found it (replay: runOne(target, seed) with the same generator). */
  readonly seed?: number;
  readonly input: JsonValue;
}

/** Directory of the committed seed files (source tree), from a compiled test file `levelsUp` below the repo root. */
export function seedDir(importMetaUrl: string, levelsUp: number): string {
  return fileURLToPath(new URL(`${'../'.repeat(levelsUp)}test/fuzz/seeds/`, importMetaUrl));
}

export function loadSeeds(dir: string): { file: string; seed: SeedFile }[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => ({ file, seed: JSON.parse(readFileSync(join(dir, file), 'utf8')) as SeedFile }));
}

/** Patterns of the open findings of one target (seeds still marked todo). */
export function knownPatterns(seeds: readonly { seed: SeedFile }[], target: string): RegExp[] {
  return seeds
    .filter((s) => s.seed.target === target && s.seed.todo !== undefined && s.seed.matches !== undefined)
    .map((s) => new RegExp(s.seed.matches ?? '', 's')); // 's': messages may hold U+2028
}

export const hex = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
export const unhex = (s: JsonValue): Uint8Array => {
  if (typeof s !== 'string' || !/^([0-9a-f]{2})*$/i.test(s)) throw new TypeError('seed input: expected a hex string');
  return new Uint8Array(Buffer.from(s, 'hex'));
};
