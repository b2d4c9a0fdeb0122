// The ways a command dials a peer (reach/path-sources.ts), from the home's reach config and
// the global flags, and remembering in the home which path worked (home/last-paths.ts).
import type { Identity } from '../crypto/identity.js';
import type { ResolvedPeer } from '../home/peer-resolve.js';
import type { PathSources } from '../reach/path-sources.js';
import type { CommandContext } from './context.js';

export async function dialPathsFor(ctx: CommandContext, identity: Identity, peer: ResolvedPeer): Promise<PathSources> {
  const [config, { pathSourcesFor }, { lastDirectAddress, recordLastPath }] = await Promise.all([ctx.reach(), import('../reach/path-sources.js'), import('../home/last-paths.js')]);
  const lastAddress = peer.typed === true ? undefined : await lastDirectAddress(ctx.home.dir, peer.id);
  const paths = pathSourcesFor({
    config,
    identity,
    peer,
    ...(peer.typed === true ? { typedAddress: peer.address } : {}),
    ...(lastAddress === undefined ? {} : { lastAddress }),
    log: ctx.log.child('reach'),
  });
  return {
    ...paths,
    release: () => paths.release(),
    connected: (path, address, rttMs) => {
      recordLastPath(ctx.home.dir, peer.id, { path, address, rttMs }).catch((err: unknown) => ctx.log.debug('cannot remember the path', { error: (err as Error).message }));
    },
  };
}
