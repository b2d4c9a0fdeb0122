// The impairment spec: what `--simulate` and `clawpeer relay --impair` accept, e.g.
//   rtt=50ms,jitter=5ms,loss=1%,rate=100mbit,queue=256KiB,reorder=0.5%,dup=0.1%
//
// Goals: one parse and one canonical format (format(parse(s)) parses back to the same value,
// exactly: times are kept in ms, probabilities in percent, rates in whole bits/s, so no unit
// conversion rounds on the way back); error messages that name the bad key, the value and the
// accepted forms; hard limits on every number so a typo cannot ask for a 10-day delay.
// Non-goals: shaping itself (impairment.ts), per-direction settings (both directions get the
// same spec; RTT is split evenly, each direction adds rtt/2).
//
// Grammar: comma-separated key=value, keys case-insensitive, at most once each; "" or "none" is
// a pass-through.
//   rtt=<time>            added round-trip delay, rtt/2 each way           (time: 250us, 50ms, 0.1s)
//   jitter=<time>[:dist]  delay variation per packet; dist uniform (default: +-jitter, flat) or
//                         normal (standard deviation = jitter, clipped at +-3 sigma)
//   loss=<pct>%           random loss per packet, per direction
//   rate=<rate>           link rate per direction (bit, kbit, mbit, gbit; bps, kbps, mbps, gbps)
//   queue=<size>          bottleneck FIFO limit: bytes (B, KB, KiB, MB, MiB), packets (pkt), or
//                         time at the link rate (ms). Needs rate. Default: 1 BDP, >= 64 KiB.
//   reorder=<pct>%        fraction of packets that skip the delay and overtake those in flight
//   dup=<pct>%            fraction of packets delivered twice
import { ClawpeerError } from '../errors.js';

export type JitterDistribution = 'uniform' | 'normal';

/** Limit of the bottleneck queue, in the unit the user gave. */
export type QueueLimit =
  | { readonly unit: 'bytes'; readonly bytes: number }
  | { readonly unit: 'packets'; readonly packets: number }
  /** Bytes the link sends in this many ms: rate * ms. */
  | { readonly unit: 'ms'; readonly ms: number };

export interface ImpairSpec {
  /** Added round-trip delay, ms; each direction adds rttMs / 2. */
  readonly rttMs: number;
  /** Delay variation, ms: the half-width (uniform) or the standard deviation (normal). */
  readonly jitterMs: number;
  readonly jitterDistribution: JitterDistribution;
  /** Random loss per packet and direction, percent 0..100. */
  readonly lossPct: number;
  /** Link rate per direction, bits/s; undefined = unlimited (no queue either). */
  readonly rateBitsPerSec?: number;
  /** Bottleneck FIFO limit; undefined = the default (DEFAULT_QUEUE_*, see resolveQueueLimit). */
  readonly queue?: QueueLimit;
  /** Percent of packets that skip the delay (netem's reorder semantics). */
  readonly reorderPct: number;
  /** Percent of packets delivered twice. */
  readonly duplicatePct: number;
}

/** No impairment at all: a transparent relay. */
export const PASS_THROUGH: ImpairSpec = Object.freeze({
  rttMs: 0,
  jitterMs: 0,
  jitterDistribution: 'uniform',
  lossPct: 0,
  reorderPct: 0,
  duplicatePct: 0,
});

/** Longest delay accepted (RTT or jitter), ms: 10 s is beyond any real path, even satellite. */
export const MAX_DELAY_MS = 10_000;
/** Rate bounds, bits/s: below 1 kbit/s a 1500-byte packet takes 12 s; 100 Gbit/s is far beyond this relay. */
export const MIN_RATE_BITS_PER_SEC = 1_000;
export const MAX_RATE_BITS_PER_SEC = 100e9;
/** Queue bounds. 1 GiB / 1M packets: generous, but still a bound on relay memory. */
export const MAX_QUEUE_BYTES = 1 << 30;
export const MAX_QUEUE_PACKETS = 1_000_000;
/** Default queue: one bandwidth-delay product (the classic router buffer rule, enough for one
 *  loss-based flow to keep the link busy), but never below 64 KiB so tiny RTTs still absorb bursts. */
export const DEFAULT_QUEUE_MIN_BYTES = 64 * 1024;
/** RTT used for the default queue's BDP when rtt is smaller (a 0-RTT BDP is 0 bytes), ms. */
export const DEFAULT_QUEUE_MIN_RTT_MS = 1;
/** Longest spec string accepted. */
export const MAX_SPEC_CHARS = 512;

const KEYS = ['rtt', 'jitter', 'loss', 'rate', 'queue', 'reorder', 'dup'] as const;
type Key = (typeof KEYS)[number];
const KEY_ALIASES: Readonly<Record<string, Key>> = { duplicate: 'dup' };
const isKey = (k: string): k is Key => (KEYS as readonly string[]).includes(k);

const TIME_UNITS_MS: Readonly<Record<string, number>> = { us: 0.001, µs: 0.001, ms: 1, s: 1000 };
const RATE_UNITS: Readonly<Record<string, number>> = {
  bit: 1,
  kbit: 1e3,
  mbit: 1e6,
  gbit: 1e9,
  bps: 1,
  kbps: 1e3,
  mbps: 1e6,
  gbps: 1e9,
};
const BYTE_UNITS: Readonly<Record<string, number>> = { b: 1, kb: 1e3, kib: 1024, mb: 1e6, mib: 1 << 20 };
const PACKET_UNITS = new Set(['p', 'pkt', 'pkts', 'packet', 'packets']);

function usage(message: string): ClawpeerError {
  return new ClawpeerError('USAGE', `impairment spec: ${message}`);
}

/** Splits "12.5ms" into 12.5 and "ms"; undefined when it does not look like <number><unit>. */
function splitNumber(text: string): { value: number; unit: string } | undefined {
  const m = /^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:e([+-]?[0-9]+))?\s*([a-zµ%/]*)$/i.exec(text.trim());
  if (m === null || m[1] === undefined) return undefined;
  const value = Number(m[1] + (m[2] === undefined ? '' : `e${m[2]}`));
  return Number.isFinite(value) ? { value, unit: (m[3] ?? '').toLowerCase() } : undefined;
}

function parseTimeMs(key: string, text: string): number {
  const n = splitNumber(text);
  const perUnit = n === undefined ? undefined : n.unit === '' && n.value === 0 ? 1 : TIME_UNITS_MS[n.unit];
  if (n === undefined || perUnit === undefined) {
    throw usage(`${key}=${text}: expected a time such as 250us, 50ms or 0.1s`);
  }
  const ms = n.value * perUnit;
  if (ms > MAX_DELAY_MS) throw usage(`${key}=${text}: at most ${MAX_DELAY_MS} ms`);
  return ms;
}

function parsePct(key: string, text: string): number {
  const n = splitNumber(text);
  if (n === undefined || !(n.unit === '%' || (n.unit === '' && n.value === 0))) {
    throw usage(`${key}=${text}: expected a percentage such as 1% or 0.1%`);
  }
  if (n.value > 100) throw usage(`${key}=${text}: at most 100%`);
  return n.value;
}

function parseRate(text: string): number {
  const n = splitNumber(text);
  const perUnit = n === undefined ? undefined : RATE_UNITS[n.unit];
  if (n === undefined || perUnit === undefined) {
    throw usage(
      `rate=${text}: expected a bit rate such as 500kbit, 100mbit or 1gbit (bit, kbit, mbit, gbit, bps, kbps, mbps, gbps)`,
    );
  }
  const bits = Math.round(n.value * perUnit);
  if (bits < MIN_RATE_BITS_PER_SEC || bits > MAX_RATE_BITS_PER_SEC) {
    throw usage(`rate=${text}: must be between 1kbit and 100gbit`);
  }
  return bits;
}

function parseQueue(text: string): QueueLimit {
  const n = splitNumber(text);
  if (n !== undefined && PACKET_UNITS.has(n.unit) && Number.isInteger(n.value)) {
    if (n.value < 1 || n.value > MAX_QUEUE_PACKETS)
      throw usage(`queue=${text}: between 1 and ${MAX_QUEUE_PACKETS} packets`);
    return { unit: 'packets', packets: n.value };
  }
  const perByte = n === undefined ? undefined : BYTE_UNITS[n.unit];
  if (n !== undefined && perByte !== undefined) {
    const bytes = Math.round(n.value * perByte);
    if (bytes < 1 || bytes > MAX_QUEUE_BYTES) throw usage(`queue=${text}: between 1 byte and 1 GiB`);
    return { unit: 'bytes', bytes };
  }
  if (n !== undefined && n.unit === 'ms') {
    if (n.value <= 0 || n.value > MAX_DELAY_MS) throw usage(`queue=${text}: between 0 and ${MAX_DELAY_MS} ms`);
    return { unit: 'ms', ms: n.value };
  }
  throw usage(`queue=${text}: expected bytes (1500B, 64KiB, 1MB), packets (100pkt) or time at the link rate (50ms)`);
}

/** Parses an impairment spec; throws ClawpeerError USAGE naming the bad part. */
export function parseImpairSpec(text: string): ImpairSpec {
  if (text.length > MAX_SPEC_CHARS) throw usage(`longer than ${MAX_SPEC_CHARS} characters`);
  const trimmed = text.trim();
  if (trimmed === '' || trimmed.toLowerCase() === 'none') return PASS_THROUGH;
  const seen = new Set<Key>();
  let rttMs = 0;
  let jitterMs = 0;
  let jitterDistribution: JitterDistribution = 'uniform';
  let lossPct = 0;
  let rateBitsPerSec: number | undefined;
  let queue: QueueLimit | undefined;
  let reorderPct = 0;
  let duplicatePct = 0;
  for (const part of trimmed.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) throw usage(`"${part.trim()}" is not key=value (keys: ${KEYS.join(', ')})`);
    const rawKey = part.slice(0, eq).trim().toLowerCase();
    const value = part.slice(eq + 1).trim();
    const key = KEY_ALIASES[rawKey] ?? (isKey(rawKey) ? rawKey : undefined);
    if (key === undefined) throw usage(`unknown key "${rawKey}" (keys: ${KEYS.join(', ')})`);
    if (seen.has(key)) throw usage(`"${key}" given twice`);
    seen.add(key);
    switch (key) {
      case 'rtt':
        rttMs = parseTimeMs(key, value);
        break;
      case 'jitter': {
        const [amount = '', dist] = value.split(':');
        jitterMs = parseTimeMs(key, amount);
        if (dist !== undefined) {
          const d = dist.trim().toLowerCase();
          if (d !== 'uniform' && d !== 'normal') throw usage(`jitter=${value}: distribution must be uniform or normal`);
          jitterDistribution = d;
        }
        break;
      }
      case 'loss':
        lossPct = parsePct(key, value);
        break;
      case 'rate':
        rateBitsPerSec = parseRate(value);
        break;
      case 'queue':
        queue = parseQueue(value);
        break;
      case 'reorder':
        reorderPct = parsePct(key, value);
        break;
      case 'dup':
        duplicatePct = parsePct(key, value);
        break;
      default: {
        const never: never = key;
        throw new TypeError(`unhandled key ${String(never)}`);
      }
    }
  }
  if (queue !== undefined && rateBitsPerSec === undefined) {
    throw usage('queue needs a rate: without a rate limit nothing ever waits in the queue');
  }
  return Object.freeze({
    rttMs,
    jitterMs,
    jitterDistribution,
    lossPct,
    reorderPct,
    duplicatePct,
    ...(rateBitsPerSec === undefined ? {} : { rateBitsPerSec }),
    ...(queue === undefined ? {} : { queue: Object.freeze(queue) }),
  });
}

function formatRate(bits: number): string {
  for (const [unit, per] of [
    ['gbit', 1e9],
    ['mbit', 1e6],
    ['kbit', 1e3],
  ] as const) {
    if (bits % per === 0) return `${bits / per}${unit}`;
  }
  return `${bits}bit`;
}

function formatQueue(q: QueueLimit): string {
  switch (q.unit) {
    case 'bytes':
      if (q.bytes % (1 << 20) === 0) return `${q.bytes / (1 << 20)}MiB`;
      if (q.bytes % 1024 === 0) return `${q.bytes / 1024}KiB`;
      return `${q.bytes}B`;
    case 'packets':
      return `${q.packets}pkt`;
    case 'ms':
      return `${q.ms}ms`;
    default: {
      const never: never = q;
      throw new TypeError(`unhandled queue unit ${JSON.stringify(never)}`);
    }
  }
}

/** The canonical text of a spec: only non-default settings, in a fixed order; "none" for pass-through. */
export function formatImpairSpec(spec: ImpairSpec): string {
  const parts: string[] = [];
  if (spec.rttMs !== 0) parts.push(`rtt=${spec.rttMs}ms`);
  if (spec.jitterMs !== 0 || spec.jitterDistribution !== 'uniform') {
    parts.push(
      `jitter=${spec.jitterMs}ms${spec.jitterDistribution === 'uniform' ? '' : `:${spec.jitterDistribution}`}`,
    );
  }
  if (spec.lossPct !== 0) parts.push(`loss=${spec.lossPct}%`);
  if (spec.rateBitsPerSec !== undefined) parts.push(`rate=${formatRate(spec.rateBitsPerSec)}`);
  if (spec.queue !== undefined) parts.push(`queue=${formatQueue(spec.queue)}`);
  if (spec.reorderPct !== 0) parts.push(`reorder=${spec.reorderPct}%`);
  if (spec.duplicatePct !== 0) parts.push(`dup=${spec.duplicatePct}%`);
  return parts.length === 0 ? 'none' : parts.join(',');
}

/** The queue limit the shaper applies, in bytes or packets; undefined without a rate limit. */
export function resolveQueueLimit(
  spec: ImpairSpec,
): { readonly bytes: number } | { readonly packets: number } | undefined {
  const rate = spec.rateBitsPerSec;
  if (rate === undefined) return undefined;
  const bytesFor = (ms: number): number => Math.max(1, Math.round((rate * ms) / 8000));
  const q = spec.queue;
  if (q === undefined) {
    return { bytes: Math.max(DEFAULT_QUEUE_MIN_BYTES, bytesFor(Math.max(spec.rttMs, DEFAULT_QUEUE_MIN_RTT_MS))) };
  }
  switch (q.unit) {
    case 'bytes':
      return { bytes: q.bytes };
    case 'packets':
      return { packets: q.packets };
    case 'ms':
      return { bytes: Math.min(MAX_QUEUE_BYTES, bytesFor(q.ms)) };
    default: {
      const never: never = q;
      throw new TypeError(`unhandled queue unit ${JSON.stringify(never)}`);
    }
  }
}
