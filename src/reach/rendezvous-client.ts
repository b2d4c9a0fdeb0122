// Asking a rendezvous server something over a traversal socket: send, retransmit a few times
// (UDP loses datagrams), take the first reply that matches, give up with UNREACHABLE naming
// the server. A refusal (rate limited, invalid) ends the wait at once with its reason.
import { ClawpeerError } from '../errors.js';
import { TRAVERSAL_TYPES, type TraversalMessage } from '../protocol/rendezvous-wire.js';
import type { HostPort } from '../transport/types.js';
import type { TraversalSocket } from './traversal-socket.js';

export interface AskOptions {
  /** Sends in all (the first and the retransmissions). */
  readonly tries?: number;
  /** Between sends, ms. */
  readonly intervalMs?: number;
  readonly signal?: AbortSignal;
}

export const formatAddress = (a: HostPort): string =>
  a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;

/** Sends `message` to `server` until a reply `match` accepts arrives (from the server). */
export function ask<T>(
  socket: TraversalSocket,
  server: HostPort,
  message: TraversalMessage,
  match: (m: TraversalMessage) => T | undefined,
  o: AskOptions = {},
): Promise<T> {
  const tries = o.tries ?? 4;
  const intervalMs = o.intervalMs ?? 250;
  const requestType = TRAVERSAL_TYPES[message.type];
  return new Promise<T>((resolve, reject) => {
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    const finish = (): void => {
      clearTimeout(timer);
      off();
      o.signal?.removeEventListener('abort', onAbort);
    };
    const off = socket.on((m, from) => {
      if (from.port !== server.port) return;
      if (m.type === 'refused' && m.request === requestType) {
        finish();
        reject(
          new ClawpeerError(
            'UNREACHABLE',
            `rendezvous ${formatAddress(server)} refused ${message.type}: ${m.reason}: ${m.text}`,
          ),
        );
        return;
      }
      const v = match(m);
      if (v === undefined) return;
      finish();
      resolve(v);
    });
    const onAbort = (): void => {
      finish();
      reject(new ClawpeerError('ABORTED', `${message.type} to rendezvous ${formatAddress(server)} aborted`));
    };
    const tick = (): void => {
      if (sent >= tries) {
        finish();
        reject(
          new ClawpeerError(
            'UNREACHABLE',
            `rendezvous ${formatAddress(server)} did not answer ${message.type} (${tries} tries over ${tries * intervalMs} ms)`,
          ),
        );
        return;
      }
      sent++;
      socket.send(message, server);
      timer = setTimeout(tick, intervalMs);
    };
    if (o.signal?.aborted === true) {
      onAbort();
      return;
    }
    o.signal?.addEventListener('abort', onAbort, { once: true });
    tick();
  });
}

/** Equal bytes. */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}
