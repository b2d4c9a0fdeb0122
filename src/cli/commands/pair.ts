// `pair add|edit|list|remove`: manage the set of pinned peer keys; `pair invite|join`: pin each
// other's keys with a one-time code instead of copying node ids both ways: a short spoken code
// and a PAKE by default (../pair-code.ts), or with --long the 24-letter code (pair-invite.ts).
import type { Argv } from 'yargs';
import { ClawpeerError } from '../../errors.js';
import {
  formatHostPort,
  loadIdentity,
  parseHostPort,
  PeerStore,
  readListening,
  resolveConfig,
  validatePeerName,
} from '../../home/facade.js';
import {
  DEFAULT_CODE_WORDS,
  DEFAULT_INVITE_TTL_MS,
  InviteStore,
  joinByInvite,
  MAX_CODE_WORDS,
  MIN_CODE_WORDS,
  parseCode,
  parseInviteCode,
} from '../../ops/pairing.js';
import { flagText, intOption, TRANSPORT_OPTION } from '../args.js';
import type { Runner } from '../context.js';
import { inviteByCode, joinWithCode } from '../pair-code.js';
import { listPairs } from './pair-list.js';

/** A short code starts with its number and has at most 4 words; the long code has six groups of four. */
function isShortCode(code: string): boolean {
  const parts = code.trim().split(/[-\s]+/);
  return parts.length <= 1 + MAX_CODE_WORDS && /^[0-9]+$/.test(parts[0] ?? '');
}

export function registerPairCommands(cli: Argv, run: Runner): Argv {
  return cli.command('pair', 'manage paired peers (pinned keys)', (y) =>
    y
      .command(
        'add <id>',
        "pin a peer's node id under a name",
        (a) =>
          a
            .positional('id', { type: 'string', describe: "the peer's node id (from `clawpeer id` on that machine)" })
            .option('name', { type: 'string', demandOption: true, describe: 'short name to refer to the peer' })
            .option('addr', { type: 'string', describe: 'HOST:PORT where the peer listens' }),
        run(async (ctx, args) => {
          const store = new PeerStore(ctx.home.peersFile);
          const addr = args['addr'] as string | undefined;
          const { entry, created } = await store.add(String(args['id']), flagText(args['name']), addr);
          // Without --addr an update keeps the pinned address: say how to drop it.
          const kept = !created && addr === undefined && entry.addr !== undefined;
          ctx.out.emit(
            { event: created ? 'paired' : 'updated', ...entry },
            `${created ? 'paired' : 'updated'} ${entry.name} ${entry.id}${entry.addr !== undefined ? ` at ${entry.addr}` : ''}` +
              (kept ? ` (the address it had; unpin it with: clawpeer pair edit ${entry.name} --no-addr)` : ''),
          );
        }),
      )
      .command(
        'edit <peer>',
        "change a paired peer's name or pinned address (by name or id); --no-addr unpins the address",
        (a) =>
          a
            .positional('peer', { type: 'string', describe: 'name or node id' })
            .option('name', { type: 'string', describe: 'the new short name' })
            .option('addr', {
              type: 'string',
              describe: 'HOST:PORT to pin (--no-addr: none; the peer is found by LAN discovery or a rendezvous)',
            })
            .example('$0 pair edit bob --no-addr', "forget bob's old address"),
        run(async (ctx, args) => {
          // yargs reads --no-addr as addr: false.
          const addr = args['addr'] === false ? null : args['addr'] === undefined ? undefined : flagText(args['addr']);
          const name = args['name'] === undefined ? undefined : flagText(args['name']);
          if (name === undefined && addr === undefined)
            throw new ClawpeerError('USAGE', 'pair edit needs --name, --addr HOST:PORT or --no-addr');
          const entry = await new PeerStore(ctx.home.peersFile).edit(String(args['peer']), {
            ...(name === undefined ? {} : { name }),
            ...(addr === undefined ? {} : { addr }),
          });
          ctx.out.emit(
            { event: 'updated', ...entry },
            `updated ${entry.name} ${entry.id}${entry.addr !== undefined ? ` at ${entry.addr}` : ', no pinned address'}`,
          );
        }),
      )
      .command(
        'list',
        "list paired peers (and, when this home's listener runs, which are connected to it now)",
        (a) => a,
        run(listPairs),
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
      .command(
        'invite',
        "open a one-time code another node can pair with (`pair join`) while this home's listener runs: a short code to read out (NUMBER-word-word), and wait for the joiner",
        (a) =>
          a
            .option('name', {
              type: 'string',
              describe: 'name to pin the joining peer under (default: its host name, else peer-<id>)',
            })
            .option('expires', {
              type: 'number',
              default: DEFAULT_INVITE_TTL_MS / 60_000,
              describe: 'minutes the code stays valid (it is also gone once used)',
            })
            .option('words', {
              type: 'number',
              default: DEFAULT_CODE_WORDS,
              describe: `words in the code, ${MIN_CODE_WORDS}-${MAX_CODE_WORDS} (each about 10.3 bits)`,
            })
            .option('wait', {
              type: 'boolean',
              default: true,
              describe: 'wait until the joiner paired (--no-wait: return at once; the listener holds the code)',
            })
            .option('verify', {
              type: 'boolean',
              default: false,
              describe: 'print the verification string once paired (compare it with `pair join --verify`)',
            })
            .option('long', {
              type: 'boolean',
              default: false,
              describe: 'the 24-letter code of before (pair join needs --addr); returns at once',
            }),
        run(async (ctx, args) => {
          const minutes = intOption(args['expires'], '--expires', 1, 24 * 60);
          const name = args['name'] === undefined ? undefined : validatePeerName(flagText(args['name']));
          const identity = await loadIdentity(ctx.home.identityKeyFile);
          if (name !== undefined) {
            const clash = (await new PeerStore(ctx.home.peersFile).list()).find((p) => p.name === name);
            if (clash !== undefined)
              throw new ClawpeerError('USAGE', `peer name ${JSON.stringify(name)} is already used by ${clash.id}`);
          }
          if (args['long'] !== true) {
            const words = intOption(args['words'], '--words', MIN_CODE_WORDS, MAX_CODE_WORDS);
            await inviteByCode(ctx, {
              words,
              ttlMs: minutes * 60_000,
              wait: args['wait'] !== false,
              verify: args['verify'] === true,
              ...(name === undefined ? {} : { name }),
            });
            return;
          }
          const { code, expiresAt } = await new InviteStore(ctx.home.invitesDir).create({
            ttlMs: minutes * 60_000,
            ...(name === undefined ? {} : { name }),
          });
          const until = new Date(expiresAt).toISOString();
          const listening = await readListening(ctx.home.dir);
          // A listener on every address cannot say which one the other machine reaches.
          const concrete = listening !== undefined && listening.host !== '0.0.0.0' && listening.host !== '::';
          const addr =
            listening === undefined
              ? '<THIS_HOST>:<PORT>'
              : formatHostPort({ host: concrete ? listening.host : '<THIS_HOST>', port: listening.port });
          ctx.out.emit(
            {
              event: 'invite',
              code,
              expiresAt: until,
              id: identity.nodeId,
              ...(listening === undefined ? {} : { port: listening.port, ...(concrete ? { addr } : {}) }),
            },
            `invite code: ${code}\n` +
              `single use, valid until ${until} (${minutes} min), for this node ${identity.nodeId}\n` +
              `on the other machine run: clawpeer pair join ${code} --addr ${addr}\n` +
              (listening === undefined
                ? 'no listener of this home is running: start `clawpeer listen` before the other side joins'
                : `this home's listener (pid ${listening.pid}) will accept it`),
          );
        }),
      )
      .command(
        'join <code>',
        "pair with a listener that printed an invite code: both sides pin each other's keys",
        (a) =>
          a
            .positional('code', { type: 'string', describe: 'the code `clawpeer pair invite` printed' })
            .option('addr', {
              type: 'string',
              describe:
                'HOST:PORT where that listener listens (needed for a --long code, and while no LAN discovery or rendezvous finds it)',
            })
            .option('name', {
              type: 'string',
              describe: 'name to pin it under (default: its host name, else peer-<id>)',
            })
            .option('verify', {
              type: 'boolean',
              default: false,
              describe: "print a verification string to compare with the inviter's, and ask before pinning",
            })
            .option('yes', { type: 'boolean', default: false, describe: 'with --verify: do not ask' })
            .option('transport', TRANSPORT_OPTION),
        run(async (ctx, args) => {
          const name = args['name'] === undefined ? undefined : validatePeerName(flagText(args['name']));
          const addrArg = args['addr'] === undefined ? undefined : parseHostPort(flagText(args['addr']), '--addr');
          if (isShortCode(String(args['code']))) {
            const code = parseCode(String(args['code']));
            await joinWithCode(ctx, {
              code,
              verify: args['verify'] === true,
              yes: args['yes'] === true,
              transport: args['transport'],
              ...(addrArg === undefined ? {} : { address: addrArg }),
              ...(name === undefined ? {} : { name }),
            });
            return;
          }
          const secret = parseInviteCode(String(args['code']));
          if (addrArg === undefined)
            throw new ClawpeerError('USAGE', 'a long invite code needs --addr HOST:PORT (where that listener listens)');
          const address = addrArg;
          const identity = await loadIdentity(ctx.home.identityKeyFile);
          const { entry, created } = await joinByInvite({
            identity,
            peers: new PeerStore(ctx.home.peersFile),
            address,
            secret,
            config: resolveConfig({ transport: args['transport'] }),
            log: ctx.log.child('pair'),
            signal: ctx.signal,
            ...(name === undefined ? {} : { name }),
          });
          ctx.out.emit(
            { event: 'paired', ...entry, alreadyPaired: !created },
            created
              ? `paired ${entry.name} ${entry.id} at ${entry.addr ?? ''}; it pinned this node too`
              : `already paired with ${entry.name} ${entry.id}; its address is now ${entry.addr ?? ''} and it pinned this node too`,
          );
        }),
      )
      .demandCommand(1, 'pair needs a subcommand: add, edit, list, remove, invite or join'),
  );
}
