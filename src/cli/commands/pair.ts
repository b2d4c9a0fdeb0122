// `pair add|list|remove`: manage the set of pinned peer keys.
import type { Argv } from 'yargs';
import { PeerStore } from '../../node/peer-store.js';
import type { Runner } from '../context.js';

export function registerPairCommands(cli: Argv, run: Runner): Argv {
  return cli.command('pair', 'manage paired peers (pinned keys)', (y) =>
    y
      .command(
        'add <id>',
        'pin a peer\'s node id under a name',
        (a) =>
          a
            .positional('id', { type: 'string', describe: 'the peer\'s node id (from `clawpeer id` on that machine)' })
            .option('name', { type: 'string', demandOption: true, describe: 'short name to refer to the peer' })
            .option('addr', { type: 'string', describe: 'HOST:PORT where the peer listens' }),
        run(async (ctx, args) => {
          const store = new PeerStore(ctx.home.peersFile);
          const addr = args['addr'] as string | undefined;
          const { entry, created } = await store.add(String(args['id']), String(args['name']), addr);
          ctx.out.emit(
            { event: created ? 'paired' : 'updated', ...entry },
            `${created ? 'paired' : 'updated'} ${entry.name} ${entry.id}${entry.addr !== undefined ? ` at ${entry.addr}` : ''}`,
          );
        }),
      )
      .command(
        'list',
        'list paired peers',
        (a) => a,
        run(async (ctx) => {
          const peers = await new PeerStore(ctx.home.peersFile).list();
          if (ctx.out.json) {
            for (const p of peers) ctx.out.emit({ event: 'peer', ...p }, '');
            return;
          }
          if (peers.length === 0) {
            ctx.out.emit({}, 'no paired peers (add one with: clawpeer pair add <ID> --name <NAME> --addr <HOST:PORT>)');
            return;
          }
          for (const p of peers) ctx.out.emit({}, `${p.name}\t${p.id}\t${p.addr ?? '-'}`);
        }),
      )
      .command(
        'remove <peer>',
        'unpin a peer (by name or id); it is refused on its next connect',
        (a) => a.positional('peer', { type: 'string', describe: 'name or node id' }),
        run(async (ctx, args) => {
          const entry = await new PeerStore(ctx.home.peersFile).remove(String(args['peer']));
          ctx.out.emit({ event: 'unpaired', id: entry.id, name: entry.name }, `removed ${entry.name} ${entry.id}`);
        }),
      )
      .demandCommand(1, 'pair needs a subcommand: add, list or remove'),
  );
}
