// How byte counts read in messages and progress (binary units, one decimal), how sizes
// typed on a command line are read, and how a name with control or bidi characters is shown.

/** `512 B`, `1.5 KiB`, `3.0 GiB`. */
export function human(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(u === 0 ? 0 : 1)} ${units[u]}`;
}

/** `1 file`, `3 files`: a count with its noun. */
export function count(n: number, noun: string, plural = `${noun}s`): string {
  return `${n} ${n === 1 ? noun : plural}`;
}

/** `42 s`, `5m 07s`, `2h 03m`, `3d 04h`: how long, to a unit's worth. */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  const two = (n: number): string => String(n).padStart(2, '0');
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${two(s % 60)}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${two(Math.floor((s % 3600) / 60))}m`;
  return `${Math.floor(s / 86400)}d ${two(Math.floor((s % 86400) / 3600))}h`;
}

const SIZE_UNITS: Readonly<Record<string, number>> = {
  '': 1,
  b: 1,
  k: 1024,
  kb: 1e3,
  kib: 1024,
  m: 1 << 20,
  mb: 1e6,
  mib: 1 << 20,
  g: 2 ** 30,
  gb: 1e9,
  gib: 2 ** 30,
  t: 2 ** 40,
  tb: 1e12,
  tib: 2 ** 40,
};

/**
 * "4096", "64K", "64KiB", "500MB", "1.5G" -> bytes, as rsync reads sizes (bare K/M/G/T and
 * KiB/MiB/GiB/TiB binary, KB/MB/GB/TB decimal); undefined for text that is not a size.
 */
export function parseSize(text: string): number | undefined {
  const m = /^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-z]*)\s*$/i.exec(text);
  const per = m?.[2] === undefined ? undefined : SIZE_UNITS[m[2].toLowerCase()];
  if (m?.[1] === undefined || per === undefined) return undefined;
  const bytes = Math.round(Number(m[1]) * per);
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}

/**
 * Control and bidi characters (C0, C1, U+2028/U+2029, the embeddings, overrides and isolates
 * U+202A-U+202E and U+2066-U+2069): a peer's text reaches terminals and logs, where they could
 * repaint or disguise output ("invoice\u202efdp.exe" reads as "invoiceexe.pdf").
 * protocol/messages.ts sanitizes error texts, protocol/wire-helpers.ts refuses them in listed paths.
 */
// eslint-disable-next-line no-control-regex
export const UNSAFE_TEXT = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
/** The same, global: for replace() only (test() on a global regex carries lastIndex between calls). */
export const UNSAFE_TEXTS = new RegExp(UNSAFE_TEXT.source, 'g');

/**
 * `text` with each control or bidi character escaped (`\\#012` below U+0100, else `\\u202e`):
 * how a path holding one is named in what a peer is to print (protocol/wire-helpers.ts
 * wirePathToShow refuses them raw), and in every line the CLI prints a path or name in. A text
 * without one is returned as it is. A backslash is left as it is, so escaping twice changes
 * nothing: a path a peer already escaped reads the same.
 */
export const escapeToShow = (text: string): string =>
  text.replace(UNSAFE_TEXTS, (ch) => {
    const unit = ch.charCodeAt(0);
    return unit < 0x100 ? `\\#${unit.toString(8).padStart(3, '0')}` : `\\u${unit.toString(16).padStart(4, '0')}`;
  });
