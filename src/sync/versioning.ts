// Versioning policies: which earlier versions of a path a synced folder keeps (Syncthing's
// "simple" keep-last-N, "trash can" and "staggered" versioning).
//
// Goals: a pure decision, time passed in, no I/O, so each policy is tested with fixed times and
// the store applies it (store/revision-store.ts `gcWith`); one spec string per folder, as the
// config and `clawpeer gc --policy` carry it:
//   keep-last:N      the N most recent revisions of each path (the current one among them)
//   trashcan:DAYS    every replaced or deleted version for DAYS days after it was replaced
//   staggered[:DAYS] one version per hour for the first day, per day for the first 30 days, per
//                    week after that, none older than DAYS (default 365)
// Non-goals: the current version (always kept, by the caller), storage, clocks.
import { ClawpeerError } from '../errors.js';

export type VersioningPolicy =
  | { readonly kind: 'keep-last'; readonly count: number }
  | { readonly kind: 'trashcan'; readonly days: number }
  | { readonly kind: 'staggered'; readonly maxAgeDays: number };

/** An earlier version of a path: when it stopped being current (replaced or deleted), ms since the epoch. */
export interface VersionAge {
  readonly replacedAtMs: number;
}

const HOUR_MS = 3600_000;
const DAY_MS = 24 * HOUR_MS;
const WEEK_MS = 7 * DAY_MS;
/** staggered without DAYS: a year, as Syncthing's default maxAge. */
export const DEFAULT_STAGGERED_DAYS = 365;
/** Bands of staggered versioning: versions younger than `untilMs` keep one per `everyMs`. */
const STAGGERED_BANDS: readonly { readonly untilMs: number; readonly everyMs: number }[] = [
  { untilMs: DAY_MS, everyMs: HOUR_MS },
  { untilMs: 30 * DAY_MS, everyMs: DAY_MS },
  { untilMs: Number.MAX_SAFE_INTEGER, everyMs: WEEK_MS },
];
/** Upper bound on N and DAYS: beyond it a typo, not a policy (100 years of days). */
const MAX_SPEC_NUMBER = 36_500;

function usage(spec: string, why: string): ClawpeerError {
  return new ClawpeerError(
    'USAGE',
    `versioning ${JSON.stringify(spec)} is not valid: ${why} (use keep-last:N, trashcan:DAYS or staggered[:DAYS])`,
  );
}

function positiveInt(spec: string, raw: string, what: string): number {
  if (!/^[0-9]+$/.test(raw)) throw usage(spec, `${what} must be a whole number`);
  const n = Number(raw);
  if (n < 1 || n > MAX_SPEC_NUMBER) throw usage(spec, `${what} must be from 1 to ${MAX_SPEC_NUMBER}`);
  return n;
}

/** Parses a versioning spec; ClawpeerError USAGE naming the spec when it is not one. */
export function parseVersioning(spec: string): VersioningPolicy {
  const colon = spec.indexOf(':');
  const name = colon < 0 ? spec : spec.slice(0, colon);
  const arg = colon < 0 ? undefined : spec.slice(colon + 1);
  switch (name) {
    case 'keep-last':
      if (arg === undefined) throw usage(spec, 'keep-last needs a count, as keep-last:5');
      return { kind: 'keep-last', count: positiveInt(spec, arg, 'the count') };
    case 'trashcan':
      if (arg === undefined) throw usage(spec, 'trashcan needs a number of days, as trashcan:30');
      return { kind: 'trashcan', days: positiveInt(spec, arg, 'the number of days') };
    case 'staggered':
      return {
        kind: 'staggered',
        maxAgeDays: arg === undefined ? DEFAULT_STAGGERED_DAYS : positiveInt(spec, arg, 'the maximum age in days'),
      };
    default:
      throw usage(spec, `unknown policy ${JSON.stringify(name)}`);
  }
}

/** The spec string of a policy (parseVersioning's inverse). */
export function formatVersioning(p: VersioningPolicy): string {
  switch (p.kind) {
    case 'keep-last':
      return `keep-last:${p.count}`;
    case 'trashcan':
      return `trashcan:${p.days}`;
    case 'staggered':
      return p.maxAgeDays === DEFAULT_STAGGERED_DAYS ? 'staggered' : `staggered:${p.maxAgeDays}`;
    default: {
      const never: never = p;
      throw new TypeError(`unknown policy ${JSON.stringify(never)}`);
    }
  }
}

/**
 * Which of a path's earlier versions (not the current one) `policy` keeps at `nowMs`: one flag
 * per version, in the order given. keep-last:N keeps the N - 1 most recently replaced (the
 * current version is the Nth). trashcan keeps those replaced less than DAYS ago. staggered
 * keeps, per band (first day / first 30 days / up to the maximum age), the most recently
 * replaced version of each interval (hour / day / week) of age, and nothing older than the
 * maximum age. A version "replaced" in the future (a skewed clock) counts as replaced now.
 */
export function versionsToKeep(policy: VersioningPolicy, versions: readonly VersionAge[], nowMs: number): boolean[] {
  const ages = versions.map((v) => Math.max(0, nowMs - v.replacedAtMs));
  switch (policy.kind) {
    case 'keep-last': {
      // Newest first by replacement time; ties keep the later one in the given order.
      const order = ages.map((age, i) => ({ age, i })).sort((a, b) => a.age - b.age || b.i - a.i);
      const keep = ages.map(() => false);
      for (const { i } of order.slice(0, policy.count - 1)) keep[i] = true;
      return keep;
    }
    case 'trashcan':
      return ages.map((age) => age < policy.days * DAY_MS);
    case 'staggered': {
      const maxAgeMs = policy.maxAgeDays * DAY_MS;
      const keep = ages.map(() => false);
      const seen = new Set<string>();
      const order = ages.map((age, i) => ({ age, i })).sort((a, b) => a.age - b.age || b.i - a.i);
      for (const { age, i } of order) {
        if (age >= maxAgeMs) continue;
        const band = STAGGERED_BANDS.findIndex((b) => age < b.untilMs);
        const every = STAGGERED_BANDS[band]?.everyMs ?? WEEK_MS;
        const slot = `${band}:${Math.floor(age / every)}`;
        if (seen.has(slot)) continue;
        seen.add(slot);
        keep[i] = true;
      }
      return keep;
    }
    default: {
      const never: never = policy;
      throw new TypeError(`unknown policy ${JSON.stringify(never)}`);
    }
  }
}

/**
 * Of a path's history (oldest first, each with its revision's mtime), the versions `policy`
 * drops at `nowMs`, never the head: a version was replaced when the next one was made (its
 * mtime; a tombstone's is when the deletion was noticed), the last one at its own mtime.
 */
export function versionsToDrop<T extends { readonly rev: { readonly mtimeNs: bigint } }>(
  policy: VersioningPolicy,
  history: readonly T[],
  isHead: (v: T) => boolean,
  nowMs: number,
): T[] {
  if (policy.kind === 'keep-last') return history.slice(0, Math.max(0, history.length - policy.count));
  const aged = history
    .map((v, k) => ({ v, replacedAtMs: Number((history[k + 1]?.rev.mtimeNs ?? v.rev.mtimeNs) / 1_000_000n) }))
    .filter((a) => !isHead(a.v)); // the head is not a version the policy counts: it always stays
  const keep = versionsToKeep(policy, aged, nowMs);
  return aged.filter((_, k) => keep[k] !== true).map((a) => a.v);
}
