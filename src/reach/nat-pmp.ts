// A NAT-PMP client (RFC 6886): asks the default gateway, on UDP port 5351, for its external
// address and for port mappings toward this host. A small protocol, so our own code over
// node:dgram rather than a dependency. PCP (RFC 6887) gateways answer NAT-PMP version 0
// requests too (miniupnpd does), which is all we need.
import type { Socket } from 'node:dgram';
import { openGatewaySocket } from './udp.js';
import { readFile } from 'node:fs/promises';
import { ClawpeerError } from '../errors.js';

export const NAT_PMP_PORT = 5351;
/** RFC 6886 3.1: first retry after 250 ms, doubling; we give up after four tries (~3.75 s). */
const FIRST_TIMEOUT_MS = 250;
const TRIES = 4;

export type MappingProtocol = 'udp' | 'tcp';

export interface NatPmpMapping {
  readonly protocol: MappingProtocol;
  readonly internalPort: number;
  readonly externalPort: number;
  /** Seconds the gateway granted (0 after a delete). */
  readonly lifetimeS: number;
}

/** RFC 6886 3.5 result codes. */
const RESULTS: Record<number, string> = {
  1: 'unsupported version',
  2: 'not authorized or refused',
  3: 'network failure (the gateway has no external address)',
  4: 'out of resources',
  5: 'unsupported opcode',
};

/** The IPv4 gateway of the default route (Linux /proc/net/route), or undefined. */
export async function defaultGateway(): Promise<string | undefined> {
  let table: string;
  try {
    table = await readFile('/proc/net/route', 'utf8');
  } catch {
    return undefined;
  }
  for (const line of table.split('\n').slice(1)) {
    const [, destination, gateway, , , , , mask] = line.trim().split(/\s+/);
    if (destination !== '00000000' || mask !== '00000000' || gateway === undefined || gateway === '00000000') continue;
    const n = Number.parseInt(gateway, 16); // little-endian on the hosts we run on
    return [n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, n >>> 24].join('.');
  }
  return undefined;
}

export class NatPmpClient {
  private socket: Socket | undefined;
  /** One request at a time: answers carry no transaction id, only the opcode. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(readonly gateway: string) {}

  /** The gateway's external IPv4 address. */
  externalAddress(signal?: AbortSignal): Promise<string> {
    return this.request(Buffer.from([0, 0]), 0, signal).then((answer) => {
      if (answer.length < 12) throw new ClawpeerError('PROTOCOL', 'NAT-PMP: short external address answer');
      return [...answer.subarray(8, 12)].join('.');
    });
  }

  /**
   * Maps `internalPort` for `lifetimeS` seconds, asking for `externalPort` (the gateway may
   * grant another). A lifetime of 0 deletes the mapping (RFC 6886 3.4).
   */
  map(
    protocol: MappingProtocol,
    internalPort: number,
    externalPort: number,
    lifetimeS: number,
    signal?: AbortSignal,
  ): Promise<NatPmpMapping> {
    const op = protocol === 'udp' ? 1 : 2;
    const request = Buffer.alloc(12);
    request[0] = 0;
    request[1] = op;
    request.writeUInt16BE(internalPort, 4);
    request.writeUInt16BE(externalPort, 6);
    request.writeUInt32BE(lifetimeS, 8);
    return this.request(request, op, signal).then((answer) => {
      if (answer.length < 16) throw new ClawpeerError('PROTOCOL', 'NAT-PMP: short mapping answer');
      const granted = {
        protocol,
        internalPort: answer.readUInt16BE(8),
        externalPort: answer.readUInt16BE(10),
        lifetimeS: answer.readUInt32BE(12),
      };
      if (granted.internalPort !== internalPort)
        throw new ClawpeerError(
          'PROTOCOL',
          `NAT-PMP: answer for internal port ${granted.internalPort}, asked ${internalPort}`,
        );
      return granted;
    });
  }

  close(): void {
    this.socket?.close();
    this.socket = undefined;
  }

  private async open(): Promise<Socket> {
    this.socket ??= await openGatewaySocket();
    return this.socket;
  }

  private request(request: Buffer, op: number, signal?: AbortSignal): Promise<Buffer> {
    const run = this.queue.then(() => this.exchange(request, op, signal));
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Sends until the gateway answers this opcode, retrying as RFC 6886 3.1 says. */
  private async exchange(request: Buffer, op: number, signal?: AbortSignal): Promise<Buffer> {
    const socket = await this.open();
    return new Promise<Buffer>((resolve, reject) => {
      let tries = 0;
      let timer: NodeJS.Timeout | undefined;
      const finish = (err: Error | undefined, answer?: Buffer): void => {
        clearTimeout(timer);
        socket.off('message', onMessage);
        signal?.removeEventListener('abort', onAbort);
        if (err !== undefined) reject(err);
        else resolve(answer!);
      };
      const onAbort = (): void => finish(new ClawpeerError('ABORTED', 'NAT-PMP request aborted'));
      const onMessage = (msg: Buffer, from: { address: string; port: number }): void => {
        // Only the gateway's own answers count (RFC 6886 3.1).
        if (from.address !== this.gateway || from.port !== NAT_PMP_PORT || msg.length < 4) return;
        if (msg[0] !== 0 || msg[1] !== 128 + op) return;
        const result = msg.readUInt16BE(2);
        if (result !== 0)
          finish(
            new ClawpeerError(
              'UNREACHABLE',
              `NAT-PMP gateway ${this.gateway}: ${RESULTS[result] ?? `result ${result}`}`,
            ),
          );
        else finish(undefined, msg);
      };
      const send = (): void => {
        if (tries === TRIES) {
          finish(new ClawpeerError('TIMEOUT', `NAT-PMP: no answer from ${this.gateway}:${NAT_PMP_PORT}`));
          return;
        }
        socket.send(request, NAT_PMP_PORT, this.gateway);
        timer = setTimeout(send, FIRST_TIMEOUT_MS << tries++);
      };
      if (signal?.aborted) {
        onAbort();
        return;
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      socket.on('message', onMessage);
      send();
    });
  }
}
