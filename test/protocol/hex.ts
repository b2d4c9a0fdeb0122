// Annotated hex for pinned wire bytes (iroh-blobs style): whitespace is ignored, `#` starts a
// comment to the end of the line, and `hh*N` stands for the byte hh repeated N times.
export function hex(text: string): Uint8Array {
  const tokens = text
    .split('\n')
    .map((line) => line.replace(/#.*$/, ''))
    .join(' ')
    .split(/\s+/)
    .filter((token) => token.length > 0);
  const bytes: number[] = [];
  for (const token of tokens) {
    const repeat = /^([0-9a-f]{2})\*(\d+)$/i.exec(token);
    if (repeat !== null) {
      for (let i = 0; i < Number(repeat[2]); i++) bytes.push(parseInt(repeat[1] ?? '', 16));
      continue;
    }
    if (!/^([0-9a-f]{2})+$/i.test(token)) throw new Error(`bad hex token ${JSON.stringify(token)}`);
    for (let i = 0; i < token.length; i += 2) bytes.push(parseInt(token.slice(i, i + 2), 16));
  }
  return Uint8Array.from(bytes);
}

export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}
