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

/**
 * Control and bidi-override characters: a peer's text reaches terminals and logs, where escapes
 * could repaint or disguise output (messages.ts sanitizes error texts, wire-helpers.ts refuses
 * them in listed paths).
 */
// eslint-disable-next-line no-control-regex
export const UNSAFE_TEXT = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
/** The same, global: for replace() only (test() on a global regex carries lastIndex between calls). */
export const UNSAFE_TEXTS = new RegExp(UNSAFE_TEXT.source, 'g');

/**
 * `text` with each control or bidi character escaped (`\\#012` below U+0100, else `\\u202e`):
 * how a path holding one is named in what a peer is to print, which refuses them raw
 * (wire-helpers.ts wirePathToShow). A path without one is returned as it is.
 */
export const escapeToShow = (text: string): string =>
  text.replace(UNSAFE_TEXTS, (ch) => {
    const unit = ch.charCodeAt(0);
    return unit < 0x100 ? `\\#${unit.toString(8).padStart(3, '0')}` : `\\u${unit.toString(16).padStart(4, '0')}`;
  });
