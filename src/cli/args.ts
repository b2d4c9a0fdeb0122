// Option checks and option specs shared by several commands.
import { ClawpeerError } from '../errors.js';

export const TRANSPORT_OPTION = {
  type: 'string',
  choices: ['quic', 'tcp', 'auto'],
  default: 'auto',
  describe: 'quic, tcp (TLS over TCP, when UDP is blocked) or auto (QUIC, then TCP)',
} as const;

/** An integer flag within [min, max]; a USAGE error naming the flag otherwise. */
export function intOption(value: unknown, flag: string, min: number, max: number): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw new ClawpeerError('USAGE', `${flag} must be an integer in ${min}..${max}, got ${JSON.stringify(value)}`);
  return n;
}
