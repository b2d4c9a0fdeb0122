// A cuttable TCP link on loopback for the convergence test's folder mode: a forwarder on
// 127.0.0.1 that a node dials instead of its neighbour, so the harness can cut the link (every
// connection through it reset, new ones refused) and heal it, while both listeners run.
// Nodes in folder mode use the TCP transport (config.json), so one forwarder a direction
// carries everything between two nodes.
import { connect, createServer, type Server, type Socket } from 'node:net';

export class LinkForwarder {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  #port = 0;
  #cut = false;

  private constructor(targetPort: number) {
    this.#server = createServer((client) => this.#accept(client, targetPort));
  }

  /** Listens on 127.0.0.1 (any port) and forwards each connection to 127.0.0.1:`targetPort`. */
  static async start(targetPort: number): Promise<LinkForwarder> {
    const fwd = new LinkForwarder(targetPort);
    fwd.#port = await new Promise<number>((resolve, reject) => {
      fwd.#server.once('error', reject);
      fwd.#server.listen(0, '127.0.0.1', () => {
        const a = fwd.#server.address();
        if (a === null || typeof a === 'string') reject(new Error('forwarder has no port'));
        else resolve(a.port);
      });
    });
    return fwd;
  }

  /** The port a node dials instead of its neighbour's. */
  get port(): number {
    return this.#port;
  }

  get isCut(): boolean {
    return this.#cut;
  }

  #accept(client: Socket, targetPort: number): void {
    if (this.#cut) {
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(targetPort, '127.0.0.1');
    for (const s of [client, upstream]) {
      this.#sockets.add(s);
      s.on('close', () => this.#sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  }

  /** Resets every connection through the link and refuses new ones until heal(). */
  cut(): void {
    this.#cut = true;
    for (const s of this.#sockets) s.resetAndDestroy();
    this.#sockets.clear();
  }

  heal(): void {
    this.#cut = false;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
