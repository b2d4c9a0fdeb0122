// A PCP client (RFC 6887), MAP opcode only: asks the default gateway on UDP port 5351 to map a
// port toward this host. PCP is NAT-PMP's successor on the same port; some gateways speak only
// one of the two. A NAT-PMP-only gateway answers a PCP request with a version-0 "unsupported
// version" (PcpVersionError), and the caller falls back to NAT-PMP.
import type { Socket } from 'node:dgram';
import { openGatewaySocket } from './udp.js';
import { randomBytes } from 'node:crypto';
import { ClawpeerError } from '../errors.js';
import type { MappingProtocol } from './nat-pmp.js';

export const PCP_PORT = 5351;
const VERSION = 2;
const OP_MAP = 1;
/** As for NAT-PMP: 250 ms, doubling, four tries (RFC 6887 8.1.1 allows a faster start than 3 s). */
const FIRST_TIMEOUT_MS = 250;
const TRIES = 4;

const RESULTS: Record<number, string> = {
  1: 'unsupported version',
  2: 'not authorized',
  3: 'malformed request',
  4: 'unsupported opcode',
  5: 'unsupported option',
  6: 'malformed option',
  7: 'network failure',
  8: 'no resources',
  9: 'unsupported protocol',
  10: 'user exceeded quota',
  11: 'cannot provide the external port',
  12: 'address mismatch (a NAT between us and the gateway)',
  13: 'excessive remote peers',
};

/** The gateway answered in NAT-PMP (version 0): it does not speak PCP. */
export class PcpVersionError extends ClawpeerError {
  constructor(gateway: string) {
    super('UNREACHABLE', `PCP: gateway ${gateway} speaks NAT-PMP only`);
  }
}

export interface PcpMapping {
  readonly protocol: MappingProtocol;
  readonly internalPort: number;
  readonly externalAddress: string;
  readonly externalPort: number;
  readonly lifetimeS: number;
  /** Renewals and the delete must carry the same nonce (RFC 6887 11.1). */
  readonly nonce: Buffer;
}

const mappedV4 = (address: string): Buffer =>
  Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, ...address.split('.').map(Number)]);

export class PcpClient {
  private socket: Socket | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(readonly gateway: string) {}

  /**
   * Maps `internalPort` for `lifetimeS` seconds, suggesting `externalPort`; lifetime 0 deletes
   * (with the nonce of the mapping). A new nonce is made when none is given.
   */
  map(
    protocol: MappingProtocol,
    internalPort: number,
    externalPort: number,
    lifetimeS: number,
    nonce: Buffer = randomBytes(12),
    signal?: AbortSignal,
  ): Promise<PcpMapping> {
    const run = this.queue.then(() => this.exchange(protocol, internalPort, externalPort, lifetimeS, nonce, signal));
    this.queue = run.catch(() => undefined);
    return run;
  }

  close(): void {
    this.socket?.close();
    this.socket = undefined;
  }

  /** A socket connected to the gateway: its local address is the client address PCP wants. */
  private async open(): Promise<Socket> {
    this.socket ??= await openGatewaySocket({ host: this.gateway, port: PCP_PORT });
    return this.socket;
  }

  private async exchange(
    protocol: MappingProtocol,
    internalPort: number,
    externalPort: number,
    lifetimeS: number,
    nonce: Buffer,
    signal?: AbortSignal,
  ): Promise<PcpMapping> {
    const socket = await this.open();
    const request = Buffer.alloc(24 + 36);
    request[0] = VERSION;
    request[1] = OP_MAP;
    request.writeUInt32BE(lifetimeS, 4);
    mappedV4(socket.address().address).copy(request, 8);
    nonce.copy(request, 24, 0, 12);
    request[36] = protocol === 'udp' ? 17 : 6;
    request.writeUInt16BE(internalPort, 40);
    request.writeUInt16BE(externalPort, 42);
    mappedV4('0.0.0.0').copy(request, 44);
    return new Promise<PcpMapping>((resolve, reject) => {
      let tries = 0;
      let timer: NodeJS.Timeout | undefined;
      const finish = (err: Error | undefined, mapping?: PcpMapping): void => {
        clearTimeout(timer);
        socket.off('message', onMessage);
        signal?.removeEventListener('abort', onAbort);
        if (err !== undefined) reject(err);
        else resolve(mapping!);
      };
      const onAbort = (): void => finish(new ClawpeerError('ABORTED', 'PCP request aborted'));
      const onMessage = (msg: Buffer): void => {
        if (msg.length >= 4 && msg[0] === 0) {
          finish(new PcpVersionError(this.gateway));
          return;
        }
        if (msg.length < 24 + 36 || msg[0] !== VERSION || msg[1] !== 0x80 + OP_MAP) return;
        if (!msg.subarray(24, 36).equals(nonce.subarray(0, 12))) return; // another mapping's answer
        if (msg.readUInt16BE(40) !== internalPort || msg[36] !== request[36]) return;
        const result = msg[3]!;
        if (result !== 0) {
          finish(
            new ClawpeerError('UNREACHABLE', `PCP gateway ${this.gateway}: ${RESULTS[result] ?? `result ${result}`}`),
          );
          return;
        }
        const ip = msg.subarray(44, 60);
        const externalAddress = ip.subarray(0, 12).equals(mappedV4('0.0.0.0').subarray(0, 12))
          ? [...ip.subarray(12)].join('.')
          : '';
        if (lifetimeS > 0 && externalAddress === '') {
          finish(new ClawpeerError('PROTOCOL', 'PCP: the gateway mapped to an address that is not IPv4'));
          return;
        }
        finish(undefined, {
          protocol,
          internalPort,
          externalAddress,
          externalPort: msg.readUInt16BE(42),
          lifetimeS: msg.readUInt32BE(4),
          nonce,
        });
      };
      const send = (): void => {
        if (tries === TRIES) {
          finish(new ClawpeerError('TIMEOUT', `PCP: no answer from ${this.gateway}:${PCP_PORT}`));
          return;
        }
        socket.send(request);
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
