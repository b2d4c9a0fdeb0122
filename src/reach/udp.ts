// Small node:dgram helpers the reach sockets share: bind with a clear error, big buffers.
import dgram from 'node:dgram';
import { ClawpeerError } from '../errors.js';

export function bindUdp(socket: dgram.Socket, host: string, port: number, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      const code = err.code === 'EADDRINUSE' ? 'ADDRESS_IN_USE' : err.code === 'EADDRNOTAVAIL' ? 'USAGE' : 'IO';
      reject(
        new ClawpeerError(code, `${what} cannot bind udp ${host}:${port}: ${err.code ?? err.message}`, { cause: err }),
      );
    };
    socket.once('error', onError);
    socket.bind({ address: host, port, exclusive: true }, () => {
      socket.off('error', onError);
      resolve();
    });
  });
}

/** Asks for `bytes` of socket buffer each way (the OS clamps to net.core.[rw]mem_max): a burst of QUIC packets must not drop here. */
export function setUdpBuffers(socket: dgram.Socket, bytes: number): void {
  try {
    socket.setRecvBufferSize(bytes);
    socket.setSendBufferSize(bytes);
  } catch {
    // keep the defaults
  }
}

export function closeUdp(socket: dgram.Socket): Promise<void> {
  return new Promise((resolve) => {
    try {
      socket.close(() => resolve());
    } catch {
      resolve(); // already closed
    }
  });
}

/**
 * A udp4 socket for asking a gateway (NAT-PMP, PCP): bound to any port, or connect()ed to
 * `to` (PCP wants the client's own address, which a connected socket knows). Later errors are
 * ignored: an ICMP error surfaces to the asker as a timeout.
 */
export async function openGatewaySocket(to?: { readonly host: string; readonly port: number }): Promise<dgram.Socket> {
  const socket = dgram.createSocket('udp4');
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    const ready = (): void => {
      socket.off('error', reject);
      resolve();
    };
    if (to === undefined) socket.bind(0, ready);
    else socket.connect(to.port, to.host, ready);
  });
  socket.on('error', () => undefined);
  return socket;
}
