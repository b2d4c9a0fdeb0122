// Which nameplate directories (pairing/nameplate-directory.ts) a `pair invite` claims its
// nameplate in, and a `pair join` looks a nameplate up in: LAN discovery when it is on, and the
// rendezvous server when one is named (home config.json or --rendezvous). With neither,
// `pair join CODE --addr HOST:PORT` is the way to reach the inviter.
import type { Identity } from '../crypto/identity.js';
import type { Logger } from '../logger.js';
import type { NodeConfig } from '../home/config.js';
import type { HomeLayout } from '../home/home.js';
import type { NameplateDirectory } from '../pairing/nameplate-directory.js';
import type { ReachConfig } from '../home/config-file.js';
import { isLoopbackHost, lanOptionsFrom } from '../reach/lan-discovery.js';
import { LanNameplateDirectory } from '../reach/lan-nameplates.js';
import { RendezvousNameplateDirectory } from '../reach/rendezvous-nameplates.js';

export interface DirectoryContext {
  readonly home: HomeLayout;
  readonly identity: Identity;
  readonly config: NodeConfig;
  readonly reach: ReachConfig;
  readonly log: Logger;
  /** Where this home's listener is bound: on loopback, claims are asked and answered on loopback only. */
  readonly listenHost?: string;
}

/** The directories of this node: LAN first (no server involved), then the rendezvous. */
function directoriesOf(ctx: DirectoryContext): { lan: LanNameplateDirectory | undefined; all: NameplateDirectory[] } {
  const rendezvous =
    ctx.reach.rendezvous === undefined
      ? []
      : [new RendezvousNameplateDirectory({ identity: ctx.identity, rendezvous: ctx.reach.rendezvous, log: ctx.log })];
  const lan = ctx.reach.lanDiscovery
    ? new LanNameplateDirectory(
        lanOptionsFrom(ctx.reach, {
          log: ctx.log,
          ...(ctx.listenHost !== undefined && isLoopbackHost(ctx.listenHost) ? { loopbackOnly: true } : {}),
        }),
        ctx.identity.nodeId,
      )
    : undefined;
  return { lan, all: [...(lan === undefined ? [] : [lan]), ...rendezvous] };
}

/**
 * A listener's directories, and the nameplates it answers LAN queries for: those its claims
 * hold (the listener claims each open short code's nameplate: listener/nameplate-holder.ts).
 */
export function listenerDirectories(ctx: DirectoryContext): {
  directories: NameplateDirectory[];
  openNameplates: () => number[];
} {
  const { lan, all } = directoriesOf(ctx);
  return { directories: all, openNameplates: () => lan?.held() ?? [] };
}

/**
 * The directories a `pair invite` claims its nameplate in (each claim must succeed, or another
 * nameplate is picked), and a `pair join` without --addr looks the nameplate up in: the same set.
 */
export function nameplateDirectories(ctx: DirectoryContext): NameplateDirectory[] {
  return directoriesOf(ctx).all;
}
