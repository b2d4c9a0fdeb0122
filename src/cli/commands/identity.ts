// `init` and `id`: create and show the node identity.
import type { Argv } from 'yargs';
import { createIdentity, loadIdentity } from '../../home/facade.js';
import type { CommandContext, Runner } from '../context.js';

/** `clawpeer id` (also run without yargs: plain-fast-path.ts). */
export async function showId(ctx: CommandContext): Promise<void> {
  const identity = await loadIdentity(ctx.home.identityKeyFile);
  ctx.out.emit(
    { event: 'id', id: identity.nodeId, publicKey: Buffer.from(identity.publicKey).toString('hex') },
    identity.nodeId,
  );
}

export function registerIdentityCommands(cli: Argv, run: Runner): Argv {
  return cli
    .command(
      'init',
      "create this node's Ed25519 identity (refuses to overwrite without --force)",
      (y) =>
        y.option('force', {
          type: 'boolean',
          default: false,
          describe: 'replace an existing identity (peers that pinned it will refuse the new key)',
        }),
      run(async (ctx, args) => {
        const identity = await createIdentity(ctx.home.identityKeyFile, { force: args['force'] === true });
        ctx.out.emit(
          {
            event: 'init',
            id: identity.nodeId,
            publicKey: Buffer.from(identity.publicKey).toString('hex'),
            keyFile: ctx.home.identityKeyFile,
          },
          `created identity ${identity.nodeId}\nkey file: ${ctx.home.identityKeyFile} (mode 0600)\npair from another node with: clawpeer pair add ${identity.nodeId} --name <NAME> --addr <HOST:PORT>`,
        );
      }),
    )
    .command('id', "print this node's id", (y) => y, run(showId));
}
