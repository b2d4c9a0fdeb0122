// `rendezvous`: a rendezvous server anyone can run on a host with a public address. Nodes that
// name it (config `rendezvous`, or --rendezvous) register their signed announcements there, find
// each other by node id, punch holes through their NATs with its help, and fall back to its
// relay, which splices QUIC datagrams it cannot read (TLS runs end to end between the nodes).
// UDP on --listen's port P, and P+1 for the second reflection (telling NAT kinds apart).
// Runs until SIGINT/SIGTERM; logs counts every minute with -v, never a payload byte.
import type { Argv } from 'yargs';
import { ClawpeerError } from '../../errors.js';
import { formatHostPort, parseHostPort, type HostPort } from '../../home/facade.js';
import { DEFAULT_RENDEZVOUS_LIMITS } from '../../reach/rendezvous-state.js';
import { bwlimitOption, intOption } from '../args.js';
import type { Runner } from '../context.js';

function parseListen(text: string): HostPort {
  const zeroPort = /^(.*):0$/.exec(text);
  if (zeroPort?.[1] !== undefined) return { host: parseHostPort(`${zeroPort[1]}:1`, '--listen address').host, port: 0 };
  const hp = parseHostPort(text, '--listen address');
  if (hp.port === 65535)
    throw new ClawpeerError('USAGE', '--listen port must be below 65535: the port after it answers reflections');
  return hp;
}

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

export function registerRendezvousCommands(cli: Argv, run: Runner): Argv {
  return cli.command(
    'rendezvous',
    'run a rendezvous server: announcements, lookups, hole punching and an end-to-end encrypted relay for nodes behind NAT',
    (y) =>
      y
        .option('listen', {
          type: 'string',
          demandOption: true,
          describe: 'HOST:PORT (UDP) to serve on; PORT+1 answers reflections too; port 0 picks a free pair',
        })
        .option('relay-rate', {
          type: 'string',
          default: '4MiB',
          describe: 'relay bytes per second each node may send (as --bwlimit: 500 = KiB/s, 2MiB, 100mbit)',
        })
        .option('relay-peers', {
          type: 'number',
          default: DEFAULT_RENDEZVOUS_LIMITS.relaySessionsPerNode,
          describe: 'relay sessions each node may hold at once',
        })
        .option('requests-per-ip', {
          type: 'number',
          default: DEFAULT_RENDEZVOUS_LIMITS.requestsPerIpPerSecond,
          describe: 'requests per second from one IP address (relayed data not counted)',
        })
        .example(
          '$0 rendezvous --listen 0.0.0.0:7800',
          'serve on UDP 7800 and 7801; nodes use --rendezvous rv.example.org:7800',
        ),
    run(async (ctx, args) => {
      const listen = parseListen(String(args['listen']));
      const relayBytesPerSecond =
        bwlimitOption(args['relay-rate'], '--relay-rate') ?? DEFAULT_RENDEZVOUS_LIMITS.relayBytesPerSecond;
      const relaySessionsPerNode = intOption(args['relay-peers'], '--relay-peers', 0, 10_000);
      const requestsPerIpPerSecond = intOption(args['requests-per-ip'], '--requests-per-ip', 1, 100_000);
      const { startRendezvousServer } = await import('../../reach/rendezvous-server.js');
      const server = await startRendezvousServer({
        listen,
        limits: { relayBytesPerSecond, relaySessionsPerNode, requestsPerIpPerSecond },
        log: ctx.log.child('rendezvous'),
      });
      ctx.out.emit(
        {
          event: 'rendezvous',
          host: server.address.host,
          port: server.address.port,
          reflectPort: server.reflectAddress.port,
          relayBytesPerSecond,
          relaySessionsPerNode,
          requestsPerIpPerSecond,
        },
        `rendezvous on udp ${formatHostPort(server.address)} (reflection on ${server.reflectAddress.port}); relay: ${relaySessionsPerNode} sessions and ${relayBytesPerSecond} B/s per node`,
      );
      try {
        await aborted(ctx.signal);
      } finally {
        await server.close();
      }
      const c = server.counters();
      ctx.out.emit(
        { event: 'stopped', counters: c },
        `stopped: ${c.nodes} nodes registered, ${c.relayedBytes} bytes relayed, ${c.relayDropped} relay datagrams over the rate, ${c.refused} requests refused`,
      );
    }),
  );
}
