// `receive`: what the sender offers, told before anything is written, and the question croc asks
// ("Accept 2 files and 1 folder (68.4 KiB)? (Y/n)"). Asked only of a person: with --yes, or when
// standard input is no terminal (a script, a pipe), the offer is taken without a question, as
// croc's --yes does. The answer defaults to yes; "n"/"no" declines (exit 6, DECLINED).
import { createInterface } from 'node:readline/promises';
import { count, escapeToShow, human } from '../format.js';

/** Names shown in the offer line at most; more are counted. */
export const OFFER_NAMES_SHOWN = 10;

export interface OfferShown {
  readonly paths: readonly string[];
  readonly files: number;
  readonly dirs: number;
  readonly bytes: number;
}

/** Whether to ask: only a person at a terminal who did not say --yes. */
export function shouldAskOffer(o: { readonly yes: boolean; readonly stdinIsTTY: boolean }): boolean {
  return !o.yes && o.stdinIsTTY;
}

/** "2 files and 1 directory (68.4 KiB)", "1 file (6 B)": a count of none left out (but "0 files"). */
export function offerCounts(offer: OfferShown): string {
  const dirs = offer.dirs > 0 ? count(offer.dirs, 'directory', 'directories') : undefined;
  const files = offer.files > 0 || dirs === undefined ? count(offer.files, 'file') : undefined;
  return `${[files, dirs].filter((c) => c !== undefined).join(' and ')} (${human(offer.bytes)})`;
}

/** The offer line: its counts, then its names (escaped: the sender chose them) when few. */
export function offerLine(offer: OfferShown): string {
  const shown = offer.paths.slice(0, OFFER_NAMES_SHOWN).map(escapeToShow).join(', ');
  const more = offer.paths.length > OFFER_NAMES_SHOWN ? ` and ${offer.paths.length - OFFER_NAMES_SHOWN} more` : '';
  return `offered: ${offerCounts(offer)}: ${shown}${more}`;
}

/** An answer to "(Y/n)": empty or yes accepts, anything else declines. */
export function acceptsAnswer(answer: string): boolean {
  return /^(y(es)?)?$/i.test(answer.trim());
}

/**
 * Asks `question` on the terminal (stderr, so --json's stdout stays records). Ctrl-C while it
 * waits stops the command as anywhere else (a terminal's readline would only pause); stdin at
 * its end declines.
 */
export async function askAccept(question: string, signal: AbortSignal): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  rl.on('SIGINT', () => process.kill(process.pid, 'SIGINT'));
  const closed = new Promise<undefined>((resolve) => rl.once('close', () => resolve(undefined)));
  try {
    const answer = await Promise.race([rl.question(question, { signal }), closed]);
    return answer !== undefined && acceptsAnswer(answer);
  } catch (err) {
    // Stopped while asking: the stop is reported (and told to the sender), not a no.
    if (signal.aborted) throw signal.reason ?? err;
    return false;
  } finally {
    rl.close();
  }
}
