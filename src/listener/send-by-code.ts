// `clawpeer send PATH...`: one transfer by a short spoken code, as croc and magic wormhole do,
// with no running listener and no lasting pairing. A listener of this process alone
// (Listener.start) serves the named paths, read-only and nothing beside them (Share.only), and
// holds one short code (a CodeInviteStore in a private temp directory, its nameplate in the
// same directories `pair invite` uses). The receiver proves the code by the same PAKE
// (code-pairing.ts) and is pinned in memory only (MemoryPeerStore: nothing in peers.json), then
// pulls each named path on one session; once it has them all (or left, declined, or failed) the
// listener closes and the temp directory goes. Names are matched in NFC, as the receiver names
// them (transfer/paths.ts), while each is served by its bytes on disk (home/shares.ts).
import { mkdtemp, realpath, rm, stat } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ClawpeerError, isClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { Identity } from '../crypto/identity.js';
import type { ReachConfig } from '../home/config-file.js';
import type { NodeConfig } from '../home/config.js';
import type { HomeLayout } from '../home/home.js';
import type { Share } from '../home/shares.js';
import { formatHostPort } from '../home/address.js';
import { CodeInviteStore } from '../home/code-invites.js';
import { MemoryPeerStore } from '../home/memory-peer-store.js';
import { ListenerActivity, type Activity, type ActivitySnapshot } from '../session/listener-activity.js';
import type { ParsedCode } from '../pairing/code-words.js';
import { listenerDirectories } from '../ops/nameplate-directories.js';
import { openCodeInvite, waitForCodeOutcome } from '../ops/pair-code-invite.js';
import { sleep } from '../support/timeouts.js';
import { Listener } from './listener.js';
import { listenerReachFor } from './home-listener.js';

/** How long the receiver has, once it proved the code, to connect for the transfer, ms. */
const RECEIVER_CONNECT_MS = 30_000;
/** After the last path went, how long the receiver has to close its session before we close ours, ms. */
const RECEIVER_CLOSE_GRACE_MS = 2_000;
const POLL_MS = 50;

export interface SendByCodeOptions {
  readonly identity: Identity;
  /** The paths to send, as typed: files, directories, symlinks to them. */
  readonly paths: readonly string[];
  readonly home: HomeLayout;
  readonly reach: ReachConfig;
  readonly config: NodeConfig;
  readonly host: string;
  readonly port: number;
  readonly words: number;
  readonly ttlMs: number;
  readonly log: Logger;
  readonly signal: AbortSignal;
  /** The code is open: the command prints it. */
  readonly onCode: (c: SendCode) => void;
  /** The receiver proved the code (its node id, the verification string). */
  readonly onReceiver?: (r: { readonly id: string; readonly verify: string }) => void;
  /** One named path was pulled (or failed). */
  readonly onSent?: (s: SentPath) => void;
}

export interface SendCode {
  readonly code: ParsedCode;
  readonly expiresAt: number;
  readonly port: number;
  /** A concrete HOST:PORT of the temporary listener (none when bound to a wildcard address). */
  readonly addr?: string;
  /** Where the receiver may find the code without --addr (lan, rendezvous). */
  readonly directories: readonly string[];
}

export interface SentPath {
  readonly path: string;
  readonly ok: boolean;
  readonly files: number;
  readonly bytes: number;
}

export interface SendOutcome {
  readonly receiver: string;
  readonly verify: string;
  readonly sent: readonly SentPath[];
  readonly files: number;
  readonly bytes: number;
}

/** Runs the whole send: open, wait for the receiver, serve its pulls, close. */
export async function sendByCode(o: SendByCodeOptions): Promise<SendOutcome> {
  const shares = await sharesOfPaths(o.paths);
  const tmp = await mkdtemp(path.join(tmpdir(), 'clawpeer-send-'));
  try {
    return await sendFrom(o, shares, tmp);
  } finally {
    await rm(tmp, { recursive: true, force: true }).catch(() => undefined);
  }
}

async function sendFrom(o: SendByCodeOptions, shares: Share[], tmp: string): Promise<SendOutcome> {
  const { identity, reach, config, log } = o;
  const codeInvites = new CodeInviteStore(path.join(tmp, 'invites'));
  const peers = new MemoryPeerStore(path.join(tmp, 'peers.json'));
  const named = new Map<string, SentPath | undefined>(
    shares.flatMap((s) => (s.only ?? []).map((n) => [`${s.name}/${n.normalize('NFC')}`, undefined] as const)),
  );
  const activity = new SendActivity((what, ok, done) => {
    const key = `${what.share}/${what.path.replace(/^\/+|\/+$/g, '').normalize('NFC')}`;
    if (what.kind !== 'pull' || !named.has(key) || named.get(key)?.ok === true) return;
    const sent = { path: key.slice(key.indexOf('/') + 1), ok, ...done };
    named.set(key, sent);
    o.onSent?.(sent);
  });
  const { directories, openNameplates } = listenerDirectories({
    home: o.home,
    identity,
    config,
    reach,
    log,
    listenHost: o.host,
  });
  const startReach = listenerReachFor(reach, identity, log);
  // Each peer's last session error: a receiver's parting word (it declined, it has no room).
  const parting = new Map<string, unknown>();
  const listener = await Listener.start({
    onSessionFailed: (peerId, err) => parting.set(peerId, err),
    identity,
    peers,
    codeInvites,
    shares,
    host: o.host,
    port: o.port,
    config,
    log,
    activity,
    openNameplates,
    ...(reach.lanDiscovery
      ? {
          lan: {
            port: reach.lanDiscoveryPort,
            ...(reach.lanInterfaces === undefined ? {} : { interfaces: reach.lanInterfaces }),
          },
        }
      : {}),
    ...(startReach === undefined ? {} : { startReach }),
  });
  try {
    const { code, expiresAt, claims } = await openCodeInvite({
      store: codeInvites,
      directories,
      words: o.words,
      ttlMs: o.ttlMs,
      log,
      signal: o.signal,
      random: (n) => new Uint8Array(randomBytes(n)),
    });
    let paired;
    try {
      const first = listener.bound[0];
      const concrete = first !== undefined && first.host !== '0.0.0.0' && first.host !== '::';
      o.onCode({
        code,
        expiresAt,
        port: listener.port,
        ...(concrete ? { addr: formatHostPort({ host: first.host, port: first.port }) } : {}),
        directories: directories.map((d) => d.name),
      });
      paired = await waitForCodeOutcome(codeInvites, code, o.signal, 'nothing was sent; run `clawpeer send` again');
    } finally {
      await codeInvites.cancel(code.nameplate).catch(() => undefined);
      await Promise.all(claims.map((c) => c.release().catch(() => undefined)));
    }
    o.onReceiver?.({ id: paired.id, verify: paired.verify });
    await waitForPulls(listener, paired.id, named, o.signal, () => parting.get(paired.id));
    const sent = [...named.values()].filter((s): s is SentPath => s !== undefined);
    return {
      receiver: paired.id,
      verify: paired.verify,
      sent,
      files: sent.reduce((n, s) => n + s.files, 0),
      bytes: sent.reduce((n, s) => n + s.bytes, 0),
    };
  } finally {
    await listener.close();
  }
}

/**
 * Waits until the receiver pulled every named path, then for it to close its session (briefly).
 * Fails when it left before (saying why when it told: DECLINED when it declined), never came,
 * or the command was stopped.
 */
async function waitForPulls(
  listener: Listener,
  receiver: string,
  named: ReadonlyMap<string, SentPath | undefined>,
  signal: AbortSignal,
  partingWord: () => unknown,
): Promise<void> {
  const connectBy = Date.now() + RECEIVER_CONNECT_MS;
  let seen = false;
  const allSent = (): boolean => [...named.values()].every((s) => s?.ok === true);
  const connected = (): boolean => listener.connectedPeers().some((p) => p.id === receiver);
  for (;;) {
    if (signal.aborted) throw (signal.reason as Error | undefined) ?? new ClawpeerError('INTERRUPTED');
    if (allSent()) break;
    // A session that came and went between two polls (a refusal is quick) left its parting word.
    if (connected()) seen = true;
    else if (seen || partingWord() !== undefined) {
      const done = [...named.values()].filter((s) => s?.ok === true).length;
      const word = partingWord();
      // DECLINED is an honest receive's word before any pull; after one, what went is told.
      const untouched = [...named.values()].every((s) => s === undefined);
      if (isClawpeerError(word, 'DECLINED') && untouched)
        throw new ClawpeerError('DECLINED', `the receiver ${receiver} declined the offer: nothing was sent`);
      const said =
        word instanceof ClawpeerError && word.wire !== undefined ? `, saying "${peerText(word.message)}"` : '';
      throw new ClawpeerError(
        'PARTIAL',
        `the receiver ${receiver} left after ${done} of ${named.size} paths${said}: the rest was not sent`,
      );
    } else if (Date.now() > connectBy)
      throw new ClawpeerError(
        'TIMEOUT',
        `the receiver ${receiver} proved the code but did not connect for the transfer within ${RECEIVER_CONNECT_MS / 1000} s`,
      );
    await sleep(POLL_MS);
  }
  const closeBy = Date.now() + RECEIVER_CLOSE_GRACE_MS;
  while (connected() && Date.now() < closeBy && !signal.aborted) await sleep(POLL_MS);
}

/** A peer's error text without errorFromWire's "peer: " prefix. */
function peerText(message: string): string {
  return message.replace(/^peer: /, '');
}

type ActivityEnd = (
  what: Pick<ActivitySnapshot, 'peer' | 'kind' | 'share' | 'path'>,
  ok: boolean,
  moved: { files: number; bytes: number },
) => void;

/** The listener's activity registry, telling each activity's end with what it moved. */
class SendActivity extends ListenerActivity {
  readonly #onEnd: ActivityEnd;

  constructor(onEnd: ActivityEnd) {
    super();
    this.#onEnd = onEnd;
  }

  override begin(what: Pick<ActivitySnapshot, 'peer' | 'kind' | 'share' | 'path'>, nowMs = Date.now()): Activity {
    const inner = super.begin(what, nowMs);
    const moved = { files: 0, bytes: 0 };
    return {
      ...inner,
      addBytes: (n) => {
        moved.bytes += n;
        inner.addBytes(n);
      },
      setFiles: (n) => {
        moved.files = n;
        inner.setFiles(n);
      },
      report: (p) => {
        moved.bytes = p.bytes;
        moved.files = p.files;
        inner.report(p);
      },
      end: (ok) => {
        inner.end(ok);
        this.#onEnd(what, ok, moved);
      },
    };
  }
}

/**
 * One read-only share per parent directory of the named paths, each serving only those names
 * (`send-1`, `send-2`, ...). Refuses a path that does not exist, the root, and two paths that
 * would land under one name (in NFC, as the receiver names them). Each name is kept as it is
 * on disk (its bytes, NFD or not): home/shares.ts maps a receiver's NFC name to it.
 */
export async function sharesOfPaths(paths: readonly string[]): Promise<Share[]> {
  if (paths.length === 0) throw new ClawpeerError('USAGE', 'send needs at least one PATH');
  const byDir = new Map<string, string[]>();
  const names = new Map<string, string>();
  for (const typed of paths) {
    let real: string;
    try {
      real = await realpath(typed);
      await stat(real);
    } catch (err) {
      throw new ClawpeerError('PATH_INVALID', `cannot send ${typed}: ${(err as Error).message}`, { cause: err });
    }
    const name = path.basename(real);
    if (name === '' || path.dirname(real) === real)
      throw new ClawpeerError('USAGE', `cannot send ${typed}: name a file or directory, not the root`);
    // Keyed in NFC: the receiver lands both forms of a name (NFD "e\u0301", NFC "\u00e9") as one.
    const other = names.get(name.normalize('NFC'));
    if (other !== undefined)
      throw new ClawpeerError(
        'USAGE',
        other === real
          ? `${typed} is named twice`
          : `${other} and ${real} would both land as ${name}: send them separately`,
      );
    names.set(name.normalize('NFC'), real);
    const dir = path.dirname(real);
    byDir.set(dir, [...(byDir.get(dir) ?? []), name]);
  }
  return [...byDir].map(([dir, only], i) => ({ name: `send-${i + 1}`, dir, readOnly: true, only }));
}
