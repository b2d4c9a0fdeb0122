// The rendezvous server's sockets: UDP on port P (everything) and P+1 (REFLECT only, so a node
// can tell an endpoint-independent NAT mapping from a symmetric one), feeding each datagram to
// the sans-I/O RendezvousState and sending what it answers. `clawpeer rendezvous` runs it.
// The log names node ids, addresses and counts, never a payload byte.
import dgram from 'node:dgram';
import { isIPv6 } from 'node:net';
import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { HostPort } from '../transport/types.js';
import { RendezvousState, type RendezvousCounters, type RendezvousLimits } from './rendezvous-state.js';
import { bindUdp, setUdpBuffers } from './udp.js';

export interface RendezvousServerOptions {
  readonly listen: HostPort;
  readonly limits?: Partial<RendezvousLimits>;
  readonly log: Logger;
  /** Test hook: what the relay does to each relayed datagram (a misbehaving relay). */
  readonly tamper?: (bytes: Uint8Array, to: HostPort) => { bytes: Uint8Array; to: HostPort }[];
  readonly now?: () => number;
}

export interface RendezvousServer {
  /** The main port P; the reflection port is P+1. */
  readonly address: HostPort;
  readonly reflectAddress: HostPort;
  counters(): Readonly<RendezvousCounters>;
  close(): Promise<void>;
}

const SOCKET_BUFFER_BYTES = 4 * 1024 * 1024;
const STATS_EVERY_MS = 60_000;

/** Starts the server; port 0 picks a free pair P, P+1. */
export async function startRendezvousServer(o: RendezvousServerOptions): Promise<RendezvousServer> {
  const state = new RendezvousState(o.limits);
  const now = o.now ?? Date.now;
  const type = isIPv6(o.listen.host) ? 'udp6' : 'udp4';
  let main: dgram.Socket | undefined;
  let second: dgram.Socket | undefined;
  for (let attempt = 0; attempt < 16 && second === undefined; attempt++) {
    main = dgram.createSocket({ type, reuseAddr: false });
    await bindUdp(main, o.listen.host, o.listen.port, 'rendezvous');
    const port = main.address().port;
    second = dgram.createSocket({ type, reuseAddr: false });
    try {
      if (port === 65535)
        throw new ClawpeerError('USAGE', 'the rendezvous port must be below 65535 (P+1 answers reflections)');
      await bindUdp(second, o.listen.host, port + 1, 'rendezvous reflection');
    } catch (err) {
      second.close();
      second = undefined;
      main.close();
      if (o.listen.port !== 0) throw err;
    }
  }
  if (main === undefined || second === undefined)
    throw new ClawpeerError('ADDRESS_IN_USE', `no free port pair P, P+1 on ${o.listen.host}`);
  const sockets = [main, second] as const;
  for (const s of sockets) setUdpBuffers(s, SOCKET_BUFFER_BYTES);
  const log = o.log;
  const send = (bytes: Uint8Array, to: HostPort, via: 0 | 1): void => {
    sockets[via].send(bytes, to.port, to.host, (err) => {
      if (err !== null && err !== undefined)
        log.debug('rendezvous send failed', { to: `${to.host}:${to.port}`, error: err.message });
    });
  };
  sockets.forEach((socket, via) => {
    socket.on('message', (msg, rinfo) => {
      const from = { host: rinfo.address, port: rinfo.port };
      const isData = msg[0] === 0x8d;
      for (const out of state.handle(msg, from, via as 0 | 1, now())) {
        if (isData && o.tamper !== undefined) {
          for (const t of o.tamper(out.bytes, out.to)) send(t.bytes, t.to, 0);
        } else send(out.bytes, out.to, out.via);
      }
    });
    socket.on('error', (err) => log.warn('rendezvous socket error', { error: err.message }));
  });
  const stats = setInterval(() => log.info('rendezvous', { ...state.counters }), STATS_EVERY_MS);
  stats.unref();
  const address = { host: o.listen.host, port: main.address().port };
  log.info('rendezvous listening', { address: `${address.host}:${address.port}`, reflect: address.port + 1 });
  let closed: Promise<void> | undefined;
  return {
    address,
    reflectAddress: { host: address.host, port: address.port + 1 },
    counters: () => ({ ...state.counters }),
    close: () =>
      (closed ??= (async () => {
        clearInterval(stats);
        await Promise.all(sockets.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
      })()),
  };
}
