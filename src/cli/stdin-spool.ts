// `push - PEER`: what is piped to standard input goes as one file (croc's `tar c d | croc send`).
// A push hashes its sources before it sends them, so the stream is spooled first, to a file in a
// private temp directory (mode 0700) that is removed when the push ends, whatever happened.
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { ClawpeerError } from '../errors.js';
import { LOCAL_NAME_RULES, normalizeSharePath } from '../transfer/paths.js';

/** The source word that means standard input. */
export const STDIN_SOURCE = '-';
/** The name the spooled file lands under without --stdin-name. */
export const DEFAULT_STDIN_NAME = 'stdin';

export interface StdinSpool {
  /** The spooled file, named as it should land. */
  readonly path: string;
  /** Removes the file and its directory (never throws). */
  remove(): Promise<void>;
}

/** The name standard input lands under: one plain path segment, checked as a peer would. */
export function stdinName(raw: string): string {
  let name: string;
  try {
    name = normalizeSharePath(raw, LOCAL_NAME_RULES); // a file made here, then pushed
  } catch (err) {
    throw new ClawpeerError('USAGE', `--stdin-name ${JSON.stringify(raw)}: ${(err as Error).message}`, { cause: err });
  }
  if (name.includes('/'))
    throw new ClawpeerError(
      'USAGE',
      `--stdin-name ${JSON.stringify(raw)}: a file name, not a path (the destination says where)`,
    );
  return name;
}

/**
 * Copies `input` to a new file `name` in a private temp directory. A terminal is refused: a push
 * would otherwise wait for typing that was never meant as data.
 */
export async function spoolStdin(
  name: string,
  input: NodeJS.ReadableStream & { readonly isTTY?: boolean } = process.stdin,
  signal?: AbortSignal,
): Promise<StdinSpool> {
  if (input.isTTY === true)
    throw new ClawpeerError(
      'USAGE',
      'push -: standard input is a terminal; pipe the data in (e.g. `tar c DIR | clawpeer push - PEER --stdin-name DIR.tar`)',
    );
  const dir = await mkdtemp(path.join(tmpdir(), 'clawpeer-stdin-'));
  const remove = (): Promise<void> => rm(dir, { recursive: true, force: true }).catch(() => undefined);
  const file = path.join(dir, name);
  try {
    await pipeline(input, createWriteStream(file, { flags: 'wx' }), ...(signal === undefined ? [] : [{ signal }]));
  } catch (err) {
    await remove();
    if (signal?.aborted === true)
      throw new ClawpeerError('ABORTED', 'push -: interrupted while reading standard input', { cause: err });
    throw new ClawpeerError('IO', `push -: cannot spool standard input to ${dir}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  return { path: file, remove };
}
