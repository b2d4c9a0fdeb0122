// Bounded concurrency over a list: the one helper for "do these, at most N at once".

/**
 * Runs `fn` over `items` with at most `limit` calls in flight, in list order. Every item is
 * tried even after a failure; then the first error is thrown.
 */
export async function forEachBounded<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  let firstError: unknown;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      try {
        await fn(items[index]!, index);
      } catch (err) {
        if (!failed) firstError = err;
        failed = true;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failed) throw firstError;
}
