// `relay`: the impairment relay as a user tool. Forwards UDP (QUIC) or, with --tcp, TCP (the
// TLS fallback) from --listen to --to through a simulated WAN link (relay/impair-spec.ts) until
// SIGINT/SIGTERM, then prints what it forwarded and dropped. For manual tests between any two
// nodes: point the dialling node's --addr at the relay instead of the listener.
// Loopback by default, like the relay itself; an address the user types that is not loopback is
// their explicit choice and allows remote addresses (the relay refuses them otherwise).
import type { Argv } from 'yargs';
import { ClawpeerError } from '../../errors.js';
import { formatHostPort, parseHostPort, type HostPort } from '../../home/facade.js';
import { formatImpairSpec, parseImpairSpec, type ImpairSpec } from '../../relay/impair-spec.js';
import type { ImpairmentCounters, PipeCounters } from '../../relay/impairment.js';
import { TCP_RELAY_LIMITATION, startTcpRelay } from '../../relay/tcp-relay.js';
import { isLoopbackHost, startUdpRelay } from '../../relay/udp-relay.js';
import type { Runner } from '../context.js';

/** Seeds are 32-bit: the relay's PRNG state is seeded from one 32-bit word. */
const MAX_SEED = 0xffff_ffff;

/** --listen accepts port 0 (a free port, printed in the ready line); parseHostPort does not. */
function parseListen(text: string): HostPort {
  const zeroPort = /^(.*):0$/.exec(text);
  if (zeroPort?.[1] !== undefined) return { host: parseHostPort(`${zeroPort[1]}:1`, '--listen address').host, port: 0 };
  return parseHostPort(text, '--listen address');
}

function parseSpec(text: string, tcp: boolean): ImpairSpec {
  let spec: ImpairSpec;
  try {
    spec = parseImpairSpec(text);
  } catch (err) {
    if (err instanceof ClawpeerError) throw new ClawpeerError('USAGE', `--impair: ${err.message}`, { cause: err });
    throw err;
  }
  if (tcp && (spec.lossPct > 0 || spec.reorderPct > 0 || spec.duplicatePct > 0)) {
    throw new ClawpeerError(
      'USAGE',
      `--impair ${JSON.stringify(text)} with --tcp: loss, reorder and dup need the UDP relay (TCP is terminated at the relay, so it cannot lose packets); drop --tcp, or keep to rtt, jitter and rate`,
    );
  }
  return spec;
}

function parseSeed(value: unknown): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > MAX_SEED)
    throw new ClawpeerError('USAGE', `--seed must be an integer in 0..${MAX_SEED}, got ${JSON.stringify(value)}`);
  return n;
}

function describePipe(p: Readonly<PipeCounters>): string {
  return `${p.received} received, ${p.forwarded} forwarded, ${p.droppedLoss} lost, ${p.droppedQueue} queue drops, ${p.droppedOverflow} overflow drops, ${p.duplicated} duplicated, ${p.reordered} reordered`;
}

function describeCounters(c: ImpairmentCounters): string {
  return `to target: ${describePipe(c.toServer)}\nto clients: ${describePipe(c.toClient)}`;
}

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

export function registerRelayCommands(cli: Argv, run: Runner): Argv {
  return cli.command(
    'relay',
    'forward UDP (or TCP) through a simulated WAN link (delay, jitter, loss, rate) until SIGINT/SIGTERM',
    (y) =>
      y
        .option('listen', {
          type: 'string',
          demandOption: true,
          describe: 'HOST:PORT to receive on; port 0 picks a free one (printed)',
        })
        .option('to', {
          type: 'string',
          demandOption: true,
          describe: 'HOST:PORT to forward to, e.g. a `clawpeer listen`',
        })
        .option('impair', {
          type: 'string',
          demandOption: true,
          describe: 'link to simulate, e.g. rtt=50ms,jitter=5ms,loss=1%,rate=100mbit ("none": plain relay)',
        })
        .option('tcp', {
          type: 'boolean',
          default: false,
          describe: 'relay TCP (the TLS fallback) instead of UDP: rtt, jitter and rate only',
        })
        .option('seed', {
          type: 'number',
          default: 1,
          describe: 'PRNG seed: the same seed gives the same drops and jitter',
        })
        .example(
          '$0 relay --listen 127.0.0.1:7800 --to 127.0.0.1:7700 --impair rtt=50ms,loss=0.1%,rate=100mbit',
          'then dial 127.0.0.1:7800 instead of :7700',
        ),
    run(async (ctx, args) => {
      const listen = parseListen(String(args['listen']));
      const target = parseHostPort(String(args['to']), '--to address');
      const tcp = args['tcp'] === true;
      const spec = parseSpec(String(args['impair']), tcp);
      const seed = parseSeed(args['seed']);
      // A non-loopback address can only be here because the user typed it: that is the opt-in.
      const allowRemote = !isLoopbackHost(listen.host) || !isLoopbackHost(target.host);
      const common = { listen, target, spec, seed, allowRemote, logger: ctx.log };
      const relay = tcp ? await startTcpRelay(common) : await startUdpRelay(common);
      const protocol = tcp ? 'tcp' : 'udp';
      const canonical = formatImpairSpec(spec);
      ctx.out.emit(
        {
          event: 'relaying',
          protocol,
          host: relay.address.host,
          port: relay.address.port,
          to: formatHostPort(target),
          spec: canonical,
          seed,
          ...(tcp ? { limitation: TCP_RELAY_LIMITATION } : {}),
        },
        `relaying ${formatHostPort(relay.address)} -> ${formatHostPort(target)} with ${canonical}`,
      );
      if (!ctx.out.json) {
        process.stderr.write(
          `${protocol.toUpperCase()}; send to ${formatHostPort(relay.address)} instead of ${formatHostPort(target)}. Ctrl-C stops and prints statistics.\n`,
        );
      }
      try {
        await aborted(ctx.signal);
      } finally {
        await relay.close();
      }
      const stats = relay.stats();
      const extra =
        'flowsOpened' in stats
          ? `flows: ${stats.flowsOpened} opened, ${stats.flowsRejected} rejected`
          : `connections: ${stats.connectionsAccepted} accepted, ${stats.connectionsRejected} rejected, ${stats.connectFailures} failed to reach the target`;
      ctx.out.emit(
        { event: 'stopped', protocol, stats },
        `stopped relaying ${formatHostPort(relay.address)} -> ${formatHostPort(target)} (${canonical})\n${describeCounters(stats.counters)}\n${extra}`,
      );
    }),
  );
}
