// What a bench run is given and gives back (runner.ts): its options and progress callback, and
// the per-run results and whole report that report.ts formats and the bench command prints.
import type { BenchConditions } from './machine.js';
import type { RelayFloor } from './relay-floor.js';
import type { Identity } from '../crypto/identity.js';
import type { Logger } from '../logger.js';
import type { ResolvedPeer } from '../home/peer-resolve.js';
import type { AccuracyProbeOptions, AccuracyReport } from '../relay/accuracy.js';
import type { BenchPlan, BenchTransport } from './bench-plan.js';

export interface BenchProgress {
  /** 1-based run number and total. */
  readonly run: number;
  readonly runs: number;
  readonly label: string;
  readonly phase: 'relay-check' | 'preparing' | 'scanning' | 'sending' | 'publishing' | 'done';
  readonly bytes: number;
  readonly totalBytes: number;
}

export interface RunnerOptions {
  readonly log: Logger;
  readonly signal: AbortSignal;
  readonly onProgress?: (p: BenchProgress) => void;
  /** --peer only: this node's identity and the resolved peer (its pinned key and address). */
  readonly peer?: { readonly identity: Identity; readonly resolved: ResolvedPeer };
  /** Relay self-check probe sizes (tests shrink them); defaults are the probe's own. */
  readonly accuracyProbe?: Pick<AccuracyProbeOptions, 'rttProbes' | 'rateDurationMs' | 'lossProbes'>;
  /** Skip the relay self-check (tests of the runner only; the CLI always runs it). */
  readonly skipRelayCheck?: boolean;
  /** Where workloads and the simulated listener's share are written (default: the OS temp dir). */
  readonly workDir?: string;
}

export interface RelayCheckResult {
  readonly link: string;
  readonly ok: boolean;
  readonly report: AccuracyReport;
  readonly placement: 'worker';
}

export interface RelayRunCounters {
  readonly droppedLoss: number;
  readonly droppedQueue: number;
  readonly droppedOverflow: number;
  readonly forwarded: number;
}

export interface BenchRunResult {
  readonly index: number;
  readonly repeat: number;
  readonly transport: BenchTransport;
  readonly link: string;
  readonly rttMs: number | null;
  readonly lossPct: number | null;
  readonly window: number;
  readonly streams: number;
  readonly connections: number;
  /** push's --connections of each session (1: one connection; 'auto': grown on random loss). */
  readonly sessionConnections: number | 'auto';
  /** QUIC connections the sessions had at the end of the run, summed (auto: how many it grew to). */
  readonly connectionsUsed: number | null;
  readonly ok: boolean;
  readonly error: string | null;
  /** What the listener granted (it may clamp streams and window). */
  readonly effectiveWindow: number | null;
  readonly effectiveStreams: number | null;
  readonly payloadBytes: number;
  readonly files: number;
  /** Wall time of the whole push (scan, manifest, data, publish), s. */
  readonly seconds: number;
  /** First chunk sent to transfer done, s; null for revisions-seq (many pushes). */
  readonly dataSeconds: number | null;
  readonly goodputBitsPerSec: number;
  readonly dataGoodputBitsPerSec: number | null;
  /** Goodput as % of the configured link rate; null without a rate. */
  readonly linkPct: number | null;
  /** Revision workloads: revisions per second over the whole run. */
  readonly revisionsPerSec: number | null;
  readonly pingMs: {
    readonly min: number;
    readonly median: number;
    readonly max: number;
    readonly samples: number;
  } | null;
  /** Transport's smoothed RTT at the end of the push, per connection, ms. */
  readonly transportRttMs: number[];
  /** QUIC packets declared lost, per connection; null when the transport does not say (TCP). */
  readonly lostPackets: number[] | null;
  /** Congestion window at the end of the push, per connection, bytes; null when unknown. */
  readonly congestionWindowBytes: number[] | null;
  readonly wireBytes: number;
  readonly chunksSent: number;
  readonly chunksSkipped: number;
  /** The relay's counters over this run, both directions summed; null with --peer. */
  readonly relay: RelayRunCounters | null;
  /**
   * Datagrams this machine's kernel dropped at full UDP socket buffers during the run (any
   * process's: /proc/net/snmp); loss the relay did not decide. Null where unknown (not Linux).
   */
  readonly kernelUdpDrops: number | null;
  /** Sync workload: bytes spent finding the difference, and the round trips of the timed sync; null otherwise. */
  readonly reconcileBytes: number | null;
  readonly roundTrips: number | null;
}

export interface BenchRunnerReport {
  readonly conditions: BenchConditions & {
    readonly loadAverageStart: number[];
    readonly loadAverageEnd: number[];
    /**
     * --simulate: median µs to create one file in the bench's work directory, where the simulated
     * peer's shares are (fileCreateMicros): the receiver pays it per file. Null for --peer.
     */
    readonly fileCreate: { readonly dir: string; readonly medianMicros: number } | null;
  };
  readonly plan: BenchPlan;
  readonly relayChecks: RelayCheckResult[];
  readonly relayAccurate: boolean;
  /** --simulate: the relay thread's own forwarding latency, taken off each UDP link's RTT (relay-floor.ts); null when not measured. */
  readonly relayFloor: RelayFloor | null;
  readonly runs: BenchRunResult[];
  /** Where the runs pushed, inside the destination share. */
  readonly remoteBase: string;
  readonly notes: string[];
  readonly startedAt: string;
  readonly wallSeconds: number;
}
