// `clawpeer pair list`, apart from pair.ts so that a list (run without yargs by
// plain-fast-path.ts, as scripts poll it) loads no pairing code: only the peer store, the
// listener's status and the last paths.
import { PeerStore, readLastPaths } from '../../home/facade.js';
import type { CommandContext } from '../context.js';

/** `clawpeer pair list` (also run without yargs: plain-fast-path.ts). */
export async function listPairs(ctx: CommandContext): Promise<void> {
  const peers = await new PeerStore(ctx.home.peersFile).list();
  // Connected now: only a running listener of this home knows; without one, not said.
  const { listenerStatus } = await import('../resident-client.js');
  const status =
    peers.length === 0 ? 'no peers' : await listenerStatus(ctx.home.dir, ctx.signal).catch(() => 'no answer');
  const connected = typeof status === 'string' ? undefined : new Set(status.peers.map((p) => p.id));
  // How each was reached last (home/last-paths.ts): a session now, else the remembered one.
  const last = await readLastPaths(ctx.home.dir);
  const live = new Map(
    typeof status === 'string'
      ? []
      : status.peers.filter((p) => p.path !== undefined).map((p) => [p.id, { path: p.path, rttMs: p.rttMs }]),
  );
  const pathOf = (id: string): { path?: string; rttMs?: number } => {
    const l = live.get(id) ?? last[id];
    return l === undefined
      ? {}
      : {
          ...(l.path === undefined ? {} : { path: l.path }),
          ...(l.rttMs === undefined ? {} : { rttMs: l.rttMs }),
        };
  };
  if (ctx.out.json) {
    for (const p of peers)
      ctx.out.emit(
        {
          event: 'peer',
          ...p,
          ...(connected === undefined ? {} : { connected: connected.has(p.id) }),
          ...pathOf(p.id),
        },
        '',
      );
    return;
  }
  if (peers.length === 0) {
    ctx.out.emit(
      {},
      'no paired peers (add one with: clawpeer pair add <ID> --name <NAME>, and --addr <HOST:PORT> when it is not on this LAN)',
    );
    return;
  }
  const state = (id: string): string =>
    connected === undefined ? '' : connected.has(id) ? '\tconnected' : '\tnot connected';
  const via = (id: string): string => {
    const v = pathOf(id);
    return v.path === undefined
      ? ''
      : `\tpath ${v.path}${v.rttMs === undefined ? '' : ` (rtt ${v.rttMs.toFixed(1)} ms)`}`;
  };
  for (const p of peers) ctx.out.emit({}, `${p.name}\t${p.id}\t${p.addr ?? '-'}${state(p.id)}${via(p.id)}`);
}
