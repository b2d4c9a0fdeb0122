// `clawpeer send`'s facade: light to import, the listener loads when a send starts.
import type { sendByCode as SendByCode } from './send-by-code.js';

export type { SendCode, SendOutcome, SentPath } from './send-by-code.js';

/** `send PATH...` (send-by-code.ts), loaded when asked for. */
export async function sendByCode(...args: Parameters<typeof SendByCode>): ReturnType<typeof SendByCode> {
  const { sendByCode: send } = await import('./send-by-code.js');
  return send(...args);
}
