// The listener's port mappings, as its rendezvous side uses them: the QUIC and TCP listener
// ports (announced role `listen`: a dialer connects to them straight, path `mapped`) and, once
// it is open, the traversal socket's port (role `mux`: with it mapped, this home punches as a
// full cone would, even toward a symmetric NAT). Nothing for a listener bound to loopback only.
import type { Logger } from '../logger.js';
import type { AnnouncedAddress } from '../protocol/announcement.js';
import { startPortMapping, type PortMapping, type PortMappingOptions } from './port-mapping.js';

export interface BoundPort {
  readonly transport: string;
  readonly host: string;
  readonly port: number;
}

export interface ListenerPortMapping {
  /** Every mapped address to announce now (listen ports first, then the traversal socket's). */
  mapped(): AnnouncedAddress[];
  /** Maps the traversal socket's UDP port too (call once, when it is bound). */
  mapMux(port: number): void;
  /** Resolves when the listener ports' first attempt is over, or after `waitMs`, whichever is first. */
  settled(waitMs: number): Promise<void>;
  close(): Promise<void>;
}

const LOOPBACK = /^(127\.|::1$|localhost$|::ffff:127\.)/i;

/**
 * Starts mapping the listener's bound ports; undefined when there is nothing worth mapping
 * (no QUIC transport, or bound to loopback). `onChange` is told whenever `mapped()` changes:
 * the place to register the announcement again.
 */
export function startListenerPortMapping(o: {
  bound: readonly BoundPort[];
  log: Logger;
  onChange?: () => void;
  protocols?: PortMappingOptions['protocols'];
}): ListenerPortMapping | undefined {
  const quic = o.bound.find((b) => b.transport === 'quic');
  if (quic === undefined || LOOPBACK.test(quic.host)) return undefined;
  const tcp = o.bound.find((b) => b.transport === 'tcp');
  const common = {
    log: o.log,
    ...(o.onChange === undefined ? {} : { onChange: () => o.onChange?.() }),
    ...(o.protocols === undefined ? {} : { protocols: o.protocols }),
  };
  const listen = startPortMapping({
    udpPort: quic.port,
    ...(tcp === undefined ? {} : { tcpPort: tcp.port }),
    role: 'listen',
    ...common,
  });
  let mux: PortMapping | undefined;
  let closing = false;
  return {
    mapped: () => [...listen.mapped(), ...(mux?.mapped() ?? [])],
    mapMux: (port) => {
      if (mux !== undefined || closing) return;
      mux = startPortMapping({ udpPort: port, role: 'mux', ...common });
    },
    settled: (waitMs) =>
      Promise.race([listen.ready, new Promise<void>((resolve) => setTimeout(resolve, waitMs).unref())]),
    close: async () => {
      closing = true;
      await Promise.all([listen.close(), mux?.close()]);
    },
  };
}
