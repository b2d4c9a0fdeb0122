// `send` and `receive`: one transfer by a short spoken code, as croc and magic wormhole do. No
// running listener, no lasting pairing: `send` serves the named paths from a listener of its own
// holding one code (listener/send-by-code.ts); `receive` proves the code by the PAKE of `pair
// join` and pulls them (ops/receive-by-code.ts). Each side pins the other in memory only.
import type { Argv } from 'yargs';
import { count, escapeToShow, human } from '../../format.js';
import { homeOrEphemeralIdentity, parseHostPort, resolveConfig } from '../../home/facade.js';
import { sendByCode } from '../../listener/send-facade.js';
import {
  codeEntropyBits,
  DEFAULT_CODE_WORDS,
  DEFAULT_INVITE_TTL_MS,
  guessOdds,
  MAX_CODE_WORDS,
  MIN_CODE_WORDS,
  nameplateDirectories,
  parseCode,
  receiveByCode,
} from '../../ops/pairing.js';
import { flagText, intOption, TRANSPORT_OPTION } from '../args.js';
import type { CommandContext, Runner } from '../context.js';
import { createProgress } from '../progress.js';
import { report } from '../transfer-report.js';
import { askYes } from '../pair-code.js';
import { askAccept, offerCounts, offerLine, shouldAskOffer } from '../offer-question.js';
import { DEFAULT_STREAMS, DEFAULT_WINDOW } from './transfer.js';

/** An ephemeral identity is news worth a line: the other side sees a key no `init` made. */
function sayEphemeral(ctx: CommandContext, ephemeral: boolean): void {
  if (ephemeral) ctx.log.info(`no identity in ${ctx.home.dir}: using a key made for this transfer only`);
}

async function send(ctx: CommandContext, args: Record<string, unknown>): Promise<void> {
  const paths = ((args['paths'] as unknown[] | undefined) ?? []).map((p) => flagText(p));
  const minutes = intOption(args['expires'], '--expires', 1, 24 * 60);
  const words = intOption(args['words'], '--words', MIN_CODE_WORDS, MAX_CODE_WORDS);
  const port = intOption(args['port'], '--port', 0, 65_535);
  const { identity, ephemeral } = await homeOrEphemeralIdentity(ctx.home.identityKeyFile);
  sayEphemeral(ctx, ephemeral);
  const verify = args['verify'] === true;
  const outcome = await sendByCode({
    identity,
    paths,
    home: ctx.home,
    reach: await ctx.reach(),
    config: resolveConfig({ transport: args['transport'] }),
    host: flagText(args['host']),
    port,
    words,
    ttlMs: minutes * 60_000,
    log: ctx.log.child('send'),
    signal: ctx.signal,
    onCode: (c) => {
      const until = new Date(c.expiresAt).toISOString();
      const hint =
        c.directories.length > 0
          ? `clawpeer receive ${c.code.text}`
          : `clawpeer receive ${c.code.text} --addr ${c.addr ?? `<THIS_HOST>:${c.port}`}`;
      ctx.out.emit(
        {
          event: 'send-code',
          code: c.code.text,
          nameplate: Number(c.code.nameplate),
          words: c.code.words.length,
          bits: Number(codeEntropyBits(c.code.words.length).toFixed(1)),
          expiresAt: until,
          id: identity.nodeId,
          port: c.port,
          ...(c.addr === undefined ? {} : { addr: c.addr }),
        },
        `code: ${c.code.text}\n` +
          `single use, valid until ${until}; one wrong guess burns it (1 in ${guessOdds(c.code.words.length).toLocaleString('en-US')} per guess)\n` +
          `on the other machine run: ${hint}`,
      );
    },
    onReceiver: (r) =>
      ctx.out.emit(
        { event: 'receiver', id: r.id, verify: r.verify },
        `receiver ${r.id} proved the code` + (verify ? `; verification: ${r.verify}` : ''),
      ),
    onSent: (s) =>
      ctx.out.emit(
        { event: s.ok ? 'sent' : 'send-failed', path: s.path, files: s.files, bytes: s.bytes },
        s.ok ? `sent ${escapeToShow(s.path)}` : `sending ${escapeToShow(s.path)} failed`,
      ),
  });
  ctx.out.summary(
    {
      event: 'done',
      receiver: outcome.receiver,
      paths: outcome.sent.length,
      files: outcome.files,
      bytes: outcome.bytes,
    },
    `sent ${count(outcome.sent.length, 'path')} (${count(outcome.files, 'file')}, ${human(outcome.bytes)}) to ${outcome.receiver}`,
  );
}

async function receive(ctx: CommandContext, args: Record<string, unknown>): Promise<void> {
  const code = parseCode(flagText(args['code']));
  const address = args['addr'] === undefined ? undefined : parseHostPort(flagText(args['addr']), '--addr');
  const { identity, ephemeral } = await homeOrEphemeralIdentity(ctx.home.identityKeyFile);
  sayEphemeral(ctx, ephemeral);
  const config = resolveConfig({ transport: args['transport'] });
  const log = ctx.log.child('receive');
  const verify = args['verify'] === true;
  const confirm = verify
    ? async (v: string): Promise<boolean> => {
        ctx.out.emit(
          { event: 'verify', verify: v },
          `verification: ${v} (the sender's \`send --verify\` shows the same)`,
        );
        return args['yes'] === true || askYes(`does the sender show ${v}? [y/N] `);
      }
    : undefined;
  const progress = createProgress(ctx.out);
  try {
    const outcome = await receiveByCode({
      identity,
      code,
      directories:
        address === undefined
          ? nameplateDirectories({ home: ctx.home, identity, config, reach: await ctx.reach(), log })
          : [],
      ...(address === undefined ? { reach: await ctx.reach() } : {}),
      config,
      log,
      signal: ctx.signal,
      localPath: args['dir'] === undefined ? '.' : flagText(args['dir']),
      force: args['force'] === true,
      streams: DEFAULT_STREAMS,
      window: DEFAULT_WINDOW,
      ...(address === undefined ? {} : { address }),
      ...(confirm === undefined ? {} : { confirm }),
      ...(progress.active ? { onProgress: (p: Parameters<typeof progress.update>[0]) => progress.update(p) } : {}),
      onSender: (s) => ctx.out.emit({ event: 'sender', id: s.id, verify: s.verify }, `sender ${s.id} proved the code`),
      onOffer: (offer) =>
        ctx.out.emit(
          { event: 'offer', paths: offer.paths, files: offer.files, dirs: offer.dirs, bytes: offer.bytes },
          offerLine(offer),
        ),
      accept: async (offer) => {
        // Typed boolean, but undefined when stdin is no terminal.
        const tty = process.stdin.isTTY as boolean | undefined;
        if (!shouldAskOffer({ yes: args['yes'] === true, stdinIsTTY: tty === true })) return true;
        return askAccept(`Accept ${offerCounts(offer)}? (Y/n) `, ctx.signal);
      },
    });
    progress.stop();
    // The sender's names: control and bidi characters escaped, so none can drive the terminal.
    ctx.out.emit({ event: 'received', paths: outcome.paths }, `received ${outcome.paths.map(escapeToShow).join(', ')}`);
    report(ctx, 'received', outcome.result, { path: outcome.path, rttMs: outcome.rttMs });
  } finally {
    progress.stop();
  }
}

export function registerSendReceiveCommands(cli: Argv, run: Runner): Argv {
  return cli
    .command(
      'send <paths..>',
      'send files or directories once by a short code (as croc, magic wormhole): no listener or pairing needed',
      (a) =>
        a
          .positional('paths', { type: 'string', array: true, describe: 'files and directories to send' })
          .option('expires', {
            type: 'number',
            default: DEFAULT_INVITE_TTL_MS / 60_000,
            describe: 'minutes the code stays valid',
          })
          .option('words', {
            type: 'number',
            default: DEFAULT_CODE_WORDS,
            describe: `words in the code, ${MIN_CODE_WORDS}-${MAX_CODE_WORDS} (each about 10.3 bits)`,
          })
          .option('verify', {
            type: 'boolean',
            default: false,
            describe: 'print the verification string once the receiver proved the code',
          })
          .option('host', { type: 'string', default: '0.0.0.0', describe: 'address to listen on for this transfer' })
          .option('port', { type: 'number', default: 0, describe: 'port to listen on (0: a free one)' })
          .option('transport', TRANSPORT_OPTION)
          .example('$0 send ./photos notes.txt', 'prints a code like 7-acid-zebra, waits for the receiver, sends'),
      run(send),
    )
    .command(
      'receive <code> [dir]',
      'receive what `clawpeer send` offers under a short code into DIR (default .): shows the offer, asks at a terminal (a no: exit 6)',
      (a) =>
        a
          .positional('code', { type: 'string', describe: 'the code `clawpeer send` printed' })
          .positional('dir', { type: 'string', describe: 'where the paths land (default: the current directory)' })
          .option('addr', {
            type: 'string',
            describe: 'HOST:PORT where the sender listens (while no LAN discovery or rendezvous finds it)',
          })
          .option('force', { type: 'boolean', default: false, describe: 'replace existing different files' })
          .option('verify', {
            type: 'boolean',
            default: false,
            describe: "print a verification string to compare with the sender's, and ask before receiving",
          })
          .option('yes', {
            alias: 'y',
            type: 'boolean',
            default: false,
            describe:
              'accept the offer without asking (asked only when stdin is a terminal; a no exits 6), and with --verify do not ask',
          })
          .option('transport', TRANSPORT_OPTION)
          .example(
            '$0 receive 7-acid-zebra ~/Downloads',
            'finds the sender by the code, shows the offer, asks, receives',
          )
          .example('$0 receive 7-acid-zebra -y', 'receives without asking (as when stdin is no terminal)'),
      run(receive),
    );
}
