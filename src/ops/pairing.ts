// What `pair` uses to pair: long-code invites (home/pair-invite.ts, joined by pair-join.ts) and
// short codes (words and nameplates, pairing/code-words.ts; opened by pair-code-invite.ts, held
// by the listener, joined by pair-code-join.ts), and the nameplate directories of a command.
// Re-exports and the joins loaded on demand: importing this stays light.
export { DEFAULT_INVITE_TTL_MS, InviteStore, parseInviteCode } from '../home/pair-invite.js';
export { CodeInviteStore } from '../home/code-invites.js';
export {
  codeEntropyBits,
  DEFAULT_CODE_WORDS,
  guessOdds,
  MAX_CODE_WORDS,
  MIN_CODE_WORDS,
  parseCode,
  type ParsedCode,
} from '../pairing/code-words.js';
export { nameplateDirectories } from './nameplate-directories.js';
export { openCodeInvite, waitForCodeOutcome, type CodeInvitePaired } from './pair-code-invite.js';
import type { joinByInvite as JoinByInvite } from './pair-join.js';
import type { joinByCode as JoinByCode } from './pair-code-join.js';
import type { receiveByCode as ReceiveByCode } from './receive-by-code.js';

/** `pair join LONG_CODE` (pair-join.ts), loaded when asked for. */
export async function joinByInvite(...args: Parameters<typeof JoinByInvite>): ReturnType<typeof JoinByInvite> {
  const { joinByInvite: join } = await import('./pair-join.js');
  return join(...args);
}

/** `pair join CODE` (pair-code-join.ts), loaded when asked for. */
export async function joinByCode(...args: Parameters<typeof JoinByCode>): ReturnType<typeof JoinByCode> {
  const { joinByCode: join } = await import('./pair-code-join.js');
  return join(...args);
}

/** `receive CODE` (receive-by-code.ts), loaded when asked for. */
export async function receiveByCode(...args: Parameters<typeof ReceiveByCode>): ReturnType<typeof ReceiveByCode> {
  const { receiveByCode: receive } = await import('./receive-by-code.js');
  return receive(...args);
}
