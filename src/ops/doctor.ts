// Health checks behind `clawpeer doctor`. Each check looks at one thing a listener or a dial
// depends on (kernel UDP buffer limits, the port, the identity key, the native QUIC, BLAKE3 and zstd
// bindings, the clock, the paired peers) and returns ok / warn / fail with the fix in words a
// user can paste into a shell.
// Goals: every input is injectable (the /proc root, the clock, the sync probe, the listener
// probe), so each check is testable without root or a particular host.
// Non-goals: changing anything (doctor only reads files, binds sockets for a moment and dials
// paired peers), printing (the CLI does that), deciding the exit code (the CLI does that from
// the statuses).
import { createSocket } from 'node:dgram';
import { stat } from 'node:fs/promises';
import { createServer, isIPv6 } from 'node:net';
import { dirname } from 'node:path';
import { generateIdentity, type Identity } from '../crypto/identity.js';
import { nodeIdFromPublicKey, publicKeyFromNodeId } from '../crypto/node-id.js';
import { isClawpeerError, type LocalErrorCode } from '../errors.js';
import type { Logger } from '../logger.js';
import type { HostPort, TransportName } from '../transport/types.js';
import { forEachBounded } from '../support/for-each-bounded.js';
import {
  MIN_UDP_BUFFER_BYTES,
  netCoreFile,
  readNetCoreBytes,
  RECOMMENDED_UDP_BUFFER_BYTES,
  type NetCoreBufferKey,
} from '../transport/udp-buffers.js';
import { formatHostPort, parseHostPort } from '../home/address.js';
import { DEFAULT_LISTEN_PORT, resolveConfig } from '../home/config.js';
import type { HomeLayout } from '../home/home.js';
import { loadIdentity } from '../home/identity-store.js';
import { PeerStore, type PeerEntry } from '../home/peer-store.js';
import type { CheckResult } from './check-result.js';
import { buildTimeMs, checkClock, probeClockSync, type ClockSync } from './clock-check.js';

export type { CheckResult, CheckStatus } from './check-result.js';
export {
  buildTimeMs,
  checkClock,
  CLOCK_BEFORE_BUILD_TOLERANCE_MS,
  EARLIEST_BUILD_MS,
  parseChronycTracking,
  probeClockSync,
  type ClockSync,
} from './clock-check.js';

export interface DoctorSummary {
  readonly ok: number;
  readonly warn: number;
  readonly fail: number;
}

// --- UDP buffer limits -------------------------------------------------------------------------

const UDP_BUFFER_FIX =
  `sudo sysctl -w net.core.rmem_max=${RECOMMENDED_UDP_BUFFER_BYTES} net.core.wmem_max=${RECOMMENDED_UDP_BUFFER_BYTES}` +
  ` (keep it across reboots: printf 'net.core.rmem_max=${RECOMMENDED_UDP_BUFFER_BYTES}\\nnet.core.wmem_max=${RECOMMENDED_UDP_BUFFER_BYTES}\\n' | sudo tee /etc/sysctl.d/60-clawpeer.conf;` +
  ' in a container, set it on the host)';

function formatBytes(bytes: number): string {
  if (bytes >= 1 << 20) return `${(bytes / (1 << 20)).toFixed(1)} MiB`;
  if (bytes >= 1 << 10) return `${(bytes / (1 << 10)).toFixed(0)} KiB`;
  return `${bytes} B`;
}

function describeBuffers(found: readonly { key: NetCoreBufferKey; bytes: number }[]): string {
  return found.map((f) => `net.core.${f.key} ${f.bytes} (${formatBytes(f.bytes)})`).join(', ');
}

export async function checkUdpBuffers(
  options: { procDir?: string; platform?: NodeJS.Platform } = {},
): Promise<CheckResult> {
  const name = 'udp-buffers';
  const platform = options.platform ?? process.platform;
  if (platform !== 'linux')
    return { name, status: 'ok', detail: `not checked on ${platform}: net.core.rmem_max/wmem_max are Linux settings` };
  const procDir = options.procDir ?? '/proc';
  const found: { key: NetCoreBufferKey; bytes: number }[] = [];
  for (const key of ['rmem_max', 'wmem_max'] as const) {
    try {
      found.push({ key, bytes: readNetCoreBytes(key, procDir) });
    } catch (err) {
      return {
        name,
        status: 'warn',
        detail: `cannot read ${netCoreFile(key, procDir)} (${(err as Error).message}): QUIC throughput may be capped by small UDP buffers`,
        fix: `check on the host: sysctl net.core.rmem_max net.core.wmem_max; if below ${MIN_UDP_BUFFER_BYTES}: ${UDP_BUFFER_FIX}`,
      };
    }
  }
  const text = describeBuffers(found);
  const small = found.filter((f) => f.bytes < MIN_UDP_BUFFER_BYTES);
  if (small.length > 0) {
    return {
      name,
      status: 'warn',
      detail: `${text}: below ${formatBytes(MIN_UDP_BUFFER_BYTES)}, the kernel clamps QUIC's socket buffers, so bursts on fast or long links are dropped and throughput falls`,
      fix: UDP_BUFFER_FIX,
    };
  }
  // The defaults are not judged: a listener's socket, which the QUIC binding leaves at
  // net.core.rmem_default, gets its size set by clawpeer (transport/udp-socket-buffers.ts).
  return { name, status: 'ok', detail: `${text}: enough for QUIC's socket buffers` };
}

// --- port -------------------------------------------------------------------------------------

export type PortProtocol = 'udp' | 'tcp';

/** Hosts the listener binds by default (0.0.0.0) and the one local tools dial (127.0.0.1). */
export const DEFAULT_PORT_CHECK_HOSTS: readonly string[] = Object.freeze(['0.0.0.0', '127.0.0.1']);
/** How long the probe of a busy port waits for a clawpeer listener to answer. */
export const LISTENER_PROBE_TIMEOUT_MS = 1_500;

/** Binds host:port for a moment; resolves with the errno code (EADDRINUSE, EACCES, ...) or null when free. */
export function tryBind(protocol: PortProtocol, host: string, port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const fail = (err: NodeJS.ErrnoException): void => resolve(err.code ?? err.message);
    if (protocol === 'udp') {
      const socket = createSocket(isIPv6(host) ? 'udp6' : 'udp4');
      socket.once('error', (err) => {
        socket.close();
        fail(err);
      });
      socket.bind({ address: host, port, exclusive: true }, () => socket.close(() => resolve(null)));
    } else {
      const server = createServer();
      server.once('error', fail);
      server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(null)));
    }
  });
}

/**
 * Asks whatever holds a busy port whether it is a clawpeer listener: a transport handshake
 * proves its key. Resolves with its node id, or undefined when it is something else. Opens no
 * stream, so the listener sees a connection close before any application byte.
 */
export type ListenerProbe = (protocol: PortProtocol, host: string, port: number) => Promise<string | undefined>;

export function makeListenerProbe(identity: Identity | undefined, log: Logger): ListenerProbe {
  return async (protocol, host, port) => {
    try {
      const { backendByName } = await import('../transport/backends.js');
      const transport: TransportName = protocol === 'udp' ? 'quic' : 'tcp';
      const backend = await backendByName(transport);
      if (!backend.available()) return undefined;
      const conn = await backend.connect({
        host,
        port,
        // Any key works for the question "who is there"; an ephemeral one when ours is unusable.
        identity: identity ?? generateIdentity(),
        idleTimeoutMs: LISTENER_PROBE_TIMEOUT_MS,
        keepAliveMs: Math.floor(LISTENER_PROBE_TIMEOUT_MS / 3),
        signal: AbortSignal.timeout(LISTENER_PROBE_TIMEOUT_MS),
      });
      const id = nodeIdFromPublicKey(conn.remotePublicKey);
      await conn.close('doctor probe').catch(() => undefined);
      return id;
    } catch (err) {
      log.debug('listener probe failed', { protocol, host, port, error: (err as Error).message });
      return undefined;
    }
  };
}

const TRANSPORT_ROLE: Record<PortProtocol, string> = { udp: 'QUIC', tcp: 'the TLS-over-TCP fallback' };

function findHolderCommand(protocol: PortProtocol, port: number): string {
  return protocol === 'udp' ? `sudo ss -lunp 'sport = :${port}'` : `sudo ss -ltnp 'sport = :${port}'`;
}

export interface PortCheckOptions {
  readonly port: number;
  readonly hosts?: readonly string[];
  /** This node's id, to recognise its own running listener on the port. */
  readonly ownId?: string;
  /** Identify a busy port's holder (default: none, a busy port is just busy). */
  readonly probe?: ListenerProbe;
  /** Health-check mode: the port must be held by this node's own listener. */
  readonly expectListener?: boolean;
}

export async function checkPort(protocol: PortProtocol, options: PortCheckOptions): Promise<CheckResult> {
  const name = `port-${protocol}`;
  const { port } = options;
  const label = `${protocol.toUpperCase()} port ${port}`;
  if (port === 0)
    return { name, status: 'ok', detail: `port 0: the listener picks a free ${protocol.toUpperCase()} port at start` };
  const hosts = options.hosts ?? DEFAULT_PORT_CHECK_HOSTS;
  const busy: { host: string; code: string }[] = [];
  for (const host of hosts) {
    const code = await tryBind(protocol, host, port);
    if (code !== null) busy.push({ host, code });
  }
  const where = hosts.join(' and ');
  if (busy.length === 0) {
    if (options.expectListener === true) {
      return {
        name,
        status: 'fail',
        detail: `${label} is free on ${where}: no listener is running`,
        fix: `start it: clawpeer listen --port ${port}`,
      };
    }
    return { name, status: 'ok', detail: `${label} is free on ${where} (${TRANSPORT_ROLE[protocol]})` };
  }
  const first = busy[0]!;
  if (first.code === 'EACCES') {
    return {
      name,
      status: 'fail',
      detail: `binding ${label} on ${first.host} is not permitted (EACCES)`,
      fix: `use a port >= 1024 (--port ${DEFAULT_LISTEN_PORT}), or grant the service CAP_NET_BIND_SERVICE`,
    };
  }
  if (first.code === 'EADDRNOTAVAIL') {
    return {
      name,
      status: 'fail',
      detail: `${first.host} is not an address of this machine (EADDRNOTAVAIL)`,
      fix: 'listen on 0.0.0.0 or on an address this machine has (ip addr)',
    };
  }
  if (first.code !== 'EADDRINUSE') {
    return {
      name,
      status: 'fail',
      detail: `cannot bind ${label} on ${first.host}: ${first.code}`,
      fix: `check the address and port, then run clawpeer doctor -v for details`,
    };
  }
  const probeHost = first.host === '0.0.0.0' ? '127.0.0.1' : first.host === '::' ? '::1' : first.host;
  const holder = options.probe === undefined ? undefined : await options.probe(protocol, probeHost, port);
  if (holder !== undefined && holder === options.ownId) {
    return { name, status: 'ok', detail: `${label} is held by this node's own listener (${holder})` };
  }
  const inUse = busy.map((b) => b.host).join(' and ');
  if (holder !== undefined) {
    return {
      name,
      status: 'fail',
      detail: `${label} is in use on ${inUse} by another clawpeer node, ${holder} (a listener with a different --home?)`,
      fix: `stop that listener, or choose another port: clawpeer listen --port <PORT> (peers pair with --addr HOST:<PORT>)`,
    };
  }
  return {
    name,
    status: 'fail',
    detail: `${label} is in use on ${inUse} by another program`,
    fix: `find it with ${findHolderCommand(protocol, port)} and stop it, or choose another port: clawpeer listen --port <PORT>`,
  };
}

// --- identity ---------------------------------------------------------------------------------

export async function checkIdentity(file: string): Promise<{ result: CheckResult; identity: Identity | undefined }> {
  const name = 'identity';
  try {
    const identity = await loadIdentity(file);
    const mode =
      process.platform === 'win32' ? '' : `, mode ${((await stat(file)).mode & 0o777).toString(8).padStart(4, '0')}`;
    return { result: { name, status: 'ok', detail: `${file}${mode}, node id ${identity.nodeId}` }, identity };
  } catch (err) {
    if (!isClawpeerError(err)) throw err;
    const fixes: Partial<Record<LocalErrorCode, string>> = {
      IDENTITY_MISSING: 'create one: clawpeer init (then pair again with your peers)',
      IDENTITY_INSECURE: `chmod 600 ${file}; and if others may have read it, make a new one (clawpeer init --force) and re-pair`,
      IDENTITY_CORRUPT: `restore ${file} from a backup, or make a new one with clawpeer init --force and re-pair (peers pinned the old key)`,
      HOME_INSECURE: `chmod 700 ${dirname(file)} (or use a home of your own); if others could write it, check peers.json and invites/ for keys you did not pin, and make a new identity (clawpeer init --force) and re-pair`,
    };
    return {
      result: { name, status: 'fail', detail: err.message, fix: fixes[err.code] ?? `check ${file} and its directory` },
      identity: undefined,
    };
  }
}

// --- native bindings --------------------------------------------------------------------------

export async function checkQuic(load?: () => Promise<unknown>): Promise<CheckResult> {
  const name = 'quic';
  const platform = `${process.platform}-${process.arch}`;
  try {
    await (load ?? (async () => (await import('../transport/quinn-napi.js')).loadQuinnNapi()))();
    return { name, status: 'ok', detail: `quinn QUIC binding loads on ${platform} (node ${process.version})` };
  } catch (err) {
    return {
      name,
      status: 'warn',
      detail: `no QUIC on ${platform}: ${(err as Error).message}; --transport auto falls back to TLS over TCP, which is slower on long or lossy links`,
      fix: 'run npm install on this machine (the binding ships as a per-platform optional package); it needs glibc >= 2.34 or musl (ldd --version)',
    };
  }
}

export async function checkBlake3(active?: () => Promise<string>): Promise<CheckResult> {
  const name = 'blake3';
  let backend: string;
  try {
    backend = await (active ?? (async () => (await import('../chunking/blake3.js')).activeBlake3Backend()))();
  } catch (err) {
    return {
      name,
      status: 'fail',
      detail: `no BLAKE3 backend loads: ${(err as Error).message}`,
      fix: 'reinstall dependencies: npm install (needs @napi-rs/blake-hash or blake3-wasm)',
    };
  }
  if (backend === 'native') return { name, status: 'ok', detail: 'BLAKE3: native (@napi-rs/blake-hash)' };
  return {
    name,
    status: 'warn',
    detail: `BLAKE3: ${backend} fallback (blake3-wasm, ~700 MiB/s against 4-6 GiB/s native): hashing may limit fast transfers`,
    fix: `run npm install on this machine so @napi-rs/blake-hash's prebuilt package for ${process.platform}-${process.arch} is installed`,
  };
}

/** The optional zstd binding: without it every chunk travels uncompressed (a warning, not a failure). */
export async function checkZstd(loaded?: () => Promise<boolean>): Promise<CheckResult> {
  const name = 'zstd';
  const ok = await (loaded ?? (async () => (await import('../session/chunk-compression.js')).zstdCodec() !== null))();
  if (ok)
    return {
      name,
      status: 'ok',
      detail: 'zstd chunk compression available (@mongodb-js/zstd); on unless --no-compress',
    };
  return {
    name,
    status: 'warn',
    detail: 'zstd binding not installed: chunks travel uncompressed, and peers cannot send this node compressed chunks',
    fix: `run npm install on this machine so the optional @mongodb-js/zstd and its prebuilt package for ${process.platform}-${process.arch} are installed`,
  };
}

// --- paired peers -----------------------------------------------------------------------------

/** Per-peer budget: each transport's connect, the handshake, and the one ping. */
export const DEFAULT_PEER_TIMEOUT_MS = 2_000;
/** Peers dialled at once: enough to keep doctor quick, few enough not to look like a scan. */
export const MAX_CONCURRENT_PEER_CHECKS = 8;

export interface PeerCheckOptions {
  readonly identity: Identity;
  readonly log: Logger;
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

export async function checkPeer(entry: PeerEntry, options: PeerCheckOptions): Promise<CheckResult> {
  const name = `peer:${entry.name}`;
  if (entry.addr === undefined) {
    return { name, status: 'ok', detail: `${entry.id}: no address stored, not dialled (it dials this node)` };
  }
  const timeoutMs = options.timeoutMs ?? DEFAULT_PEER_TIMEOUT_MS;
  let address: HostPort;
  try {
    address = parseHostPort(entry.addr, `address of peer ${entry.name}`);
  } catch (err) {
    if (!isClawpeerError(err)) throw err;
    return {
      name,
      status: 'fail',
      detail: err.message,
      fix: `fix it: clawpeer pair add ${entry.id} --name ${entry.name} --addr HOST:PORT`,
    };
  }
  const where = formatHostPort(address);
  const config = resolveConfig({
    connectTimeoutMs: timeoutMs,
    handshakeTimeoutMs: timeoutMs,
    idleTimeoutMs: Math.max(100, timeoutMs),
    keepAliveMs: Math.max(50, Math.floor(timeoutMs / 3)),
  });
  const { dialPeer } = await import('../session/dialer.js');
  const { pingPeer } = await import('../session/ping.js');
  try {
    const session = await dialPeer({
      identity: options.identity,
      peer: { id: entry.id, name: entry.name, publicKey: publicKeyFromNodeId(entry.id), address },
      config,
      log: options.log,
      ...(options.signal !== undefined ? { signal: options.signal } : {}),
    });
    try {
      let rttMs = NaN;
      for await (const p of pingPeer(session, {
        count: 1,
        intervalMs: 0,
        timeoutMs,
        ...(options.signal !== undefined ? { signal: options.signal } : {}),
      }))
        rttMs = p.rttMs;
      return {
        name,
        status: 'ok',
        detail: `reachable at ${where} via ${session.transport}, rtt ${rttMs.toFixed(1)} ms`,
      };
    } finally {
      await session.close('doctor').catch(() => undefined);
    }
  } catch (err) {
    if (!isClawpeerError(err)) throw err;
    switch (err.code) {
      case 'PEER_NOT_PAIRED':
        return {
          name,
          status: 'fail',
          detail: `${entry.name} at ${where} refused this node: it has not paired ${options.identity.nodeId}`,
          fix: `on ${entry.name}, run: clawpeer pair add ${options.identity.nodeId} --name <NAME>`,
        };
      case 'AUTH_FAILED':
        return {
          name,
          status: 'fail',
          detail: `auth failed at ${where}: ${err.message}`,
          fix: `check the address; if ${entry.name} made a new identity: clawpeer pair remove ${entry.name} && clawpeer pair add <ITS_NEW_ID> --name ${entry.name} --addr ${entry.addr}`,
        };
      case 'UNREACHABLE':
      case 'TIMEOUT':
      case 'CONNECTION_CLOSED':
      case 'TRANSPORT_UNAVAILABLE':
        return {
          name,
          status: 'warn',
          detail: `unreachable at ${where} within ${timeoutMs} ms: ${err.message}`,
          fix: `is clawpeer listen running on ${entry.name}? check the address (clawpeer pair add ${entry.id} --name ${entry.name} --addr HOST:PORT) and that UDP and TCP port ${address.port} are open in firewalls on the way`,
        };
      default:
        return {
          name,
          status: 'fail',
          detail: `${where}: ${err.code}: ${err.message}`,
          fix: `run clawpeer ping ${entry.name} -vv for details`,
        };
    }
  }
}

/** Checks peers MAX_CONCURRENT_PEER_CHECKS at a time; results in pair-list order. */
export async function checkPeers(peers: readonly PeerEntry[], options: PeerCheckOptions): Promise<CheckResult[]> {
  const results: CheckResult[] = new Array<CheckResult>(peers.length);
  await forEachBounded(peers, MAX_CONCURRENT_PEER_CHECKS, async (peer, i) => {
    results[i] = await checkPeer(peer, options);
  });
  return results;
}

// --- all together -----------------------------------------------------------------------------

export interface DoctorOptions {
  readonly home: HomeLayout;
  readonly port: number;
  readonly log: Logger;
  readonly portHosts?: readonly string[];
  /** Health-check mode: the port must be held by this node's own running listener. */
  readonly expectListener?: boolean;
  /** Dial paired peers that have an address (default true). */
  readonly peers?: boolean;
  readonly peerTimeoutMs?: number;
  readonly procDir?: string;
  readonly nowMs?: number;
  readonly buildTimeMs?: number;
  readonly clockSync?: () => Promise<ClockSync>;
  readonly probe?: ListenerProbe;
  readonly signal?: AbortSignal;
  /** The rendezvous this node uses: doctor asks it and names the NAT kind. */
  readonly rendezvous?: HostPort;
}

/** Runs every check in a fixed order, yielding each result as soon as it is known. */
export async function* runDoctor(options: DoctorOptions): AsyncGenerator<CheckResult> {
  const { result: identityResult, identity } = await checkIdentity(options.home.identityKeyFile);
  yield identityResult;
  yield await checkUdpBuffers(options.procDir !== undefined ? { procDir: options.procDir } : {});
  const probe = options.probe ?? makeListenerProbe(identity, options.log.child('probe'));
  for (const protocol of ['udp', 'tcp'] as const) {
    yield await checkPort(protocol, {
      port: options.port,
      probe,
      ...(options.portHosts !== undefined ? { hosts: options.portHosts } : {}),
      ...(identity !== undefined ? { ownId: identity.nodeId } : {}),
      ...(options.expectListener !== undefined ? { expectListener: options.expectListener } : {}),
    });
  }
  yield await checkQuic();
  yield await checkBlake3();
  yield await checkZstd();
  yield await checkClock({
    nowMs: options.nowMs ?? Date.now(),
    buildTimeMs: options.buildTimeMs ?? (await buildTimeMs()),
    sync: options.clockSync ?? probeClockSync,
  });
  const { checkRendezvous } = await import('./rendezvous-check.js');
  yield await checkRendezvous({
    rendezvous: options.rendezvous,
    log: options.log.child('rendezvous'),
    ...(options.signal !== undefined ? { signal: options.signal } : {}),
  });
  if (options.peers === false) return;
  let peers: PeerEntry[];
  try {
    peers = await new PeerStore(options.home.peersFile).list();
  } catch (err) {
    if (!isClawpeerError(err)) throw err;
    yield {
      name: 'peers',
      status: 'fail',
      detail: err.message,
      fix: `repair or remove ${options.home.peersFile}, then pair again`,
    };
    return;
  }
  if (peers.length === 0) {
    yield {
      name: 'peers',
      status: 'ok',
      detail: 'no paired peers yet (clawpeer pair add <ID> --name <NAME> --addr HOST:PORT)',
    };
    return;
  }
  if (identity === undefined) {
    yield {
      name: 'peers',
      status: 'warn',
      detail: `${peers.length} paired peer(s) not dialled: no usable identity`,
      fix: 'fix the identity check first',
    };
    return;
  }
  yield* await checkPeers(peers, {
    identity,
    log: options.log.child('peers'),
    ...(options.peerTimeoutMs !== undefined ? { timeoutMs: options.peerTimeoutMs } : {}),
    ...(options.signal !== undefined ? { signal: options.signal } : {}),
  });
}

export function summarize(results: readonly CheckResult[]): DoctorSummary {
  return {
    ok: results.filter((r) => r.status === 'ok').length,
    warn: results.filter((r) => r.status === 'warn').length,
    fail: results.filter((r) => r.status === 'fail').length,
  };
}
