// The rig of the flood tests (fast and slow). Apart from admission-kit.ts, which the flood's own
// process loads (fork): that process needs none of the CLI harness.
import path from 'node:path';
import type { Identity } from '../../src/crypto/identity.js';
import { loadIdentity } from '../../src/home/identity-store.js';
import { PeerStore } from '../../src/home/peer-store.js';
import { rssKiB, startRig, type Rig } from '../fault/fault-harness.js';
import { probePing, sleep } from './admission-kit.js';

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
