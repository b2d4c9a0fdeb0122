// The driver of transfer/stripe-policy.ts: while a transfer sends, reads the session's
// transport counters (quinn's lost packets, datagrams sent, smoothed RTT) every
// LOSS_WATCH_INTERVAL_MS (SHORT_PATH_INTERVAL_MS on a path too short to stripe) and, when the
// policy says so, asks the session for more connections
// (PeerSession.wantConnections: the dialer joins them, a listener asks its client to).
// One policy per session, so what a first transfer learnt (the link is full) holds for the next.
import type { Logger } from '../logger.js';
import { STRIPE_POLICY_DEFAULTS, StripePolicy } from '../transfer/stripe-policy.js';
import type { PeerSession } from './session.js';

/** How often the counters are read, ms: a few per round trip of a long path. */
export const LOSS_WATCH_INTERVAL_MS = 100;
/**
 * How often once the path has shown only round trips too short to stripe (LAN, loopback) for
 * SHORT_PATH_SAMPLES readings in a row, ms. A reading is not cheap: the binding's stats() took
 * ~1 ms of the main thread each while quinn was busy sending (a 1 GiB loopback push spent 430 ms
 * of its ~7.6 CPU-s there at 10 readings a second). A path that grows longer (a route change) is
 * seen within this time, and the fast pace resumes.
 */
export const SHORT_PATH_INTERVAL_MS = 1_000;
const SHORT_PATH_SAMPLES = 10;
/**
 * Connections in all an automatic session grows to (1, 4, 14): of the listener's 16 per peer
 * (maxConnectionsPerPeer) two are left for other commands. One connection carries ~2.2 Mbit/s at
 * 1% loss and 50 ms: at 100 Mbit/s, 12 reached 25-27% of the link and 14 29-30% (two runs each
 * on a busy machine, Dec 3); bench-loss-striping.json has 28.8% with 14.
 */
export const AUTO_MAX_CONNECTIONS = 14;

const POLICIES = new WeakMap<PeerSession, StripePolicy>();

/** Starts watching (nothing when the session has nobody to add connections); returns the stop. */
export function watchLoss(session: PeerSession, log: Logger, maxConnections = AUTO_MAX_CONNECTIONS): () => void {
  if (!session.canAddConnections || !session.caps.features.includes('join')) return () => undefined;
  let policy = POLICIES.get(session);
  if (policy === undefined) {
    policy = new StripePolicy({ maxConnections });
    POLICIES.set(session, policy);
  }
  const p = policy;
  let shortSamples = 0;
  const tick = (): void => {
    let lost = 0;
    let sent = 0;
    let rttMs: number | undefined;
    const conns = session.connections();
    for (const c of conns) {
      const s = c.stats();
      lost += s.lostPackets ?? 0;
      sent += s.sentPackets ?? 0;
      if (c === session.connection) rttMs = s.rttMs;
    }
    rttMs ??= session.connection.stats().rttMs;
    // quinn reports whole ms: 0 is a round trip under 1 ms.
    shortSamples = rttMs < STRIPE_POLICY_DEFAULTS.minRttMs ? shortSamples + 1 : 0;
    const verdict = p.sample({
      atMs: performance.now(),
      rttMs,
      lostPackets: lost,
      sentPackets: sent,
      connections: conns.length,
    });
    if (verdict.kind !== 'grow') return;
    log.info('random loss on the path: asking for more connections', {
      peer: session.peerId,
      connections: verdict.connections,
      lossPct: Math.round(verdict.lossRate * 1e5) / 1e3,
      rttMs: Math.round(rttMs * 10) / 10,
    });
    session.wantConnections(verdict.connections);
  };
  let timer: ReturnType<typeof setTimeout> | undefined;
  const next = (): void => {
    tick();
    timer = setTimeout(next, shortSamples >= SHORT_PATH_SAMPLES ? SHORT_PATH_INTERVAL_MS : LOSS_WATCH_INTERVAL_MS);
    timer.unref();
  };
  next();
  return () => clearTimeout(timer);
}
