// `pair invite` and `pair join` with a short code (pairing/code-words.ts): the inviter's side
// opens a code invite, claims its nameplate in the nameplate directories, prints the code and by
// default waits for the listener to settle it; the joiner's side runs ops/pair-code-join.ts.
import { randomBytes } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { createInterface } from 'node:readline/promises';
import {
  formatHostPort,
  loadIdentity,
  parseHostPort,
  PeerStore,
  readListening,
  resolveConfig,
  type HostPort,
  type ListeningInfo,
} from '../home/facade.js';
import {
  CodeInviteStore,
  codeEntropyBits,
  guessOdds,
  joinByCode,
  nameplateDirectories,
  openCodeInvite,
  waitForCodeOutcome,
  type ParsedCode,
} from '../ops/pairing.js';
import type { CommandContext } from './context.js';

const random = (n: number): Uint8Array => new Uint8Array(randomBytes(n));

/** A concrete HOST:PORT of this home's running listener, if it has one. */
function concreteAddr(listening: ListeningInfo | undefined): string | undefined {
  if (listening === undefined || listening.host === '0.0.0.0' || listening.host === '::') return undefined;
  return formatHostPort({ host: listening.host, port: listening.port });
}

export interface CodeInviteArgs {
  readonly words: number;
  readonly name?: string;
  readonly ttlMs: number;
  readonly wait: boolean;
  readonly verify: boolean;
}

/** `pair invite` (short code). */
export async function inviteByCode(ctx: CommandContext, a: CodeInviteArgs): Promise<void> {
  const identity = await loadIdentity(ctx.home.identityKeyFile);
  const store = new CodeInviteStore(ctx.home.invitesDir);
  const log = ctx.log.child('pair');
  const listening = await readListening(ctx.home.dir);
  const directories = nameplateDirectories({
    home: ctx.home,
    identity,
    config: resolveConfig({}),
    reach: await ctx.reach(),
    log,
    ...(listening === undefined ? {} : { listenHost: listening.host }),
  });
  const { code, expiresAt, claims } = await openCodeInvite({
    store,
    directories,
    words: a.words,
    ttlMs: a.ttlMs,
    log,
    signal: ctx.signal,
    random,
    ...(a.name === undefined ? {} : { name: a.name }),
  });
  const unregistered = await listenerOffRendezvous(ctx, listening);
  if (unregistered !== undefined) ctx.out.warn(unregistered);
  const addr = concreteAddr(listening);
  const until = new Date(expiresAt).toISOString();
  const joinHint =
    directories.length > 0
      ? `clawpeer pair join ${code.text}`
      : `clawpeer pair join ${code.text} --addr ${addr ?? '<THIS_HOST>:<PORT>'}`;
  ctx.out.emit(
    {
      event: 'invite',
      code: code.text,
      nameplate: Number(code.nameplate),
      words: code.words.length,
      bits: Number(codeEntropyBits(code.words.length).toFixed(1)),
      expiresAt: until,
      id: identity.nodeId,
      ...(listening === undefined ? {} : { port: listening.port }),
      ...(addr === undefined ? {} : { addr }),
    },
    `pairing code: ${code.text}\n` +
      `single use, valid until ${until}; one wrong guess burns it (1 in ${guessOdds(code.words.length).toLocaleString('en-US')} per guess)\n` +
      `on the other machine run: ${joinHint}\n` +
      (listening === undefined
        ? 'no listener of this home is running: start `clawpeer listen` before the other side joins'
        : `this home's listener (pid ${listening.pid}) holds it`),
  );
  if (!a.wait) return; // the listener holds the invite; directory claims last until they expire
  try {
    const paired = await waitForCodeOutcome(store, code, ctx.signal);
    ctx.out.emit(
      { event: 'paired', id: paired.id, name: paired.name, verify: paired.verify },
      `paired ${paired.name} ${paired.id}; it pinned this node too` +
        (a.verify ? `\nverification: ${paired.verify} (the joiner's \`pair join --verify\` shows the same)` : ''),
    );
  } finally {
    await store.cancel(code.nameplate).catch(() => undefined); // still open: withdrawn (Ctrl-C, expiry)
    await Promise.all(claims.map((c) => c.release().catch(() => undefined)));
  }
}

/**
 * Why the joiner will not reach this home's listener through the rendezvous the invite names,
 * if it will not: the joiner finds the code's number there, then asks the rendezvous for the
 * listener, which only knows a listener registered with it. Undefined when there is no
 * rendezvous or no listener, or the listener does not say (an older one).
 */
async function listenerOffRendezvous(
  ctx: CommandContext,
  listening: ListeningInfo | undefined,
): Promise<string | undefined> {
  const { rendezvous } = await ctx.reach();
  if (rendezvous === undefined || listening === undefined) return undefined;
  const { listenerStatus } = await import('./resident-client.js');
  const status = await listenerStatus(ctx.home.dir, ctx.signal).catch(() => 'no answer');
  if (typeof status === 'string' || status.rendezvous === undefined) return undefined;
  const named = formatHostPort(rendezvous);
  if (status.rendezvous !== null && (await sameServer(status.rendezvous, rendezvous))) return undefined;
  const registered =
    status.rendezvous === null ? 'is not registered with any rendezvous' : `is registered with ${status.rendezvous}`;
  return (
    `this home's listener (pid ${status.pid}) ${registered}, not ${named}: a joiner finds this code there but cannot ` +
    `reach the listener through it; restart the listener with: clawpeer --rendezvous ${named} listen ` +
    '(or set "rendezvous" in config.json)'
  );
}

/**
 * Whether the listener's rendezvous (as it reports it) is the server at `named`: the same port
 * and a host that resolves to an address in common (`localhost:7800` is `127.0.0.1:7800`).
 * A name that does not resolve counts as itself only.
 */
async function sameServer(reported: string, named: HostPort): Promise<boolean> {
  let other: HostPort;
  try {
    other = parseHostPort(reported);
  } catch {
    return false;
  }
  if (other.port !== named.port) return false;
  if (other.host.toLowerCase() === named.host.toLowerCase()) return true;
  const addresses = async (host: string): Promise<Set<string>> => {
    const found = await lookup(host, { all: true }).catch(() => []);
    return new Set(found.length > 0 ? found.map((a) => a.address) : [host]);
  };
  const [a, b] = await Promise.all([addresses(other.host), addresses(named.host)]);
  return [...a].some((x) => b.has(x));
}

export interface CodeJoinArgs {
  readonly code: ParsedCode;
  readonly address?: HostPort;
  readonly name?: string;
  readonly verify: boolean;
  readonly yes: boolean;
  readonly transport: unknown;
}

/** `pair join CODE` (short code). */
export async function joinWithCode(ctx: CommandContext, a: CodeJoinArgs): Promise<void> {
  const identity = await loadIdentity(ctx.home.identityKeyFile);
  const config = resolveConfig({ transport: a.transport });
  const log = ctx.log.child('pair');
  const own = concreteAddr(await readListening(ctx.home.dir));
  const confirm = a.verify
    ? async (verify: string): Promise<boolean> => {
        ctx.out.emit(
          { event: 'verify', verify },
          `verification: ${verify} (the inviter's \`pair invite --verify\` shows the same)`,
        );
        if (a.yes) return true;
        return askYes(`does the inviter show ${verify}? [y/N] `);
      }
    : undefined;
  const { entry, created, verify } = await joinByCode({
    identity,
    peers: new PeerStore(ctx.home.peersFile),
    code: a.code,
    directories:
      a.address === undefined
        ? nameplateDirectories({ home: ctx.home, identity, config, reach: await ctx.reach(), log })
        : [],
    config,
    log,
    signal: ctx.signal,
    ...(a.address === undefined ? {} : { address: a.address }),
    ...(a.name === undefined ? {} : { name: a.name }),
    ...(own === undefined ? {} : { ownAddrs: [own] }),
    ...(confirm === undefined ? {} : { confirm }),
  });
  ctx.out.emit(
    { event: 'paired', ...entry, alreadyPaired: !created, verify },
    created
      ? `paired ${entry.name} ${entry.id} at ${entry.addr ?? ''}; it pinned this node too`
      : `already paired with ${entry.name} ${entry.id}; its address is now ${entry.addr ?? ''} and it pinned this node too`,
  );
}

export async function askYes(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  // stdin at its end answers no (question() alone would wait forever).
  const closed = new Promise<string>((resolve) => rl.once('close', () => resolve('')));
  try {
    const answer = await Promise.race([rl.question(question), closed]);
    return /^y(es)?$/i.test(answer.trim());
  } catch {
    return false; // stdin closed: not confirmed
  } finally {
    rl.close();
  }
}
