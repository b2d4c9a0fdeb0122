// The registry of transport backends: pick one by name, or list those this runtime can run,
// best first. Backends load lazily (the quinn native binding only when QUIC is wanted).
//
// Preference order: quic (quinn, primary) > node-quic (Node's own, when built in) > tcp
// (TLS over TCP, for networks that block UDP) > memory (in-process, tests only).
// Non-goals: fallback policy (the node layer decides when to fall back from quic to tcp).
import { ClawpeerError } from '../errors.js';
import type { TransportBackend, TransportName } from './types.js';

export const TRANSPORT_NAMES: readonly TransportName[] = Object.freeze(['quic', 'node-quic', 'tcp', 'memory']);

export function isTransportName(text: string): text is TransportName {
  return (TRANSPORT_NAMES as readonly string[]).includes(text);
}

/** The backend called `name` (it may still be unavailable: check available()). */
export async function backendByName(name: string): Promise<TransportBackend> {
  if (!isTransportName(name)) {
    throw new ClawpeerError(
      'USAGE',
      `unknown transport ${JSON.stringify(name)} (expected one of ${TRANSPORT_NAMES.join(', ')})`,
    );
  }
  switch (name) {
    case 'quic':
      return new (await import('./quinn.js')).QuinnBackend();
    case 'node-quic':
      return new (await import('./node-quic.js')).NodeQuicBackend();
    case 'tcp':
      return (await import('./tls.js')).tlsBackend;
    case 'memory':
      return new (await import('./memory.js')).MemoryBackend();
    default: {
      const unreachable: never = name;
      throw new Error(`unhandled transport ${String(unreachable)}`);
    }
  }
}

/**
 * Backends this runtime can run, best first. For quic this really loads the native binding,
 * so a platform without a prebuilt binary is reported as unavailable, not discovered at connect.
 */
export async function availableBackends(options: { includeTestOnly?: boolean } = {}): Promise<TransportBackend[]> {
  const out: TransportBackend[] = [];
  for (const name of TRANSPORT_NAMES) {
    if (name === 'memory' && options.includeTestOnly !== true) continue;
    let backend: TransportBackend;
    try {
      backend = await backendByName(name);
    } catch {
      continue; // its module failed to load: not available here
    }
    if (!backend.available()) continue;
    if (name === 'quic') {
      const { loadQuinnNapi } = await import('./quinn-napi.js');
      const loaded = await loadQuinnNapi().then(
        () => true,
        () => false,
      );
      if (!loaded) continue;
    }
    out.push(backend);
  }
  return out;
}
