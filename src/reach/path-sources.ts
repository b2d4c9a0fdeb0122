// Which ways to try for one dial (REACH.md, "Dialing"): an address typed with --addr alone;
// otherwise the pinned address and the address that worked last (priority 0, 'direct'), LAN
// discovery (priority 0, 'lan'; 1 when an address is pinned: it stands in for a pinned address
// that fails), and with a rendezvous server named, its lookup (priority 1) and
// the traversal socket's punched or relayed paths (priority 2). session/dial-race.ts races them.
import { disabledPathsFromEnv, rendezvousSourcesFor } from './rendezvous-paths.js';
import type { Identity } from '../crypto/identity.js';
import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { HostPort } from '../transport/types.js';
import type { ReachConfig } from '../home/config-file.js';
import { isLoopbackHost, lanOptionsFrom, lanSource } from './lan-discovery.js';
import type { DialCandidate, PathKind, PathSource, PeerToReach } from './paths.js';

/** What a rendezvous client offers the dialer (reach-rv's rendezvousSourcesFor). */
export interface RendezvousSources {
  readonly lookup: PathSource;
  readonly traversal: PathSource;
  /** Frees the client's sockets once the session dialled through it is over. */
  release(): void;
}

export type RendezvousSourcesFactory = (o: {
  readonly rendezvous: HostPort;
  readonly identity: Identity;
  readonly log: Logger;
}) => RendezvousSources;

/**
 * The rendezvous client this build dials through, when the config names a server. The
 * integration of the rendezvous branch sets it here (one line); a test may pass its own.
 */
const RENDEZVOUS_SOURCES: RendezvousSourcesFactory | undefined = rendezvousSourcesFor;

export interface PathSourcesOptions {
  readonly config: ReachConfig;
  readonly identity: Identity;
  /** The peer, with its pinned address when it has one. */
  readonly peer: PeerToReach & { readonly address?: HostPort | undefined };
  /** --addr: dialled alone, nothing else tried. */
  readonly typedAddress?: HostPort | undefined;
  /** Where the last session with this peer went, when it is not the pinned address (home/last-paths.ts). */
  readonly lastAddress?: { readonly address: HostPort; readonly path: PathKind } | undefined;
  readonly log: Logger;
  /** Overrides the build's rendezvous client (tests). */
  readonly rendezvousSources?: RendezvousSourcesFactory;
}

/** The sources of one dial, and what to free once the session dialled through them is over. */
export interface PathSources {
  readonly sources: readonly PathSource[];
  release(): void;
  /**
   * Told the path that won (the CLI remembers it in the home: home/last-paths.ts), and told
   * again when the session ends on another one (a relayed connection moved to a punched hole;
   * no round trip then: the one measured was the relay's).
   */
  connected?(path: PathKind, address: HostPort, rttMs?: number): void;
}

const fmt = (a: HostPort): string => (a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`);

/** One fixed address as a source. */
export function addressSource(
  name: string,
  address: HostPort,
  path: PathKind,
  describe = `${path} ${fmt(address)}`,
): PathSource {
  return {
    name,
    async *find(): AsyncIterable<DialCandidate> {
      yield { address, path: () => path, describe, priority: 0, release: () => undefined };
    },
  };
}

/** A source that finds nothing and says why (a named note in the dial's error). */
function noteSource(name: string, why: string): PathSource {
  return {
    name,
    // eslint-disable-next-line require-yield -- it finds nothing: the throw carries the note
    async *find(): AsyncIterable<DialCandidate> {
      throw new ClawpeerError('UNREACHABLE', why);
    },
  };
}

/** What CLAWPEER_REACH_DISABLE turns off (and names it ignores), for the dial's error; undefined when unset. */
function disabledPathsNote(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const raw = (env['CLAWPEER_REACH_DISABLE'] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (raw.length === 0) return undefined;
  const off = disabledPathsFromEnv(env);
  const unknown = raw.filter((s) => !(off as string[]).includes(s));
  return [
    ...(off.length > 0 ? [`turned off: ${off.join(', ')}`] : []),
    ...(unknown.length > 0
      ? [`not path names, ignored: ${unknown.join(', ')} (paths: lan, direct, mapped, punched, relayed)`]
      : []),
  ].join('; ');
}

export function pathSourcesFor(o: PathSourcesOptions): PathSources {
  if (o.typedAddress !== undefined)
    return { sources: [addressSource('direct', o.typedAddress, 'direct')], release: () => undefined };
  const sources: PathSource[] = [];
  // CLAWPEER_REACH_DISABLE=direct,lan,...: paths a dialer skips (to see one path at work).
  const disabled = new Set(disabledPathsFromEnv());
  const pinned = disabled.has('direct') ? undefined : o.peer.address;
  if (pinned !== undefined) sources.push(addressSource('direct', pinned, 'direct'));
  const last = o.lastAddress;
  if (
    last !== undefined &&
    !disabled.has(last.path) &&
    (pinned === undefined || fmt(pinned) !== fmt(last.address)) &&
    (last.path === 'lan' || last.path === 'direct')
  ) {
    sources.push(
      addressSource('last', last.address, last.path, `${last.path} ${fmt(last.address)} (worked last time)`),
    );
  }
  if (o.config.lanDiscovery && !disabled.has('lan')) {
    // A peer pinned on this machine is looked for on this machine: no broadcast on a real network.
    const loopbackOnly = pinned !== undefined && isLoopbackHost(pinned.host);
    // With an address pinned, what the LAN answers is dialled once that address fails or is slow.
    sources.push(lanSource(lanOptionsFrom(o.config, { loopbackOnly, log: o.log }), pinned === undefined ? 0 : 1));
  } else if (pinned === undefined) {
    sources.push(noteSource('lan', 'LAN discovery is off (lanDiscovery false in config.json, or --no-lan-discovery)'));
  }
  // Said in the dial's error: a path turned off and forgotten looks like a path that failed.
  const offNote = disabledPathsNote();
  if (offNote !== undefined) sources.push(noteSource('CLAWPEER_REACH_DISABLE', offNote));
  let release = (): void => undefined;
  const rendezvous = o.config.rendezvous;
  const factory = o.rendezvousSources ?? RENDEZVOUS_SOURCES;
  if (rendezvous === undefined) {
    sources.push(
      noteSource(
        'rendezvous',
        'none configured (name one with --rendezvous HOST:PORT or "rendezvous" in the home\'s config.json, or pin an address: clawpeer pair add ID --name NAME --addr HOST:PORT)',
      ),
    );
  } else if (factory === undefined) {
    sources.push(noteSource('rendezvous', `${fmt(rendezvous)} is configured but this build has no rendezvous client`));
  } else {
    const rv = factory({ rendezvous, identity: o.identity, log: o.log });
    sources.push(rv.lookup, rv.traversal);
    release = () => rv.release();
  }
  return { sources, release };
}
