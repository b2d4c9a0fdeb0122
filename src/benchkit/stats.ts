// Summary statistics for benchmark samples: one definition for the CLI bench and bench/ scripts.

/** Median of `xs` (mean of the two middle values for an even count); NaN when empty. */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}
