// Reads a small file whole, refusing one bigger than expected (a journal, a header, a state
// file), so a file grown by mistake or malice costs no more memory than the caller allows. Only
// a regular file is read: a FIFO put in its place would block the open (and a thread of the
// pool) until a writer came, hanging whoever awaits it (the listener's start); it is opened
// without blocking and refused.
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { ClawpeerError } from '../errors.js';

/** A whole regular file of at most `maxBytes` bytes (IO when it is bigger or no regular file). */
export async function readBounded(file: string, maxBytes: number): Promise<Buffer> {
  const handle = await open(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new ClawpeerError('IO', `${file} is not a regular file`);
    const { size } = st;
    if (size > maxBytes) throw new ClawpeerError('IO', `${file} is ${size} bytes, more than the ${maxBytes} expected`);
    const buf = Buffer.alloc(size);
    let filled = 0;
    while (filled < size) {
      const { bytesRead } = await handle.read(buf, filled, size - filled, filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    return buf.subarray(0, filled);
  } finally {
    await handle.close();
  }
}
