// Port mapping on the home gateway, so a listener behind a NAT that speaks PCP, NAT-PMP or
// UPnP-IGD can be dialled directly on the gateway's external address: the `mapped` addresses
// of its announcement. Tries PCP, then NAT-PMP (each one UDP round trip to the default
// gateway), then UPnP (SSDP discovery, then SOAP). Renews at half the granted lifetime, tells `onChange` when
// the mapped addresses change, deletes its mappings on close. A network without such a gateway
// is the common case, not an error: debug logs, `mapped()` empty, another look later.
import type { AddressRole, AnnouncedAddress } from '../protocol/announcement.js';
import type { Logger } from '../logger.js';
import { defaultGateway, NatPmpClient, type MappingProtocol } from './nat-pmp.js';
import { PcpClient } from './pcp.js';
import { discoverIgd, UpnpError, UpnpIgdClient } from './upnp-igd.js';
import { ClawpeerError } from '../errors.js';

export type PortMappingProtocol = 'pcp' | 'nat-pmp' | 'upnp';

export interface PortMappingOptions {
  /** The local UDP port to map (the QUIC listener's). */
  readonly udpPort: number;
  /** The local TCP port to map too (the TLS listener's), if any. */
  readonly tcpPort?: number;
  readonly log: Logger;
  /** Aborting it closes the mapping (as `close()`). */
  readonly signal?: AbortSignal;
  /** Called with the new `mapped()` whenever it changes (made, moved, lost). */
  readonly onChange?: (mapped: readonly AnnouncedAddress[]) => void;
  /** Lifetime asked of the gateway, in seconds (default 3600); renewed at half of what it grants. */
  readonly lifetimeS?: number;
  /** Protocols to try, in order (default PCP, NAT-PMP, then UPnP). */
  readonly protocols?: readonly PortMappingProtocol[];
  /** The role the mapped address is announced with (default `listen`). */
  readonly role?: AddressRole;
  /** With no gateway found (or a mapping lost), the next look after this long (default 5 min). */
  readonly retryMs?: number;
}

export interface PortMapping {
  /**
   * The gateway's external address and the mapped UDP port, source `mapped`: empty while there
   * is none. One entry: an announced address carries no protocol, so the TCP mapping is usable
   * through it only when the gateway gave TCP the same external port (asked for, usually granted).
   */
  mapped(): AnnouncedAddress[];
  /** Which protocol holds the mapping now, if any; and the TCP external port, if mapped. */
  status(): {
    via: PortMappingProtocol | undefined;
    externalAddress: string | undefined;
    udpExternalPort: number | undefined;
    tcpExternalPort: number | undefined;
  };
  /** Resolves once the first attempt is over (mapped or not); never rejects. */
  readonly ready: Promise<void>;
  /** Deletes the mappings (bounded in time) and stops renewing. Never rejects. */
  close(): Promise<void>;
}

const DEFAULT_LIFETIME_S = 3600;
const DEFAULT_RETRY_MS = 5 * 60_000;
const CLOSE_BUDGET_MS = 2_000;
const DESCRIPTION = 'clawpeer';

interface Held {
  readonly via: PortMappingProtocol;
  readonly externalAddress: string;
  readonly udp: number;
  readonly tcp: number | undefined;
  /** Seconds granted (the shorter of the two); 0: permanent (UPnP gateways that allow only that). */
  readonly lifetimeS: number;
  /** Deletes this mapping at the gateway. */
  release(signal: AbortSignal): Promise<void>;
  /** Renews it, asking for the same external ports. */
  renew(signal: AbortSignal): Promise<Held>;
}

/** Addresses a mapping is useless behind: private, shared (carrier NAT), loopback, unset. */
export function isPrivateIPv4(address: string): boolean {
  const [a = 0, b = 0] = address.split('.').map(Number);
  return (
    a === 0 ||
    a === 10 ||
    a === 127 ||
    (a === 100 && b >= 64 && b < 128) ||
    (a === 169 && b === 254) ||
    (a === 172 && b >= 16 && b < 32) ||
    (a === 192 && b === 168)
  );
}

export function startPortMapping(options: PortMappingOptions): PortMapping {
  const log = options.log;
  const lifetimeS = options.lifetimeS ?? DEFAULT_LIFETIME_S;
  const protocols = options.protocols ?? ['pcp', 'nat-pmp', 'upnp'];
  const role = options.role ?? 'listen';
  const retryMs = options.retryMs ?? DEFAULT_RETRY_MS;
  const stop = new AbortController();
  let held: Held | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closed: Promise<void> | undefined;
  let lastReported = '[]';

  const mapped = (): AnnouncedAddress[] =>
    held === undefined ? [] : [{ host: held.externalAddress, port: held.udp, role, source: 'mapped' }];
  const report = (): void => {
    const now = mapped();
    const text = JSON.stringify(now);
    if (text === lastReported) return;
    lastReported = text;
    log.info(now.length > 0 ? 'port mapped on the gateway' : 'no port mapping', {
      via: held?.via ?? 'none',
      addresses: now.map((a) => `${a.host}:${a.port}`).join(','),
    });
    try {
      options.onChange?.(now);
    } catch (err) {
      log.warn('port mapping: onChange failed', { error: String(err) });
    }
  };

  const attempt = async (): Promise<Held | undefined> => {
    // PCP and NAT-PMP share the gateway's port 5351: when PCP got no answer at all, nothing
    // listens there and NAT-PMP would only wait as long again.
    let port5351Silent = false;
    for (const protocol of protocols) {
      if (stop.signal.aborted) return undefined;
      if (protocol === 'nat-pmp' && port5351Silent) continue;
      try {
        const got =
          protocol === 'pcp'
            ? await mapPcp(options, lifetimeS, stop.signal)
            : protocol === 'nat-pmp'
              ? await mapNatPmp(options, lifetimeS, stop.signal)
              : await mapUpnp(options, lifetimeS, stop.signal, log);
        if (got === undefined) continue;
        if (isPrivateIPv4(got.externalAddress)) {
          log.debug('port mapping: the gateway is itself behind NAT; not announcing its address', {
            via: protocol,
            external: got.externalAddress,
          });
          await got.release(AbortSignal.timeout(CLOSE_BUDGET_MS)).catch(() => undefined);
          continue;
        }
        return got;
      } catch (err) {
        if (protocol === 'pcp' && err instanceof ClawpeerError && err.code === 'TIMEOUT') port5351Silent = true;
        log.debug('port mapping: no luck', { via: protocol, error: err instanceof Error ? err.message : String(err) });
      }
    }
    return undefined;
  };

  /** The refresh running now: close waits for it, so a renewal in flight cannot outlive close. */
  let current: Promise<void> = Promise.resolve();
  const run = (): Promise<void> => {
    current = refresh().catch((err: unknown) => log.debug('port mapping failed', { error: String(err) }));
    return current;
  };
  const schedule = (ms: number): void => {
    if (stop.signal.aborted) return;
    clearTimeout(timer);
    timer = setTimeout(() => void run(), ms);
    timer.unref();
  };

  const refresh = async (): Promise<void> => {
    let next = held;
    if (held !== undefined && held.lifetimeS > 0) {
      try {
        next = await held.renew(stop.signal);
        log.debug('port mapping renewed', { via: next.via, lifetimeS: next.lifetimeS });
      } catch (err) {
        if (stop.signal.aborted) return; // closing: close deletes what is held
        log.debug('port mapping: renewal failed; looking again', {
          via: held.via,
          error: err instanceof Error ? err.message : String(err),
        });
        next = await attempt();
      }
    } else if (held === undefined) {
      next = await attempt();
    }
    held = next ?? (stop.signal.aborted ? held : undefined);
    if (stop.signal.aborted) return;
    report();
    if (held === undefined) schedule(retryMs);
    else if (held.lifetimeS > 0) schedule(Math.max(1, held.lifetimeS / 2) * 1000);
  };

  const close = (): Promise<void> => {
    closed ??= (async () => {
      stop.abort();
      clearTimeout(timer);
      await current;
      const h = held;
      held = undefined;
      if (h === undefined) return;
      try {
        await h.release(AbortSignal.timeout(CLOSE_BUDGET_MS));
        log.debug('port mapping deleted', { via: h.via });
      } catch (err) {
        log.debug('port mapping: delete failed (it expires by itself)', {
          via: h.via,
          error: err instanceof Error ? err.message : String(err),
        });
      }
    })();
    return closed;
  };

  const ready = run();
  if (options.signal?.aborted) void close();
  options.signal?.addEventListener('abort', () => void close(), { once: true });
  return {
    mapped,
    status: () => ({
      via: held?.via,
      externalAddress: held?.externalAddress,
      udpExternalPort: held?.udp,
      tcpExternalPort: held?.tcp,
    }),
    ready,
    close,
  };
}

async function mapPcp(
  options: PortMappingOptions,
  lifetimeS: number,
  signal: AbortSignal,
  previous?: { udp: number; tcp: number | undefined; udpNonce: Buffer; tcpNonce: Buffer | undefined },
): Promise<Held | undefined> {
  const gateway = await defaultGateway();
  if (gateway === undefined) throw new Error('no default IPv4 gateway');
  const client = new PcpClient(gateway);
  try {
    const udp = await client.map(
      'udp',
      options.udpPort,
      previous?.udp ?? options.udpPort,
      lifetimeS,
      previous?.udpNonce,
      signal,
    );
    let tcp: { externalPort: number; lifetimeS: number; nonce: Buffer } | undefined;
    const tcpPort = options.tcpPort;
    if (tcpPort !== undefined) {
      tcp = await client
        .map('tcp', tcpPort, previous?.tcp ?? udp.externalPort, lifetimeS, previous?.tcpNonce, signal)
        .catch((err: unknown) => {
          options.log.debug('PCP: TCP mapping refused', { error: String(err) });
          return undefined;
        });
    }
    const state = { udp: udp.externalPort, tcp: tcp?.externalPort, udpNonce: udp.nonce, tcpNonce: tcp?.nonce };
    return {
      via: 'pcp',
      externalAddress: udp.externalAddress,
      udp: udp.externalPort,
      tcp: tcp?.externalPort,
      lifetimeS: Math.min(udp.lifetimeS, tcp?.lifetimeS ?? udp.lifetimeS),
      release: async (releaseSignal) => {
        const owner = new PcpClient(gateway);
        try {
          await owner.map('udp', options.udpPort, 0, 0, udp.nonce, releaseSignal);
          if (tcp !== undefined && tcpPort !== undefined)
            await owner.map('tcp', tcpPort, 0, 0, tcp.nonce, releaseSignal);
        } finally {
          owner.close();
        }
      },
      renew: (renewSignal) =>
        mapPcp(options, lifetimeS, renewSignal, state).then((h) => h ?? Promise.reject(new Error('no gateway'))),
    };
  } finally {
    client.close();
  }
}

async function mapNatPmp(
  options: PortMappingOptions,
  lifetimeS: number,
  signal: AbortSignal,
  previous?: { udp: number; tcp: number | undefined },
): Promise<Held | undefined> {
  const gateway = await defaultGateway();
  if (gateway === undefined) throw new Error('no default IPv4 gateway');
  const client = new NatPmpClient(gateway);
  try {
    const externalAddress = await client.externalAddress(signal);
    const udp = await client.map('udp', options.udpPort, previous?.udp ?? options.udpPort, lifetimeS, signal);
    let tcp: { externalPort: number; lifetimeS: number } | undefined;
    if (options.tcpPort !== undefined) {
      // The same external port as UDP, so one announced address serves both transports.
      tcp = await client
        .map('tcp', options.tcpPort, previous?.tcp ?? udp.externalPort, lifetimeS, signal)
        .catch((err: unknown) => {
          options.log.debug('NAT-PMP: TCP mapping refused', { error: String(err) });
          return undefined;
        });
    }
    const ports = { udp: udp.externalPort, tcp: tcp?.externalPort };
    return {
      via: 'nat-pmp',
      externalAddress,
      ...ports,
      lifetimeS: Math.min(udp.lifetimeS, tcp?.lifetimeS ?? udp.lifetimeS),
      release: async (releaseSignal) => {
        const owner = new NatPmpClient(gateway);
        try {
          await owner.map('udp', options.udpPort, 0, 0, releaseSignal);
          if (tcp !== undefined && options.tcpPort !== undefined)
            await owner.map('tcp', options.tcpPort, 0, 0, releaseSignal);
        } finally {
          owner.close();
        }
      },
      renew: (renewSignal) =>
        mapNatPmp(options, lifetimeS, renewSignal, ports).then((h) => h ?? Promise.reject(new Error('no gateway'))),
    };
  } finally {
    client.close();
  }
}

/** Ports tried after the one asked for is taken: random, above the registered range. */
const randomPort = (): number => 49152 + Math.floor(Math.random() * 16000);

async function mapUpnp(
  options: PortMappingOptions,
  lifetimeS: number,
  signal: AbortSignal,
  log: Logger,
  known?: { client: UpnpIgdClient; udp: number; tcp: number | undefined },
): Promise<Held | undefined> {
  let client = known?.client;
  if (client === undefined) {
    const service = await discoverIgd({ signal });
    if (service === undefined) return undefined;
    client = new UpnpIgdClient(service);
  }
  const igd = client;
  const externalAddress = await igd.externalAddress(signal);
  let lease = lifetimeS;
  /** Adds a mapping, moving to another external port on a conflict (718). */
  const add = async (protocol: MappingProtocol, internal: number, preferred: number): Promise<number> => {
    const candidates = [preferred, randomPort(), randomPort(), randomPort()];
    let lastError: unknown;
    for (const external of candidates) {
      try {
        await igd.addPortMapping(protocol, external, internal, lease, DESCRIPTION, signal);
        return external;
      } catch (err) {
        lastError = err;
        if (err instanceof UpnpError && err.upnpCode === 725 && lease !== 0) {
          lease = 0; // OnlyPermanentLeasesSupported: deleted on close instead
          await igd.addPortMapping(protocol, external, internal, lease, DESCRIPTION, signal);
          return external;
        }
        if (!(err instanceof UpnpError) || err.upnpCode !== 718) throw err;
      }
    }
    throw lastError;
  };
  const udp = await add('udp', options.udpPort, known?.udp ?? options.udpPort);
  let tcp: number | undefined;
  if (options.tcpPort !== undefined) {
    tcp = await add('tcp', options.tcpPort, known?.tcp ?? udp).catch((err: unknown) => {
      log.debug('UPnP: TCP mapping refused', { error: String(err) });
      return undefined;
    });
  }
  return {
    via: 'upnp',
    externalAddress,
    udp,
    tcp,
    lifetimeS: lease,
    release: async (releaseSignal) => {
      await igd.deletePortMapping('udp', udp, releaseSignal);
      if (tcp !== undefined) await igd.deletePortMapping('tcp', tcp, releaseSignal);
    },
    renew: (renewSignal) =>
      mapUpnp(options, lifetimeS, renewSignal, log, { client: igd, udp, tcp }).then(
        (h) => h ?? Promise.reject(new Error('no gateway')),
      ),
  };
}
