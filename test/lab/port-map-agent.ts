// Runs startPortMapping inside a lab home (node port-map-agent.js PROTOCOLS LIFETIME_S [PORT]):
// binds a UDP socket and a TCP server on one port (default: any free one), maps them, and
// reports as JSON lines: {event:'mapped', via, addresses, status}, then {event:'datagram',
// from, text} for each datagram the UDP socket gets, {event:'changed', addresses} on a change.
// PROTOCOLS `listener` runs startListenerPortMapping instead, as a listener's rendezvous side
// does: the port as the QUIC and TCP listener's, and a second UDP socket (the traversal
// socket's stand-in) mapped with mapMux; its datagrams are reported with `socket: 'mux'`.
// A line "close" on stdin closes the mapping: {event:'closed'}, then exit 0. Logs: stderr.
import { createSocket, type Socket } from 'node:dgram';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { createLogger } from '../../src/logger.js';
import { startListenerPortMapping } from '../../src/reach/listener-port-mapping.js';
import { startPortMapping, type PortMappingProtocol } from '../../src/reach/port-mapping.js';

const [protocolsText = 'pcp,nat-pmp,upnp', lifetimeText = '3600', portText = '0'] = process.argv.slice(2);
const out = (event: object): boolean => process.stdout.write(JSON.stringify(event) + '\n');
const log = createLogger('port-map-agent', 2);

async function udpSocket(port: number, name: string): Promise<Socket> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(port, resolve));
  socket.on('message', (msg, from) =>
    out({ event: 'datagram', socket: name, from: `${from.address}:${from.port}`, text: msg.toString() }),
  );
  return socket;
}

const udp = await udpSocket(Number(portText), 'listen');
const port = udp.address().port;
const tcp = createServer((s) => s.end('clawpeer tcp\n'));
await new Promise<void>((resolve) => tcp.listen(port, resolve));

let close: () => Promise<void>;
if (protocolsText === 'listener') {
  const mux = await udpSocket(0, 'mux');
  const mapping = startListenerPortMapping({
    bound: [
      { transport: 'quic', host: '0.0.0.0', port },
      { transport: 'tcp', host: '0.0.0.0', port },
    ],
    log,
    onChange: () => out({ event: 'changed', addresses: mapping?.mapped() }),
  });
  if (mapping === undefined) throw new Error('no mapping for a listener on all addresses');
  await mapping.settled(10_000);
  mapping.mapMux(mux.address().port);
  // The mux mapping is made after the listener's: wait for it to show.
  for (let i = 0; i < 100 && mapping.mapped().length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 100));
  out({ event: 'mapped', port, mux: mux.address().port, addresses: mapping.mapped() });
  close = async () => {
    await mapping.close();
    mux.close();
  };
} else {
  const mapping = startPortMapping({
    udpPort: port,
    tcpPort: port,
    log,
    protocols: protocolsText.split(',') as PortMappingProtocol[],
    lifetimeS: Number(lifetimeText),
    onChange: (addresses) => out({ event: 'changed', addresses }),
  });
  await mapping.ready;
  out({
    event: 'mapped',
    port,
    via: mapping.status().via ?? null,
    addresses: mapping.mapped(),
    status: mapping.status(),
  });
  close = () => mapping.close();
}

createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() !== 'close') return;
  void close().then(() => {
    out({ event: 'closed' });
    udp.close();
    tcp.close();
    process.exit(0);
  });
});
