// Where a bench's runs push to (runner.ts): a simulated listener on its own thread behind
// impairment relays (--simulate), or a real paired peer (--peer), and the relay self-check of a
// simulated link. How and why: runner.ts's header.
import { mkdir, realpath, rm } from 'node:fs/promises';
import path from 'node:path';
import { startListenerWorker } from './listener-worker.js';
import { compensatedSpec } from './relay-floor.js';
import { generateIdentity, type Identity } from '../crypto/identity.js';
import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { ResolvedPeer } from '../home/peer-resolve.js';
import type { Share } from '../home/shares.js';
import { probeRelayAccuracy, startUdpEcho } from '../relay/accuracy.js';
import { formatImpairSpec, type ImpairSpec } from '../relay/impair-spec.js';
import type { ImpairmentCounters } from '../relay/impairment.js';
import { startUdpRelayWorker } from '../relay/relay-worker.js';
import { startTcpRelay } from '../relay/tcp-relay.js';
import type { HostPort } from '../transport/types.js';
import type { BenchPlan, BenchRunSetting } from './bench-plan.js';
import type { RunnerOptions, RelayCheckResult } from './bench-results.js';

/** PRNG seed of every simulated link: the same seed gives the same drops and jitter. */
export const RELAY_SEED = 1;

export interface LinkHandle {
  readonly address: HostPort;
  counters: () => Promise<ImpairmentCounters | undefined>;
  close(): Promise<void>;
}

export interface Environment {
  readonly identity: Identity;
  /** Starts what stands between client and listener for one run (a relay, or nothing). */
  openLink(setting: BenchRunSetting): Promise<LinkHandle>;
  peerAt(address: HostPort): ResolvedPeer;
  /** The share connection `k` (0-based) pushes into ('' = the peer's default share). */
  shareFor(k: number): string;
  /** The share run `index` syncs with (the sync workload: a fresh share per run, simulate only). */
  syncShareFor(index: number): string;
  /** Removes what a run pushed, when it is ours to remove (simulate: our temp share). */
  discard(remotePath: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * --simulate: a listener on its own thread (listener-worker.ts) with one share per striped
 * connection (and one per sync run), behind one impairment relay per link.
 */
export async function simulatedEnvironment(
  plan: BenchPlan,
  workDir: string,
  log: Logger,
  compensationMs: number,
): Promise<Environment> {
  const identity = generateIdentity();
  const serverHome = path.join(workDir, 'listener');
  // One share per striped connection: concurrent pushes into one share race on its chunk index
  // (writeFileAtomic's temp name is pid + ms, so two index writes in the same ms collide).
  const shareCount = Math.max(1, ...plan.settings.map((s) => s.connections));
  const shares: Share[] = [];
  for (let k = 0; k < shareCount; k++) {
    const name = k === 0 ? 'inbox' : `stripe-${k + 1}`;
    const dir = path.join(serverHome, name);
    await mkdir(dir, { recursive: true });
    shares.push({ name, dir: await realpath(dir), readOnly: false });
  }
  // A sync is of a whole share: each sync run gets its own, empty at the start.
  const syncShares = new Map<number, string>();
  if (plan.workload.kind === 'sync') {
    for (const setting of plan.settings) {
      const name = `sync-${String(setting.index + 1).padStart(4, '0')}`;
      const dir = path.join(serverHome, name);
      await mkdir(dir, { recursive: true });
      shares.push({ name, dir: await realpath(dir), readOnly: false });
      syncShares.set(setting.index, name);
    }
  }
  const needsTcp = plan.settings.some((s) => s.transport === 'tcp');
  // The peer runs on its own thread, beside the sender, as on another machine (listener-worker.ts).
  const server = await startListenerWorker({
    home: serverHome,
    shares,
    clientNodeId: identity.nodeId,
    transport: needsTcp ? 'auto' : 'quic',
  });
  const target: HostPort = { host: '127.0.0.1', port: server.port };
  // One relay per link for the whole bench, not one per run: a relay thread started for each run
  // compiled its code afresh (a new isolate), and that JIT work ran on the 2 cores during the
  // timed push. Runs read the relay's counters before and after, so sharing it loses nothing.
  const relays = new Map<string, Promise<LinkHandle>>();
  const relayFor = (transport: BenchRunSetting['transport'], spec: ImpairSpec): Promise<LinkHandle> => {
    const key = `${transport} ${formatImpairSpec(spec)}`;
    let relay = relays.get(key);
    if (relay === undefined) {
      const listen = { host: '127.0.0.1', port: 0 };
      relay =
        transport === 'tcp'
          ? startTcpRelay({ listen, target, spec, seed: RELAY_SEED, logger: log.child('tcp-relay') }).then((r) => ({
              address: r.address,
              counters: () => Promise.resolve(r.stats().counters),
              close: () => r.close(),
            }))
          : startUdpRelayWorker({ listen, target, spec: compensatedSpec(spec, compensationMs), seed: RELAY_SEED }).then(
              (r) => ({ address: r.address, counters: async () => (await r.stats()).counters, close: () => r.close() }),
            );
      relays.set(key, relay);
      relay.catch(() => relays.delete(key)); // a relay that failed to start is retried by the next run
    }
    return relay;
  };
  return {
    identity,
    async openLink(setting) {
      const spec = setting.spec;
      if (spec === undefined) throw new TypeError('simulated run without a spec');
      const relay = await relayFor(setting.transport, spec);
      return { address: relay.address, counters: relay.counters, close: () => Promise.resolve() }; // closed with the environment
    },
    peerAt: (address) => ({ id: server.nodeId, name: 'bench-listener', publicKey: server.publicKey, address }),
    shareFor: (k) => shares[k]?.name ?? '',
    syncShareFor: (index) => {
      const name = syncShares.get(index);
      if (name === undefined) throw new TypeError(`run ${index} has no sync share`);
      return name;
    },
    discard: async (remotePath) => {
      await Promise.all(
        shares.map((s) => rm(path.join(s.dir, ...remotePath.split('/')), { recursive: true, force: true })),
      );
    },
    close: async () => {
      const started = await Promise.allSettled(relays.values());
      await Promise.all(
        started.map((r) => (r.status === 'fulfilled' ? r.value.close().catch(() => undefined) : Promise.resolve())),
      );
      await server.close();
    },
  };
}

/** --peer: a real paired peer, dialled at its pair address; nothing of ours stands between. */
export function peerEnvironment(peer: NonNullable<RunnerOptions['peer']>): Environment {
  const address = peer.resolved.address;
  if (address === undefined) throw new TypeError("bench needs the peer's address (bench.ts checks it)");
  return {
    identity: peer.identity,
    openLink: () =>
      Promise.resolve({ address, counters: () => Promise.resolve(undefined), close: () => Promise.resolve() }),
    peerAt: (address) => ({ ...peer.resolved, address }),
    shareFor: () => '',
    syncShareFor: () => {
      throw new ClawpeerError('USAGE', 'the sync workload runs with --simulate only');
    },
    discard: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
}

/** Measures one link with the relay self-check, on a worker thread like the runs' relay. */
export async function checkSimulatedLink(
  spec: ImpairSpec,
  probe: RunnerOptions['accuracyProbe'] = {},
  signal?: AbortSignal,
  compensationMs = 0,
): Promise<RelayCheckResult> {
  const echo = await startUdpEcho();
  try {
    const relay = await startUdpRelayWorker({
      listen: { host: '127.0.0.1', port: 0 },
      target: echo.address,
      spec: compensatedSpec(spec, compensationMs),
      seed: RELAY_SEED,
    });
    try {
      const report = await probeRelayAccuracy({
        ...probe,
        spec,
        relay: relay.address,
        echo,
        ...(signal === undefined ? {} : { signal }),
      });
      return { link: formatImpairSpec(spec), ok: report.ok, report, placement: 'worker' };
    } finally {
      await relay.close();
    }
  } finally {
    await echo.close();
  }
}
