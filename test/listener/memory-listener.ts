// A listener's request dispatch (listener/dispatch.ts serveSession) serving client sessions,
// both ends over the in-memory transport: no sockets, no QUIC, each test in milliseconds. A
// client session is a PeerSession as a dial makes it, for push/pull/sync/list to run over.
import { mkdir, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { generateIdentity } from '../../src/crypto/identity.js';
import { resolveConfig } from '../../src/home/config.js';
import type { Share } from '../../src/home/shares.js';
import { INTERNAL_DIR_NAME } from '../../src/store/internal-names.js';
import { DEFAULT_CAPABILITIES, type FeatureName } from '../../src/protocol/capabilities.js';
import { serveSession, type ServiceContext } from '../../src/listener/dispatch.js';
import { silentLogger } from '../../src/logger.js';
import { clientHandshake, serverHandshake } from '../../src/session/control-channel.js';
import { PeerSession } from '../../src/session/session.js';
import { MemoryBackend } from '../../src/transport/memory.js';

export interface MemoryListener {
  /** The client's first session with the listener. */
  readonly session: PeerSession;
  /** The listener node's id (the origin of what its syncs record). */
  readonly listenerId: string;
  /** The client node's id. */
  readonly clientId: string;
  /** Resolves when serveSession of the first session returns (the client closed, or stop()). */
  readonly served: Promise<void>;
  /** Another session of the same client with the same listener (a sync dials one per run). */
  connect(): Promise<PeerSession>;
  /** Closes the client sessions and stops the listener's side. */
  stop(): Promise<void>;
}

/** A fresh temp directory. */
export const tempDir = (prefix: string): Promise<string> => mkdtemp(path.join(tmpdir(), `clawpeer-${prefix}-`));

/** One read-write share `name` in a fresh directory. */
export async function shareIn(name: string, o: Partial<Share> = {}): Promise<Share> {
  const dir = await tempDir(`share-${name}`);
  // A folder service's share has its `.clawpeer/` marker from the folder's start (folder-markers.ts).
  if (o.keptFolder === true) await mkdir(path.join(dir, INTERNAL_DIR_NAME));
  return { name, dir, readOnly: false, ...o };
}

/** Starts serveSession for `shares` and returns the client's session with it. */
export async function memoryListener(
  shares: readonly Share[],
  extra: Partial<ServiceContext> = {},
  o: {
    readonly stillPaired?: () => Promise<boolean>;
    /** The client's features (an older peer's): the session has those the listener has too. */
    readonly clientFeatures?: readonly FeatureName[];
  } = {},
): Promise<MemoryListener> {
  const backend = new MemoryBackend();
  const client = generateIdentity();
  const listener = generateIdentity();
  const bound = await backend.listen({ host: '127.0.0.1', port: 0, identity: listener });
  const stopping = new AbortController();
  const ctx: ServiceContext = {
    shares,
    config: resolveConfig({}),
    log: silentLogger,
    nodeId: listener.nodeId,
    ...extra,
  };
  const open: { session: PeerSession; server: PeerSession; served: Promise<void> }[] = [];

  const connect = async (): Promise<{ session: PeerSession; served: Promise<void> }> => {
    const accepted = bound.accept();
    const clientConn = await backend.connect({ host: '127.0.0.1', port: bound.address.port, identity: client });
    const serverConn = await accepted;
    if (serverConn === null) throw new Error('no server connection');
    const control = serverConn.acceptStream();
    const clientSide = clientHandshake(await clientConn.openStream(), {
      identity: client,
      expectedRemoteKey: listener.publicKey,
      timeoutMs: 5000,
      ...(o.clientFeatures === undefined ? {} : { caps: { ...DEFAULT_CAPABILITIES, features: o.clientFeatures } }),
    });
    const serverStream = await control;
    if (serverStream === null) throw new Error('no control stream');
    const [clientResult, serverResult] = await Promise.all([
      clientSide,
      serverHandshake(serverStream, { identity: listener, expectedRemoteKey: client.publicKey, timeoutMs: 5000 }),
    ]);
    const session = new PeerSession(clientConn, clientResult);
    const server = new PeerSession(
      serverConn,
      serverResult,
      o.stillPaired === undefined ? {} : { stillPaired: o.stillPaired },
    );
    const served = serveSession(server, ctx, stopping.signal);
    served.catch(() => undefined); // a test awaits it when it cares; never an unhandled rejection
    open.push({ session, server, served });
    return { session, served };
  };

  const first = await connect();
  return {
    session: first.session,
    listenerId: listener.nodeId,
    clientId: client.nodeId,
    served: first.served,
    connect: async () => (await connect()).session,
    stop: async () => {
      for (const s of open) await s.session.close('done').catch(() => undefined);
      stopping.abort(new Error('test over'));
      for (const s of open) {
        await s.served.catch(() => undefined);
        await s.server.close('done').catch(() => undefined);
      }
      await bound.close();
    },
  };
}
