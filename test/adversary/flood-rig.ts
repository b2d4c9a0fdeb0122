// The rig of the flood tests (fast and slow). Apart from admission-kit.ts, which the flood's own
// process loads (fork): that process needs none of the CLI harness.
import path from 'node:path';
import type { Identity } from '../../src/crypto/identity.js';
import { loadIdentity } from '../../src/home/identity-store.js';
import { PeerStore } from '../../src/home/peer-store.js';
import { rssKiB, sampleRss, startRig, type Rig } from '../fault/fault-harness.js';
import { floodFromChild, probePing, sleep, type FloodStats, type Transport } from './admission-kit.js';

/** A CLI listener `alice` and its paired peer B for a flood: B's keys, the listener's pid, a first ping, and the idle RSS after it. */
export interface FloodRig {
  readonly rig: Rig;
  readonly identityB: Identity;
  readonly peersB: PeerStore;
  readonly pid: number;
  /** The first ping's outcome ('ok'), before any flood. */
  readonly warmUp: string;
  readonly idleKiB: number;
}

export async function floodRig(label: string, listenArgs: readonly string[] = []): Promise<FloodRig> {
  const rig = await startRig(label, { listenArgs });
  const identityB = await loadIdentity(path.join(rig.b.home, 'identity.key'));
  const peersB = new PeerStore(path.join(rig.b.home, 'peers.json'));
  const pid = rig.listener.child.pid ?? 0;
  // Idle: after a first ping, so what a served session loads is in the baseline.
  const warmUp = await probePing(identityB, peersB, 'alice', rig.listener.port);
  await sleep(500);
  return { rig, identityB, peersB, pid, warmUp, idleKiB: await rssKiB(pid) };
}

export interface FloodRun {
  readonly stats: FloodStats;
  /** Each ping's outcome ('ok' or why not). */
  readonly pings: readonly string[];
  readonly peakKiB: number;
  /** Why the flood process stopped by itself, if it did. */
  readonly failure: string | undefined;
}

/**
 * Floods the rig's listener with `connections` unpaired connections (fresh keys, each refilled
 * `refillDelayMs` after it is dropped) from a process of their own and, once the flood has
 * opened them all once (at most `upWithinMs`: a budget, not a timing test), pings it from the
 * paired peer `pings` times, `pingGapMs` apart; the listener's RSS is sampled throughout.
 */
export async function floodWhilePinging(
  r: FloodRig,
  o: {
    transport: Transport;
    connections: number;
    refillDelayMs: number;
    pings: number;
    pingGapMs: number;
    sampleMs: number;
    upWithinMs: number;
  },
): Promise<FloodRun> {
  const port = r.rig.listener.port;
  const rss = sampleRss(r.pid, o.sampleMs);
  const started = performance.now();
  const flood = floodFromChild({
    transport: o.transport,
    port,
    connections: o.connections,
    refillDelayMs: o.refillDelayMs,
  });
  while (
    flood.stats.connected < o.connections &&
    flood.failure === undefined &&
    performance.now() - started < o.upWithinMs
  )
    await sleep(100);
  const pings: string[] = [];
  for (let i = 0; i < o.pings; i++) {
    pings.push(await probePing(r.identityB, r.peersB, 'alice', port, o.transport));
    await sleep(o.pingGapMs);
  }
  const stats = await flood.stop();
  const samples = await rss.stop();
  return { stats, pings, peakKiB: Math.max(...samples), failure: flood.failure };
}
