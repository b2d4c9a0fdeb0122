// A striped send takes work for a connection only while the connection has room
// (exchange/connection-budget.ts): the budget's bookkeeping, and a push over two connections
// whose first stops moving (as a connection at 1% loss nearly does) while the second carries
// the rest: the stuck one holds about one unit, not its streams' windows (4 MiB here before).
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { ConnectionBudget, congestionLimit } from '../../src/exchange/connection-budget.js';
import { STRIPED_UNIT_BYTES } from '../../src/exchange/transfer-send.js';
import { silentLogger } from '../../src/logger.js';
import { dialPeer } from '../../src/session/dialer.js';
import type { Connection, DuplexStream, TransportStats } from '../../src/transport/types.js';
import { config, pushTree, rig } from '../session/join-rig.js';

t.test('the budget: held bytes against the limit, wakes on change', async (t) => {
  let limit = 100;
  const budget = new ConnectionBudget(() => limit);
  let a = 0;
  let b = 0;
  budget.join(() => a);
  const leaveB = budget.join(() => b);
  t.ok(budget.hasRoom(), 'nothing held');
  a = 60;
  b = 40;
  t.equal(budget.held(), 100);
  t.notOk(budget.hasRoom(), 'held reaches the limit');
  let woken = false;
  const waiting = budget.changed().then(() => (woken = true));
  await Promise.resolve();
  t.notOk(woken, 'no wake without a change');
  leaveB();
  await waiting;
  t.ok(woken, 'a stream leaving wakes the waiters');
  t.ok(budget.hasRoom(), 'and its bytes no longer count');
  limit = 50;
  t.notOk(budget.hasRoom(), 'the limit is read at each check');
});

t.test('the limit follows the congestion window, tight once a lossy connection stripes', async (t) => {
  const conn = (stats: Partial<TransportStats>): Connection =>
    ({ stats: () => ({ rttMs: 50, bytesSent: 0, bytesReceived: 0, ...stats }) }) as unknown as Connection;
  const striping = (): boolean => true;
  const alone = (): boolean => false;
  const lossy = conn({ congestionWindowBytes: 10_000, lostPackets: 3 });
  t.equal(congestionLimit(lossy, 256, striping)(), 20_256, 'two windows and a unit: lost packets, striping');
  t.equal(congestionLimit(lossy, 256, alone)(), 80_256, 'eight while the session does not stripe');
  const clean = conn({ congestionWindowBytes: 10_000, lostPackets: 0 });
  t.equal(congestionLimit(clean, 256, striping)(), 80_256, 'eight before the first lost packet (slow start)');
  t.equal(congestionLimit(conn({}), 256, striping)(), Number.POSITIVE_INFINITY, 'a transport without a window');
  const gone = { stats: () => { throw new Error('closed'); } } as unknown as Connection; // prettier-ignore
  t.equal(congestionLimit(gone, 256, striping)(), Number.POSITIVE_INFINITY, 'a closed connection');
});

/** Wraps `conn`'s data streams: counts what is written on them, and holds writes until `release`. */
function instrument(conn: Connection, hold: Promise<void> | undefined): { written: () => number } {
  let written = 0;
  const open = conn.openStream.bind(conn);
  Object.assign(conn, {
    openStream: async (): Promise<DuplexStream> => {
      const raw = await open();
      return Object.assign(Object.create(raw) as DuplexStream, {
        id: raw.id,
        write: async (data: Uint8Array): Promise<void> => {
          written += data.length;
          if (hold !== undefined) await hold;
          return raw.write(data);
        },
        read: (maxBytes?: number) => raw.read(maxBytes),
        finish: () => raw.finish(),
        reset: () => raw.reset(),
      });
    },
  });
  return { written: () => written };
}

t.test('a stuck connection holds about one unit; the other carries the rest', async (t) => {
  const { peer, identity, inbox } = await rig(t);
  const session = await dialPeer({ identity, peer, config, log: silentLogger, connections: 2 });
  t.teardown(() => session.close());
  const [first, second] = session.connections();
  if (first === undefined || second === undefined) throw new Error('two connections expected');
  // The first connection looks like a 50 ms path with the smallest window (so the send budgets
  // its connections), and its data streams do not move until released.
  const stats = first.stats.bind(first);
  Object.assign(first, { stats: (): TransportStats => ({ ...stats(), rttMs: 50, congestionWindowBytes: 0 }) });
  let release = (): void => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  const stuck = instrument(first, held);
  const moving = instrument(second, undefined);
  const size = 8 << 20;
  const bound = STRIPED_UNIT_BYTES + (1 << 20) + (64 << 10); // the limit, a unit of the largest chunk, framing
  // Released once the other connection has carried all but that bound (or after 5 s: then the
  // stuck one took more, which the assertion below reports).
  const started = Date.now();
  const poll = setInterval(() => {
    if (moving.written() >= size - bound || Date.now() - started > 5_000) {
      clearInterval(poll);
      release();
    }
  }, 20);
  t.teardown(() => clearInterval(poll));
  const bytes = randomBytes(size);
  await pushTree(session, 'striped', { 'a.bin': bytes });
  t.ok((await readFile(path.join(inbox, 'striped', 'a.bin'))).equals(bytes), 'the file arrived byte-identical');
  t.ok(stuck.written() <= bound, `the stuck connection took ${stuck.written()} bytes (at most ${bound})`);
  t.ok(moving.written() >= size - bound, `the moving one carried ${moving.written()} bytes`);
});
