// The short pairing code: `NAMEPLATE-word-word`, as magic wormhole's `7-guitarist-revenge`. The
// nameplate is a small number that names the invite (which inviter, among those a directory or
// a listener holds); it is not secret. The words are the secret: each drawn uniformly from the
// 1,295 words of code-word-list.ts (10.34 bits each). A PAKE (cpace.ts) turns them into a
// strong key, so an attacker gets one online guess per code and nothing to search offline.
import { ClawpeerError } from '../errors.js';
import { CODE_WORDS } from './code-word-list.js';

export const DEFAULT_CODE_WORDS = 2;
export const MIN_CODE_WORDS = 2;
export const MAX_CODE_WORDS = 4;
/** Nameplates are 1..MAX_NAMEPLATE (up to 6 digits). */
export const MAX_NAMEPLATE = 999_999;

const WORD_INDEX = new Map(CODE_WORDS.map((w, i) => [w, i]));

export interface ParsedCode {
  readonly nameplate: string;
  readonly words: readonly string[];
  /** The code as written canonically (lowercase, dashes): the PAKE's password. */
  readonly text: string;
}

/** Bits of secret in a code of `words` words. */
export function codeEntropyBits(words: number): number {
  return words * Math.log2(CODE_WORDS.length);
}

/** The odds of one guess at a code of `words` words: 1 in this many. */
export function guessOdds(words: number): number {
  return CODE_WORDS.length ** words;
}

/** A fresh code for `nameplate` of `words` words; `random(n)` gives n uniform random bytes. */
export function generateCode(nameplate: number, words: number, random: (n: number) => Uint8Array): ParsedCode {
  if (!Number.isInteger(words) || words < MIN_CODE_WORDS || words > MAX_CODE_WORDS) {
    throw new ClawpeerError('USAGE', `--words must be ${MIN_CODE_WORDS} to ${MAX_CODE_WORDS}, got ${words}`);
  }
  if (!Number.isInteger(nameplate) || nameplate < 1 || nameplate > MAX_NAMEPLATE)
    throw new RangeError(`nameplate ${nameplate} out of range`);
  const picked: string[] = [];
  // Rejection sampling over 16-bit draws: uniform over the list, no modulo bias.
  const limit = Math.floor(65536 / CODE_WORDS.length) * CODE_WORDS.length;
  while (picked.length < words) {
    const b = random(2);
    const v = ((b[0] ?? 0) << 8) | (b[1] ?? 0);
    if (v < limit) picked.push(CODE_WORDS[v % CODE_WORDS.length] ?? '');
  }
  return { nameplate: String(nameplate), words: picked, text: [String(nameplate), ...picked].join('-') };
}

/** A code as a person typed it: any case, dashes or spaces between parts. USAGE naming what is wrong. */
export function parseCode(input: string): ParsedCode {
  const parts = input
    .trim()
    .toLowerCase()
    .split(/[-\s]+/)
    .filter((p) => p !== '');
  const [nameplate, ...words] = parts;
  const example = 'like 7-acid-zebra, as `clawpeer pair invite` printed it';
  if (nameplate === undefined || !/^[1-9][0-9]{0,5}$/.test(nameplate)) {
    throw new ClawpeerError(
      'USAGE',
      `pairing code ${JSON.stringify(input)} must start with its number (the nameplate), ${example}`,
    );
  }
  if (words.length < MIN_CODE_WORDS || words.length > MAX_CODE_WORDS) {
    throw new ClawpeerError(
      'USAGE',
      `pairing code ${JSON.stringify(input)} has ${words.length} word(s) after its number; codes have ${MIN_CODE_WORDS} to ${MAX_CODE_WORDS}, ${example}`,
    );
  }
  const unknown = words.filter((w) => !WORD_INDEX.has(w));
  if (unknown.length > 0) {
    throw new ClawpeerError(
      'USAGE',
      `pairing code ${JSON.stringify(input)}: ${unknown.map((w) => JSON.stringify(w)).join(', ')} ${unknown.length === 1 ? 'is' : 'are'} not in the code word list; check the spelling`,
    );
  }
  return { nameplate, words, text: [nameplate, ...words].join('-') };
}
