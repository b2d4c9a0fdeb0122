// Application-level ping over the control channel: measures the round trip through the whole
// stack (transport, frames, control loop), which is what a transfer's acks will see.
import { performance } from 'node:perf_hooks';
import { ClawpeerError } from '../errors.js';
import type { PeerSession } from './session.js';
import { sleep, withTimeout } from '../support/timeouts.js';

export interface PingResult {
  readonly seq: number;
  readonly rttMs: number;
  /** The transport's own smoothed RTT estimate at that moment. */
  readonly transportRttMs: number;
}

export async function* pingPeer(
  session: PeerSession,
  options: { count: number; intervalMs: number; timeoutMs: number; signal?: AbortSignal },
): AsyncGenerator<PingResult> {
  for (let seq = 1; seq <= options.count; seq++) {
    if (options.signal?.aborted === true) return;
    const start = performance.now();
    // The peer may have said why it is hanging up just before: its reason beats "connection lost".
    await session.control
      .send({ type: 'ping', seq, sentTimeUs: Math.round(start * 1000) })
      .catch(async (err: unknown) => {
        throw await session.reasonFor(err);
      });
    const reply = await withTimeout(
      session.control.receive(options.signal !== undefined ? { signal: options.signal } : {}),
      options.timeoutMs,
      `pong ${seq} from ${session.peerId}`,
    );
    const rttMs = performance.now() - start;
    if (reply === null)
      throw new ClawpeerError(
        'CONNECTION_CLOSED',
        `peer ${session.peerId} closed the control stream before answering ping ${seq}`,
      );
    if (reply.type !== 'pong' || reply.seq !== seq)
      throw new ClawpeerError('PROTOCOL', `expected pong ${seq} from ${session.peerId}, got ${reply.type}`);
    yield { seq, rttMs, transportRttMs: session.connection.stats().rttMs };
    if (seq < options.count) await sleep(options.intervalMs);
  }
}
