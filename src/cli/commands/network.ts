// `listen` and `ping`: the commands that talk to the network.
import type { Argv } from 'yargs';
import { ClawpeerError } from '../../errors.js';
import {
  CONFIG_LIMITS,
  DEFAULT_CONFIG,
  DEFAULT_LISTEN_PORT,
  formatHostPort,
  keepAliveFor,
  resolveConfig,
  type NodeConfig,
} from '../../home/facade.js';
import type { Runner } from '../context.js';
import {
  BWLIMIT_OPTION,
  bwlimitOption,
  COMPRESS_OPTION,
  compressionFrom,
  intOption,
  TRANSPORT_OPTION,
} from '../args.js';

function configFrom(args: Record<string, unknown>): NodeConfig {
  const timeout = args['connect-timeout'];
  return resolveConfig({
    transport: args['transport'],
    ...(timeout !== undefined ? { connectTimeoutMs: timeout } : {}),
  });
}

/**
 * A duration flag given in seconds (decimals allowed), as whole ms within [minMs, maxMs];
 * undefined when the flag is absent. A USAGE error naming the flag otherwise.
 */
function secondsFlag(args: Record<string, unknown>, flag: string, minMs: number, maxMs: number): number | undefined {
  const raw = args[flag];
  if (raw === undefined) return undefined;
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : Number.NaN;
  const ms = Math.round(n * 1000);
  if (!Number.isFinite(n) || ms < minMs || ms > maxMs) {
    throw new ClawpeerError(
      'USAGE',
      `--${flag} must be a number of seconds in ${minMs / 1000}..${maxMs / 1000}, got ${JSON.stringify(raw)}`,
    );
  }
  return ms;
}

/** A count flag within [min, max]; undefined when absent. A USAGE error naming the flag otherwise. */
function countFlag(
  args: Record<string, unknown>,
  flag: string,
  [min, max]: readonly [number, number],
): number | undefined {
  const raw = args[flag];
  return raw === undefined
    ? undefined
    : intOption(typeof raw === 'string' && raw.trim() === '' ? Number.NaN : raw, `--${flag}`, min, max);
}

/** The listener's settings: defaults, overridden by its flags (each checked and named on error). */
export function listenConfigFrom(args: Record<string, unknown>): NodeConfig {
  const idleTimeoutMs = secondsFlag(args, 'idle-timeout', ...CONFIG_LIMITS.idleTimeoutMs);
  const handshakeTimeoutMs = secondsFlag(args, 'handshake-timeout', ...CONFIG_LIMITS.handshakeTimeoutMs);
  const sessionIdleTimeoutMs = secondsFlag(args, 'session-idle-timeout', ...CONFIG_LIMITS.sessionIdleTimeoutMs);
  const maxConnections = countFlag(args, 'max-connections', CONFIG_LIMITS.maxConnections);
  const maxConnectionsPerPeer = countFlag(args, 'max-connections-per-peer', CONFIG_LIMITS.maxConnectionsPerPeer);
  return resolveConfig({
    transport: args['transport'],
    compression: compressionFrom(args),
    // A shorter idle timeout brings the keep-alive down with it (it must stay below).
    ...(idleTimeoutMs === undefined ? {} : { idleTimeoutMs, keepAliveMs: keepAliveFor(idleTimeoutMs) }),
    ...(handshakeTimeoutMs === undefined ? {} : { handshakeTimeoutMs }),
    ...(sessionIdleTimeoutMs === undefined ? {} : { sessionIdleTimeoutMs }),
    ...(maxConnections === undefined ? {} : { maxConnections }),
    ...(maxConnectionsPerPeer === undefined ? {} : { maxConnectionsPerPeer }),
  });
}

export function registerNetworkCommands(cli: Argv, run: Runner): Argv {
  return cli
    .command(
      'listen',
      'serve shares to paired peers until SIGINT/SIGTERM',
      (y) =>
        y
          .option('host', { type: 'string', default: '0.0.0.0', describe: 'address to listen on' })
          .option('port', {
            type: 'number',
            default: DEFAULT_LISTEN_PORT,
            describe: 'port (UDP for QUIC, TCP for the fallback); 0 picks a free one',
          })
          .option('share', {
            type: 'string',
            array: true,
            default: [] as string[],
            describe:
              'NAME=DIR[:ro|:nodelete], repeatable (default: a read-write "inbox" under the home); :nodelete refuses push --delete',
          })
          .option('allow', {
            type: 'string',
            array: true,
            default: [] as string[],
            describe:
              'SHARE=PEER[,PEER...]: only these paired peers may use SHARE (repeatable; default: every paired peer)',
          })
          .option('transport', TRANSPORT_OPTION)
          .option('compress', {
            ...COMPRESS_OPTION,
            describe:
              'accept zstd-compressed chunks and compress what is pulled, when the peer agrees (--no-compress: never)',
          })
          .option('init', { type: 'boolean', default: false, describe: 'create an identity first if there is none' })
          .option('bwlimit', {
            ...BWLIMIT_OPTION,
            describe:
              'cap the rate this listener sends at, all peers, pulls and syncs together, e.g. 500 (KiB/s, as rsync), 2MiB, 10MB/s or 100mbit',
          })
          // Strings, checked by listenConfigFrom: an error can then quote what was typed.
          .option('idle-timeout', {
            type: 'string',
            requiresArg: true,
            describe: `seconds without any packet before a connection is dropped (default ${DEFAULT_CONFIG.idleTimeoutMs / 1000})`,
          })
          .option('handshake-timeout', {
            type: 'string',
            requiresArg: true,
            describe: `seconds a new connection gets to open its control stream and finish the handshake (default ${DEFAULT_CONFIG.handshakeTimeoutMs / 1000})`,
          })
          .option('session-idle-timeout', {
            type: 'string',
            requiresArg: true,
            describe: `seconds a session may sit with no request and no transfer before it is closed (default ${DEFAULT_CONFIG.sessionIdleTimeoutMs / 1000})`,
          })
          .option('max-connections', {
            type: 'string',
            requiresArg: true,
            describe: `connections served at once, all peers together (default ${DEFAULT_CONFIG.maxConnections})`,
          })
          .option('max-connections-per-peer', {
            type: 'string',
            requiresArg: true,
            describe: `connections served at once for one peer (default ${DEFAULT_CONFIG.maxConnectionsPerPeer})`,
          }),
      run(async (ctx, args) => {
        const config = listenConfigFrom(args);
        const port = intOption(args['port'], '--port', 0, 65535);
        const bwlimit = bwlimitOption(args['bwlimit']);
        const { startHomeListener } = await import('../../listener/home-listener.js');
        const server = await startHomeListener({
          home: ctx.home,
          reach: () => ctx.reach(),
          config,
          host: String(args['host']),
          port,
          shares: args['share'] as string[],
          allow: args['allow'] as string[],
          init: args['init'] === true,
          bwlimit,
          log: ctx.log,
          signal: ctx.signal,
        });
        const { identity, shares, reach } = server;
        const first = server.bound[0];
        if (first === undefined) throw new TypeError('server bound no transport');
        const transports = server.bound.map((b) => b.transport);
        const shareRecords = shares.map((s) => ({
          name: s.name,
          dir: s.dir,
          readOnly: s.readOnly,
          ...(s.noDelete === true ? { noDelete: true } : {}),
          ...(s.allow !== undefined ? { allow: s.allow } : {}),
        }));
        ctx.out.emit(
          {
            event: 'listening',
            host: first.host,
            port: first.port,
            id: identity.nodeId,
            transports,
            shares: shareRecords,
          },
          `listening on ${formatHostPort(first)} as ${identity.nodeId}`,
        );
        if (!ctx.out.json) {
          // A listener on every address cannot say which one the other machine reaches; one on a
          // concrete address (127.0.0.1 included) can.
          const here =
            first.host === '0.0.0.0' || first.host === '::' ? `<THIS_HOST>:${first.port}` : formatHostPort(first);
          process.stderr.write(
            `transports: ${server.bound.map((b) => b.transport).join(', ')}; shares: ${shares.map((s) => `${s.name}=${s.dir}${s.readOnly ? ' (read-only)' : s.noDelete === true ? ' (no push --delete)' : ''}`).join(', ')}\n` +
              `to pair, on the other machine run: clawpeer pair add ${identity.nodeId} --name <NAME>${reach.lanDiscovery ? ' (on this LAN; elsewhere add' : ''} --addr ${here}${reach.lanDiscovery ? ')' : ''}\n` +
              `and here: clawpeer pair add <ITS_ID> --name <NAME>\n` +
              `or, with a short code: clawpeer pair invite (here), then clawpeer pair join <CODE> ${reach.lanDiscovery || reach.rendezvous !== undefined ? `(there; add --addr ${here} if its number is not found)` : `--addr ${here} (there)`}\n`,
          );
        }
        await new Promise<void>((resolve) => {
          if (ctx.signal.aborted) resolve();
          else ctx.signal.addEventListener('abort', () => resolve(), { once: true });
        });
        ctx.log.info('shutting down');
        await server.close();
        if (ctx.out.json) ctx.out.emit({ event: 'stopped' }, '');
      }),
    )
    .command(
      'ping <peer>',
      'handshake with a paired peer and measure round trips',
      (y) =>
        y
          .positional('peer', { type: 'string', describe: 'pair name or node id' })
          .option('count', { alias: 'c', type: 'number', default: 4, describe: 'probes to send' })
          .option('interval', { type: 'number', default: 1000, describe: 'milliseconds between probes' })
          .option('addr', { type: 'string', describe: "HOST:PORT (default: the pair entry's address)" })
          .option('transport', TRANSPORT_OPTION)
          .option('connect-timeout', {
            type: 'number',
            describe: 'milliseconds to wait for each transport to connect (default 5000)',
          }),
      run(async (ctx, args) => {
        const config = configFrom(args);
        const count = intOption(args['count'], '--count', 1, 1_000_000);
        const intervalMs = intOption(args['interval'], '--interval', 0, 3_600_000);
        const { connectToPeer, pingModules } = await import('../../session/connect-peer.js');
        const { pingPeer, describeCapabilities } = await pingModules();
        const { peer, session } = await connectToPeer({
          home: ctx.home,
          reach: () => ctx.reach(),
          peerName: String(args['peer']),
          addr: args['addr'] as string | undefined,
          config,
          log: ctx.log,
          signal: ctx.signal,
          label: 'ping',
        });
        try {
          const caps = describeCapabilities(session.caps);
          const path = session.path();
          if (!ctx.out.json) {
            ctx.out.emit(
              {},
              `connected to ${peer.name} (${peer.id}) at ${formatHostPort(session.connection.remoteAddress)} via ${session.transport}, protocol v${session.version}, path ${path}\ncapabilities: ${caps.join(' ')}`,
            );
          }
          const rtts: number[] = [];
          for await (const p of pingPeer(session, {
            count,
            intervalMs,
            timeoutMs: config.idleTimeoutMs,
            signal: ctx.signal,
          })) {
            rtts.push(p.rttMs);
            ctx.out.emit(
              {
                event: 'pong',
                peer: peer.id,
                seq: p.seq,
                rttMs: round3(p.rttMs),
                transportRttMs: round3(p.transportRttMs),
                version: session.version,
                caps,
                transport: session.transport,
                path: session.path(),
              },
              `pong from ${peer.name}: seq=${p.seq} rtt=${p.rttMs.toFixed(3)} ms (transport ${p.transportRttMs.toFixed(3)} ms) path ${session.path()}`,
            );
          }
          if (rtts.length > 0) {
            const min = Math.min(...rtts),
              max = Math.max(...rtts),
              avg = rtts.reduce((a, b) => a + b, 0) / rtts.length;
            ctx.out.emit(
              {
                event: 'summary',
                peer: peer.id,
                sent: count,
                received: rtts.length,
                minMs: round3(min),
                avgMs: round3(avg),
                maxMs: round3(max),
                path: session.path(),
                rttMs: round3(avg),
              },
              `${rtts.length}/${count} answered, rtt min/avg/max = ${min.toFixed(3)}/${avg.toFixed(3)}/${max.toFixed(3)} ms, path ${session.path()}`,
            );
          }
        } finally {
          await session.close();
        }
      }),
    );
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
