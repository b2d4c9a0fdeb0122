// A peer that dies (killed, crashed, its network gone) leaves its connections admitted until
// the idle timeout ends them (15 s by default), and meanwhile they count against its caps: a
// pull killed mid-way and run again at once was refused "too many connections" (seen in the
// fault trials of CI). A live connection hears from its peer at least once per keep-alive
// interval (QUIC PINGs and their ACKs; the TCP mux's PING/PONG), so one that hears nothing for
// a keep-alive interval and a second more is presumed gone; only such connections make room for
// a newcomer over a cap, never a live one.
import type { Connection } from '../transport/types.js';

/** Beyond a keep-alive interval, how long a silent connection gets to be heard (scheduling, RTT). */
const SILENCE_MARGIN_MS = 1_000;

/** How long a connection must hear nothing before it is presumed gone, for a listener's timeouts. */
export function silenceWindowMs(config: { readonly keepAliveMs: number; readonly idleTimeoutMs: number }): number {
  // The transports keep alive at most every third of the idle timeout (transport/quinn.ts).
  return Math.min(config.keepAliveMs, Math.floor(config.idleTimeoutMs / 3)) + SILENCE_MARGIN_MS;
}

const received = (c: Connection): number | undefined => {
  try {
    return c.stats().bytesReceived;
  } catch {
    return undefined; // closed meanwhile: not ours to close
  }
};

/** Those of `connections` that receive nothing during `windowMs` (the wait ends early on `signal`). */
export async function silentAmong(
  connections: readonly Connection[],
  windowMs: number,
  signal: AbortSignal,
): Promise<Connection[]> {
  if (connections.length === 0) return [];
  const before = connections.map(received);
  await new Promise<void>((resolve) => {
    const timer = setTimeout(done, windowMs);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
  if (signal.aborted) return [];
  return connections.filter((c, i) => before[i] !== undefined && received(c) === before[i]);
}
