// `pull PEER:SHARE/FILE -`: the file's bytes on standard output (croc's --stdout, `scp host:f
// /dev/stdout`), for `clawpeer pull alice:inbox/photos.tar - | tar x`. The pull lands in a
// private temp directory as any pull does (verified, whole); the file is opened, the directory
// removed, and the open file streamed out: a reader that goes away (`| head`, exit 141) or a
// kill leaves nothing behind.
import { createReadStream } from 'node:fs';
import { lstat, mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { ClawpeerError } from '../errors.js';

/** The destination word that means standard output. */
export const STDOUT_DESTINATION = '-';

/** Flags that write or print something a byte stream on stdout cannot carry. */
const REFUSED_WITH_STDOUT = ['json', 'dry-run', 'delete', 'itemize-changes', 'backup', 'backup-dir', 'chmod'] as const;

/** Checks a `pull ... -` command line: one remote file, nothing else on stdout. */
export function checkStdoutPull(remotePaths: readonly string[], args: Record<string, unknown>): void {
  if (remotePaths.length !== 1) throw new ClawpeerError('USAGE', 'pull to standard output (-) takes one remote file');
  if (remotePaths[0] === '')
    throw new ClawpeerError('USAGE', 'pull to standard output (-) takes a file, not a whole share: PEER:SHARE/PATH');
  const refused = REFUSED_WITH_STDOUT.find((flag) => args[flag] !== undefined && args[flag] !== false);
  if (refused !== undefined)
    throw new ClawpeerError(
      'USAGE',
      `--${refused} with the destination -: standard output carries the file's bytes only`,
    );
  const sized = (['min-size', 'max-size'] as const).find((flag) => args[flag] !== undefined);
  if (sized !== undefined)
    throw new ClawpeerError('USAGE', `--${sized} with the destination -: a pull to standard output names its one file`);
}

/**
 * Runs `pullInto(dir)` with a fresh private directory, then writes the one file it landed there
 * as `name` to `out`. A directory or symlink there is USAGE (it cannot be one byte stream).
 */
export async function pullToStdout(
  name: string,
  pullInto: (dir: string) => Promise<void>,
  out: NodeJS.WritableStream = process.stdout,
): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'clawpeer-stdout-'));
  let handle;
  try {
    await pullInto(dir);
    const landed = path.join(dir, name);
    const st = await lstat(landed);
    if (!st.isFile())
      throw new ClawpeerError(
        'USAGE',
        `${name} is a ${st.isDirectory() ? 'directory' : 'symlink'}: pull it into a directory, not to standard output`,
      );
    handle = await open(landed, 'r');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  // Streamed from the open file, which is already gone from the directory.
  try {
    await pipeline(createReadStream('', { fd: handle, autoClose: false }), out, { end: false });
  } finally {
    await handle.close();
  }
}
