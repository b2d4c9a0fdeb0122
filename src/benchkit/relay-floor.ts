// What the simulated link's relay adds by itself, and taking it off the configured delay.
//
// Goal: a `--simulate rtt=5ms` link whose round trip is 5 ms, not 5 ms plus the relay's own
// forwarding. A packet through the relay thread crosses two more sockets and wakes another event
// loop each way; with no impairment at all that added 0.15-0.55 ms per round trip here over a
// direct loopback echo (it varies with the host: thread wake-ups on this VM), 3-11% of a 5 ms
// link, enough to fail the relay self-check's 5% and to run every 5 ms result on a longer RTT.
// How: before the self-checks, the same probe (relay/accuracy.ts, RTT phase) measures a direct
// loopback echo, then a relay thread delaying REFERENCE_RTT_MS in front of the same echo; what
// the relayed round trip takes beyond the reference delay and the direct round trip is the
// floor, taken off each link's RTT when its relay starts (never below 0: a 1 ms link cannot lose
// more than it has). A delayed reference, not a zero-delay relay: released by a timer after the
// endpoints went idle, a packet paid ~0.3 ms more here than one forwarded at once, and that is
// how every simulated link forwards. The self-check then measures the compensated relay against
// the configured RTT, so whatever the compensation misses is still reported. Only the RTT is
// compensated: rate and loss do not depend on forwarding latency, and the queue limit is pinned
// to the configured link's (its default follows the RTT).
// Non-goals: compensating the TCP relay (it runs in this process and the self-check does not
// measure it), or the endpoints' own stacks (they are what is measured).
import { PASS_THROUGH, resolveQueueLimit, type ImpairSpec } from '../relay/impair-spec.js';
import { probeRelayAccuracy, startUdpEcho, type AccuracyProbeOptions } from '../relay/accuracy.js';
import { startUdpRelayWorker } from '../relay/relay-worker.js';

/** RTT probes per side of the floor measurement (the self-check's default RTT phase size). */
const FLOOR_PROBES = 200;
/** The delay of the reference relay, ms: long enough that every release is timer-driven. */
export const REFERENCE_RTT_MS = 20;
/** Loss probes the measurement cannot skip (its loss phase is not used). */
const FLOOR_LOSS_PROBES = 100;

export interface RelayFloor {
  /** Trimmed-mean RTT of a direct loopback echo, ms. */
  readonly directMs: number;
  /** Trimmed-mean RTT through a relay thread delaying REFERENCE_RTT_MS, ms. */
  readonly relayedMs: number;
  readonly referenceRttMs: number;
  /** relayedMs - referenceRttMs - directMs, at least 0: what each link's RTT is reduced by. */
  readonly compensationMs: number;
}

/** Measures the relay thread's forwarding floor (see the module comment). */
export async function measureRelayFloor(options: {
  readonly seed: number;
  readonly probes?: number;
  readonly signal?: AbortSignal;
}): Promise<RelayFloor> {
  const echo = await startUdpEcho();
  try {
    const probe: Omit<AccuracyProbeOptions, 'relay'> = {
      spec: PASS_THROUGH,
      echo,
      rttProbes: options.probes ?? FLOOR_PROBES,
      lossProbes: FLOOR_LOSS_PROBES,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    };
    const direct = await probeRelayAccuracy({ ...probe, relay: echo.address });
    const reference: ImpairSpec = { ...PASS_THROUGH, rttMs: REFERENCE_RTT_MS };
    const relay = await startUdpRelayWorker({
      listen: { host: '127.0.0.1', port: 0 },
      target: echo.address,
      spec: reference,
      seed: options.seed,
    });
    let relayed;
    try {
      relayed = await probeRelayAccuracy({ ...probe, spec: reference, relay: relay.address });
    } finally {
      await relay.close();
    }
    const round3 = (x: number): number => Math.round(x * 1000) / 1000;
    const directMs = direct.rtt.measuredMs;
    const relayedMs = relayed.rtt.measuredMs;
    const floor = relayedMs - REFERENCE_RTT_MS - directMs;
    return {
      directMs,
      relayedMs,
      referenceRttMs: REFERENCE_RTT_MS,
      compensationMs: Number.isFinite(floor) ? round3(Math.max(0, floor)) : 0,
    };
  } finally {
    await echo.close();
  }
}

/**
 * The spec a relay is started with so that, with its forwarding floor of `compensationMs`, the
 * link has `spec`'s RTT: the RTT reduced (not below 0) and the queue limit pinned to `spec`'s.
 */
export function compensatedSpec(spec: ImpairSpec, compensationMs: number): ImpairSpec {
  if (compensationMs <= 0 || spec.rttMs <= 0) return spec;
  const queue = resolveQueueLimit(spec);
  return {
    ...spec,
    rttMs: Math.max(0, Math.round((spec.rttMs - compensationMs) * 1000) / 1000),
    ...(queue === undefined
      ? {}
      : {
          queue:
            'bytes' in queue
              ? { unit: 'bytes' as const, bytes: queue.bytes }
              : { unit: 'packets' as const, packets: queue.packets },
        }),
  };
}
