// Two nodes handshaken over the in-memory transport: the client's connection and handshake
// result (to build a PeerSession, caps as announced or altered), and the server's side.
import { generateIdentity } from '../../src/crypto/identity.js';
import { clientHandshake, serverHandshake } from '../../src/session/control-channel.js';
import { MemoryBackend } from '../../src/transport/memory.js';
import type { Connection, DuplexStream } from '../../src/transport/types.js';

export async function memoryHandshake(): Promise<{
  client: Connection;
  handshake: Awaited<ReturnType<typeof clientHandshake>>;
  server: Connection;
  /** The server's end of the control stream. */
  serverControl: DuplexStream;
}> {
  const backend = new MemoryBackend();
  const a = generateIdentity();
  const b = generateIdentity();
  const listener = await backend.listen({ host: '127.0.0.1', port: 0, identity: b });
  const accepted = listener.accept();
  const client = await backend.connect({ host: '127.0.0.1', port: listener.address.port, identity: a });
  const server = await accepted;
  if (server === null) throw new Error('no server connection');
  await listener.close();
  const serverControlAccepted = server.acceptStream();
  const clientSide = clientHandshake(await client.openStream(), {
    identity: a,
    expectedRemoteKey: b.publicKey,
    timeoutMs: 5000,
  });
  const serverControl = await serverControlAccepted;
  if (serverControl === null) throw new Error('no control stream');
  const [handshake] = await Promise.all([
    clientSide,
    serverHandshake(serverControl, { identity: b, expectedRemoteKey: a.publicKey, timeoutMs: 5000 }),
  ]);
  return { client, handshake, server, serverControl };
}
