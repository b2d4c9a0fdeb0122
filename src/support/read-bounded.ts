// Reads a small file whole, refusing one bigger than expected (a journal, a header), so a file
// grown by mistake or malice costs no more memory than the caller allows.
import { open } from 'node:fs/promises';
import { ClawpeerError } from '../errors.js';

/** A whole file of at most `maxBytes` bytes (IO when it is bigger). */
export async function readBounded(file: string, maxBytes: number): Promise<Buffer> {
  const handle = await open(file, 'r');
  try {
    const { size } = await handle.stat();
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
