// The home's config.json: how this node reaches its peers (LAN discovery, a rendezvous server,
// port mapping). Optional: a home without one uses the defaults below, which send nothing beyond
// the local network unless the user names a rendezvous server. Global flags (--rendezvous,
// --lan-discovery / --no-lan-discovery) override the file for one command.
import { ClawpeerError } from '../errors.js';
import type { HostPort } from '../transport/types.js';
import { parseHostPort } from './address.js';
import { parseFolders } from './folders-config.js';
import { configFileOf, readConfigJson } from './config-json.js';

export { CONFIG_FILE_NAME } from './config-json.js';
/** Syncthing's local discovery port; ours carries different datagrams (lan-query.ts). */
export const DEFAULT_LAN_DISCOVERY_PORT = 21029;
/** How long a dialer listens for LAN answers before it gives up on the LAN. */
export const DEFAULT_LAN_DISCOVERY_TIMEOUT_MS = 1_000;

export interface ReachConfig {
  /** A rendezvous server (lookups, hole punching, relay); undefined: none, nothing leaves the LAN. */
  readonly rendezvous?: HostPort;
  /** Answer and ask LAN discovery queries. */
  readonly lanDiscovery: boolean;
  readonly lanDiscoveryPort: number;
  readonly lanDiscoveryTimeoutMs: number;
  /** Interface names LAN discovery uses (default: every IPv4 interface, loopback included). */
  readonly lanInterfaces?: readonly string[];
  /** UPnP/NAT-PMP mappings, used only with a rendezvous and a listener bound beyond loopback. */
  readonly portMapping: boolean;
}

export const DEFAULT_REACH_CONFIG: ReachConfig = Object.freeze({
  lanDiscovery: true,
  lanDiscoveryPort: DEFAULT_LAN_DISCOVERY_PORT,
  lanDiscoveryTimeoutMs: DEFAULT_LAN_DISCOVERY_TIMEOUT_MS,
  portMapping: true,
});

/** What the command line says, each undefined when not given. */
export interface ReachOverrides {
  readonly rendezvous?: string | undefined;
  readonly lanDiscovery?: boolean | undefined;
}

/** `folders` is the shared folders' (folders-config.ts checks it); reaching peers ignores it. */
const KEYS = new Set([
  'rendezvous',
  'lanDiscovery',
  'lanDiscoveryPort',
  'lanDiscoveryTimeoutMs',
  'lanInterfaces',
  'portMapping',
  'folders',
]);

/** Checks a parsed config object; CONFIG_INVALID naming the file and the key otherwise. */
export function parseReachConfig(raw: unknown, where: string): ReachConfig {
  const bad = (why: string): ClawpeerError => new ClawpeerError('CONFIG_INVALID', `${where}: ${why}`);
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw bad('expected a JSON object such as {"rendezvous": "203.0.113.5:7800"}');
  const o = raw as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    if (!KEYS.has(key)) throw bad(`unknown key ${JSON.stringify(key)} (known: ${[...KEYS].join(', ')})`);
  }
  const bool = (key: string, fallback: boolean): boolean => {
    const v = o[key];
    if (v === undefined) return fallback;
    if (typeof v !== 'boolean') throw bad(`${key} must be true or false, got ${JSON.stringify(v)}`);
    return v;
  };
  const int = (key: string, fallback: number, min: number, max: number): number => {
    const v = o[key];
    if (v === undefined) return fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
      throw bad(`${key} must be an integer in ${min}..${max}, got ${JSON.stringify(v)}`);
    return v;
  };
  let rendezvous: HostPort | undefined;
  if (o['rendezvous'] !== undefined && o['rendezvous'] !== null) {
    if (typeof o['rendezvous'] !== 'string')
      throw bad(`rendezvous must be "HOST:PORT", got ${JSON.stringify(o['rendezvous'])}`);
    rendezvous = parseRendezvous(o['rendezvous'], `rendezvous in ${where}`);
  }
  let lanInterfaces: string[] | undefined;
  if (o['lanInterfaces'] !== undefined) {
    const v = o['lanInterfaces'];
    if (!Array.isArray(v) || v.length === 0 || !v.every((n) => typeof n === 'string' && n !== ''))
      throw bad(`lanInterfaces must be a non-empty list of interface names such as ["eth0"], got ${JSON.stringify(v)}`);
    lanInterfaces = v as string[];
  }
  parseFolders(o['folders'], where); // named here too, so any command reports a bad folder entry
  return Object.freeze({
    ...(rendezvous === undefined ? {} : { rendezvous }),
    lanDiscovery: bool('lanDiscovery', DEFAULT_REACH_CONFIG.lanDiscovery),
    lanDiscoveryPort: int('lanDiscoveryPort', DEFAULT_REACH_CONFIG.lanDiscoveryPort, 1, 65535),
    lanDiscoveryTimeoutMs: int('lanDiscoveryTimeoutMs', DEFAULT_REACH_CONFIG.lanDiscoveryTimeoutMs, 50, 60_000),
    ...(lanInterfaces === undefined ? {} : { lanInterfaces }),
    portMapping: bool('portMapping', DEFAULT_REACH_CONFIG.portMapping),
  });
}

/** A rendezvous HOST:PORT, from the file or --rendezvous. */
export function parseRendezvous(text: string, what = '--rendezvous'): HostPort {
  return parseHostPort(text, what);
}

/** The config of the home at `homeDir` (defaults when it has no config.json), with `overrides` applied. */
export async function loadReachConfig(homeDir: string, overrides: ReachOverrides = {}): Promise<ReachConfig> {
  const file = configFileOf(homeDir);
  const raw = await readConfigJson(file);
  return applyReachOverrides(raw === undefined ? DEFAULT_REACH_CONFIG : parseReachConfig(raw, file), overrides);
}

export function applyReachOverrides(base: ReachConfig, overrides: ReachOverrides): ReachConfig {
  const rendezvous = overrides.rendezvous === undefined ? base.rendezvous : parseRendezvous(overrides.rendezvous);
  return Object.freeze({
    ...base,
    ...(rendezvous === undefined ? {} : { rendezvous }),
    ...(overrides.lanDiscovery === undefined ? {} : { lanDiscovery: overrides.lanDiscovery }),
  });
}
