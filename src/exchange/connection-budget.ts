// How much unacknowledged data of one send a connection may hold, when a send may stripe over
// several QUIC connections (session-join.ts, loss-watch.ts).
//
// Why: a data stream hands chunks to its QUIC stream as fast as its window allows (4 MiB per
// stream at the defaults), and quinn buffers whatever it is given. Under random loss a
// connection carries ~2 Mbit/s (1% at 50 ms), so the first connection's four streams committed
// 16 MiB at the start that only it could send: the connections that joined later found the
// units taken, and a 64 MiB transfer lasted as long as the first connection took to drain its
// quarter (bench-loss-striping.json, Dec 3: 9.2% of the link at 1% loss with 12 connections).
// So a stream takes its next unit of work only while its connection holds less than a few of
// its congestion windows (CUBIC's own measure of what it can carry per round trip): the rest
// stays in the shared queue for whichever connection has room, and a slow connection keeps
// about two units beyond what is in flight on it.
// Non-goals: pacing (quinn does), choosing the unit (WorkQueue), I/O beyond reading the
// connection's stats.
import type { Connection } from '../transport/types.js';

/**
 * Congestion windows of unacknowledged data a connection may hold: one in the network, one for
 * the receiver's write and verify and the ack's way back, and for the window's growth.
 */
export const CWND_FACTOR = 2;
/**
 * Congestion windows a connection may hold while the bound cannot matter yet: it has lost no
 * packet (slow start) or its session does not stripe (no other connection could take the work).
 * Two windows there cost a lone connection at 0% loss on 50 ms / 100 Mbit/s 85.5% of the link
 * against 89.2% unbounded; 8 gives 88.0%, and 64 no more while 0.1% loss fell from ~76% to
 * 24-49% (the first connection kept what it took before the session striped). Dec 4, medians.
 */
export const UNSTRIPED_CWND_FACTOR = 8;

/** The data streams of one send that go over one connection, and what they hold unacknowledged. */
export class ConnectionBudget {
  readonly #limitBytes: () => number;
  readonly #holders = new Set<() => number>();
  #waiters: (() => void)[] = [];

  /** `limitBytes`: what the connection may hold now (read at each check: windows grow and shrink). */
  constructor(limitBytes: () => number) {
    this.#limitBytes = limitBytes;
  }

  /** A stream of this connection reports what it holds through `pending`; returns its leave. */
  join(pending: () => number): () => void {
    this.#holders.add(pending);
    return () => {
      this.#holders.delete(pending);
      this.wake();
    };
  }

  /** Bytes the connection's streams hold: sent and unacknowledged, or taken and not yet sent. */
  held(): number {
    let bytes = 0;
    for (const pending of this.#holders) bytes += pending();
    return bytes;
  }

  /** True while another unit may be taken for this connection. */
  hasRoom(): boolean {
    return this.held() < this.#limitBytes();
  }

  /** Something was acknowledged, or a stream left: the waiting streams look again. */
  wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }

  /**
   * Resolves at the next wake (callers loop on hasRoom(), so that check and take are one step;
   * the send wakes every budget when it is aborted, and the caller checks its signal).
   */
  changed(): Promise<void> {
    return new Promise((resolve) => this.#waiters.push(resolve));
  }
}

/**
 * What `conn` may hold: CWND_FACTOR congestion windows once it has lost packets while its session
 * stripes (`striping`), UNSTRIPED_CWND_FACTOR before; plus `unitBytes` so that the next unit is
 * taken while the last chunk of the one before is still on its way (a chunk is acknowledged
 * only once it arrived whole: with less, a slow connection would idle a round trip per unit).
 * No limit when the transport does not tell its window, or is gone.
 */
export function congestionLimit(conn: Connection, unitBytes: number, striping: () => boolean): () => number {
  return () => {
    try {
      const { congestionWindowBytes: cwnd, lostPackets = 0 } = conn.stats();
      if (cwnd === undefined) return Number.POSITIVE_INFINITY;
      const factor = lostPackets > 0 && striping() ? CWND_FACTOR : UNSTRIPED_CWND_FACTOR;
      return cwnd * factor + unitBytes;
    } catch {
      return Number.POSITIVE_INFINITY;
    }
  };
}

/** Budgets by connection (all undefined when `enabled` is false), and a wake of every one. */
export function connectionBudgets(
  enabled: boolean,
  unitBytes: number,
  striping: () => boolean,
): ((conn: Connection) => ConnectionBudget | undefined) & { wakeAll(): void } {
  const budgets = new Map<Connection, ConnectionBudget>();
  const budgetOf = (conn: Connection): ConnectionBudget | undefined => {
    if (!enabled) return undefined;
    let budget = budgets.get(conn);
    if (budget === undefined) {
      budget = new ConnectionBudget(congestionLimit(conn, unitBytes, striping));
      budgets.set(conn, budget);
    }
    return budget;
  };
  return Object.assign(budgetOf, { wakeAll: () => budgets.forEach((b) => b.wake()) });
}
