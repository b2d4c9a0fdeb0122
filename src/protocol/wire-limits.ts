// Shapes and limits the wire format owns that the cores above it reuse (transfer/exclude.ts,
// transfer/paths.ts): a message decoder checks them without importing the code that applies them.

/** Exclude patterns or filter rules one request may carry. */
export const MAX_EXCLUDE_PATTERNS = 1024;

/** One rule as given: `--include` (or an ignore file's `!pattern`) includes, `--exclude` excludes. */
export interface FilterRule {
  readonly pattern: string;
  readonly include: boolean;
}

// An unpaired UTF-16 surrogate cannot be encoded as UTF-8: the name would change on the way to disk.
export const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

// Control and bidi characters (UNSAFE_TEXT) and their escape for what is shown (escapeToShow)
// are in the shared format.ts: the CLI escapes what it prints the same way.
