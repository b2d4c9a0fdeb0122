// Option checks and option specs shared by several commands.
import { ClawpeerError } from '../errors.js';
import type { CompressionChoice } from '../node/config.js';

export const TRANSPORT_OPTION = {
  type: 'string',
  choices: ['quic', 'tcp', 'auto'],
  default: 'auto',
  describe: 'quic, tcp (TLS over TCP, when UDP is blocked) or auto (QUIC, then TCP)',
} as const;

export const COMPRESS_OPTION = {
  type: 'boolean',
  default: true,
  describe: 'zstd-compress chunks when both sides can and it saves space (--no-compress: never)',
} as const;

/** The config's compression setting from the --compress / --no-compress flag. */
export function compressionFrom(args: Record<string, unknown>): CompressionChoice {
  return args['compress'] === false ? 'none' : 'auto';
}

/** An integer flag within [min, max]; a USAGE error naming the flag otherwise. */
export function intOption(value: unknown, flag: string, min: number, max: number): number {
  const n = Number(value);
  // A number option yargs could not parse arrives as NaN (JSON would print it as null).
  const shown = typeof value === 'number' ? String(value) : JSON.stringify(value);
  if (!Number.isInteger(n) || n < min || n > max) throw new ClawpeerError('USAGE', `${flag} must be an integer in ${min}..${max}, got ${shown}`);
  return n;
}

export interface RemoteSpec {
  readonly peer: string;
  readonly share: string;
  readonly path: string;
}

export function parseRemote(text: string, requireShare: boolean): RemoteSpec {
  const colon = text.indexOf(':');
  const peer = colon < 0 ? text : text.slice(0, colon);
  const rest = colon < 0 ? '' : text.slice(colon + 1);
  if (peer === '') throw new ClawpeerError('USAGE', `invalid remote ${JSON.stringify(text)}: expected PEER[:SHARE[/PATH]]`);
  if (requireShare && rest === '') throw new ClawpeerError('USAGE', `invalid remote ${JSON.stringify(text)}: name the share, as PEER:SHARE[/PATH]`);
  const slash = rest.indexOf('/');
  const share = slash < 0 ? rest : rest.slice(0, slash);
  const sub = slash < 0 ? '' : rest.slice(slash + 1).replace(/\/+$/, '');
  return { peer, share, path: sub };
}
