// running-syncs.ts: a new sync of a folder closes the connection of every other sync of that
// folder (with the same peer or another) that received nothing for a while, and only those.
import t from 'tap';
import { silentLogger } from '../../src/logger.js';
import { RunningSyncs } from '../../src/folder-sync/running-syncs.js';
import type { Connection } from '../../src/transport/types.js';

/** A connection whose received bytes grow at each look when `live`; records its close. */
function fakeConnection(live: boolean): { connection: Connection; closed: () => boolean } {
  let rx = 100;
  let closed = false;
  const connection = {
    stats: () => ({ rttMs: 1, bytesSent: 0, bytesReceived: live ? (rx += 10) : rx }),
    close: () => {
      closed = true;
      return Promise.resolve();
    },
  } as unknown as Connection;
  return { connection, closed: () => closed };
}

t.test('only quiet syncs of the same folder, on other connections, are ended, whatever their peer', async (t) => {
  const syncs = new RunningSyncs();
  const dead = fakeConnection(false);
  const live = fakeConnection(true);
  const otherPeer = fakeConnection(false);
  const otherFolder = fakeConnection(false);
  const mine = fakeConnection(false);
  const ends = [
    syncs.register('/f', 'P', dead.connection),
    syncs.register('/f', 'P', live.connection),
    syncs.register('/f', 'Q', otherPeer.connection),
    syncs.register('/g', 'P', otherFolder.connection),
    syncs.register('/f', 'P', mine.connection),
  ];
  t.teardown(() => {
    for (const end of ends) end();
  });
  t.equal(syncs.endStale('/f', mine.connection, 200, silentLogger), 0, 'nothing is quiet that long yet');
  await new Promise((r) => setTimeout(r, 300));
  t.equal(syncs.endStale('/f', mine.connection, 200, silentLogger), 2, 'two ended');
  t.ok(dead.closed(), 'the quiet one with the same peer');
  t.ok(otherPeer.closed(), 'a quiet one with another peer: it held the folder from every peer (seed 51103)');
  t.notOk(live.closed(), 'not one that receives');
  t.notOk(otherFolder.closed(), "not another folder's");
  t.notOk(mine.closed(), "not the asking sync's own");
});
