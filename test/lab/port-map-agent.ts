// Runs startPortMapping inside a lab home (node port-map-agent.js PROTOCOLS LIFETIME_S [PORT]):
// binds a UDP socket and a TCP server on one port (default: any free one), maps them, and reports as JSON lines:
// {event:'mapped', via, addresses, status}, then {event:'datagram', from, text} for each
// datagram the UDP socket gets, {event:'changed', addresses} on a change. A line "close" on
// stdin closes the mapping: {event:'closed'}, then exit 0. Debug logs go to stderr.
import { createSocket } from 'node:dgram';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { createLogger } from '../../src/logger.js';
import { startPortMapping, type PortMappingProtocol } from '../../src/reach/port-mapping.js';

const [protocolsText = 'pcp,nat-pmp,upnp', lifetimeText = '3600', portText = '0'] = process.argv.slice(2);
const out = (event: object): boolean => process.stdout.write(JSON.stringify(event) + '\n');

const udp = createSocket('udp4');
await new Promise<void>((resolve) => udp.bind(Number(portText), resolve));
const port = udp.address().port;
const tcp = createServer((s) => s.end('clawpeer tcp\n'));
await new Promise<void>((resolve) => tcp.listen(port, resolve));
udp.on('message', (msg, from) => out({ event: 'datagram', from: `${from.address}:${from.port}`, text: msg.toString() }));

const mapping = startPortMapping({
  udpPort: port,
  tcpPort: port,
  log: createLogger('port-map-agent', 2),
  protocols: protocolsText.split(',') as PortMappingProtocol[],
  lifetimeS: Number(lifetimeText),
  onChange: (addresses) => out({ event: 'changed', addresses }),
});
await mapping.ready;
out({ event: 'mapped', port, via: mapping.status().via ?? null, addresses: mapping.mapped(), status: mapping.status() });

createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() !== 'close') return;
  void mapping.close().then(() => {
    out({ event: 'closed' });
    udp.close();
    tcp.close();
    process.exit(0);
  });
});
