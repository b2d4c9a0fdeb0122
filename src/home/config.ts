// Node settings: one complete defaults object, and resolveConfig() that validates a partial
// override, rejects unknown keys and freezes the result. Units are in the names.
import { ClawpeerError } from '../errors.js';
import { TEST_HOOKS } from '../support/test-hooks.js';

export type TransportChoice = 'quic' | 'tcp' | 'auto';
/** auto: offer zstd for DATA chunks when its binding loads (chunk-compression.ts); none: never. */
export type CompressionChoice = 'auto' | 'none';

export interface NodeConfig {
  /** quic, tcp (TLS over TCP for networks that block UDP), or auto (QUIC, then TCP). */
  readonly transport: TransportChoice;
  readonly compression: CompressionChoice;
  /** Connection idle timeout; also bounds a QUIC connect to a dead host. */
  readonly idleTimeoutMs: number;
  readonly keepAliveMs: number;
  /** How long auto waits for QUIC before trying TCP. */
  readonly connectTimeoutMs: number;
  readonly handshakeTimeoutMs: number;
  /** Largest frame accepted from a peer: checked before allocating. */
  readonly maxFrameBytes: number;
  readonly maxStreams: number;
  /** On SIGINT/SIGTERM, how long open connections get to finish before being cut. */
  readonly shutdownGraceMs: number;
  /**
   * Listener: a session with no control message and no transfer in progress for this long is
   * closed. Transport keep-alives keep an abandoned connection alive forever otherwise.
   */
  readonly sessionIdleTimeoutMs: number;
  /** Listener: connections served at once, all peers together; more are refused with a wire error. */
  readonly maxConnections: number;
  /** Listener: connections served at once for one peer key. */
  readonly maxConnectionsPerPeer: number;
}

export const DEFAULT_CONFIG: NodeConfig = Object.freeze({
  transport: 'auto',
  compression: 'auto',
  idleTimeoutMs: 15_000,
  keepAliveMs: 4_000,
  connectTimeoutMs: 5_000,
  handshakeTimeoutMs: 10_000,
  maxFrameBytes: 16 << 20, // 16 MiB
  maxStreams: 64,
  shutdownGraceMs: 3_000,
  sessionIdleTimeoutMs: 5 * 60_000, // 5 minutes
  maxConnections: 256,
  maxConnectionsPerPeer: 16,
});

/** The port `clawpeer listen` takes without --port (UDP for QUIC, TCP for the fallback). */
export const DEFAULT_LISTEN_PORT = 7700;

type NumericKey = Exclude<keyof NodeConfig, 'transport' | 'compression'>;

/** Inclusive [min, max] of every numeric setting (the CLI checks its flags against these too). */
export const CONFIG_LIMITS: Readonly<Record<NumericKey, readonly [number, number]>> = Object.freeze({
  idleTimeoutMs: [100, 3_600_000],
  keepAliveMs: [50, 600_000],
  connectTimeoutMs: [50, 600_000],
  handshakeTimeoutMs: [50, 600_000],
  maxFrameBytes: [1024, 256 << 20],
  maxStreams: [1, 1024],
  shutdownGraceMs: [0, 60_000],
  sessionIdleTimeoutMs: [100, 7 * 24 * 3_600_000], // up to a week
  maxConnections: [1, 65_536],
  maxConnectionsPerPeer: [1, 65_536],
});

/** A setting that is one of `allowed` (the default when absent); CONFIG_INVALID naming them otherwise. */
function choiceSetting<K extends 'transport' | 'compression'>(
  partial: Partial<Record<string, unknown>>,
  key: K,
  allowed: readonly NodeConfig[K][],
): NodeConfig[K] {
  const value = partial[key] ?? DEFAULT_CONFIG[key];
  if (!(allowed as readonly unknown[]).includes(value)) {
    const names = `${allowed.slice(0, -1).join(', ')} or ${String(allowed.at(-1))}`;
    throw new ClawpeerError('CONFIG_INVALID', `${key} must be ${names}, got ${JSON.stringify(value)}`);
  }
  return value as NodeConfig[K];
}

/** The defaults, with the shorter idle timeout (and keep-alive) a test may set (test-hooks.ts). */
function defaults(): NodeConfig {
  const idleTimeoutMs = TEST_HOOKS.idleTimeoutMs;
  return idleTimeoutMs === undefined
    ? DEFAULT_CONFIG
    : { ...DEFAULT_CONFIG, idleTimeoutMs, keepAliveMs: keepAliveFor(idleTimeoutMs) };
}

export function resolveConfig(partial: Partial<Record<string, unknown>> = {}): NodeConfig {
  const base = defaults();
  for (const key of Object.keys(partial)) {
    if (!(key in DEFAULT_CONFIG)) throw new ClawpeerError('CONFIG_INVALID', `unknown setting ${JSON.stringify(key)}`);
  }
  const out: Record<string, unknown> = {
    transport: choiceSetting(partial, 'transport', ['quic', 'tcp', 'auto']),
    compression: choiceSetting(partial, 'compression', ['auto', 'none']),
  };
  for (const [key, [min, max]] of Object.entries(CONFIG_LIMITS)) {
    const value = partial[key] ?? base[key as NumericKey];
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      throw new ClawpeerError(
        'CONFIG_INVALID',
        `${key} must be an integer in ${min}..${max}, got ${JSON.stringify(value)}`,
      );
    }
    out[key] = value;
  }
  if ((out['keepAliveMs'] as number) >= (out['idleTimeoutMs'] as number)) {
    throw new ClawpeerError(
      'CONFIG_INVALID',
      `keepAliveMs (${String(out['keepAliveMs'])}) must be below idleTimeoutMs (${String(out['idleTimeoutMs'])})`,
    );
  }
  return Object.freeze(out as unknown as NodeConfig);
}

/** A keep-alive interval that fits `idleTimeoutMs`: the default, or a third of the timeout when that is shorter. */
export function keepAliveFor(idleTimeoutMs: number): number {
  return Math.min(DEFAULT_CONFIG.keepAliveMs, Math.max(CONFIG_LIMITS.keepAliveMs[0], Math.floor(idleTimeoutMs / 3)));
}
