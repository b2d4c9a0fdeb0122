// Cutting a tree's manifest into Manifest messages that each fit the negotiated frame size.
import { ClawpeerError } from '../errors.js';
import {
  type ManifestEntry,
  type ManifestMessage,
  CONTROL_FIELDS,
  MAX_MANIFEST_ENTRIES_PER_MESSAGE,
} from './message-types.js';
import { pb, UINT32_MAX, checkUint, quote } from './wire-helpers.js';
import { manifestEntryToWire } from './transfer-wire.js';

function varintBytes(value: number): number {
  let n = 1;
  for (let v = value; v >= 0x80; v = Math.floor(v / 0x80)) n++;
  return n;
}

/** Envelope tag of Control.manifest (field 18, LEN): two varint bytes. */
const MANIFEST_ENVELOPE_TAG_BYTES = varintBytes((CONTROL_FIELDS.manifest << 3) | 2);
/** `last = true` inside Manifest: tag byte + one varint byte. */
const MANIFEST_LAST_FIELD_BYTES = 2;

/** Encoded bytes of one entry inside a Manifest message: tag, length prefix and body. Validates it. */
export function manifestEntryWireBytes(entry: ManifestEntry): number {
  const body = pb.ManifestEntry.encode(manifestEntryToWire(entry)).finish().length;
  return 1 + varintBytes(body) + body;
}

/** Control envelope bytes of a Manifest whose entries take `entryBytes` (sum of manifestEntryWireBytes). */
function manifestEnvelopeBytes(transferId: number, entryBytes: number): number {
  const inner = (transferId === 0 ? 0 : 1 + varintBytes(transferId)) + entryBytes + MANIFEST_LAST_FIELD_BYTES;
  return MANIFEST_ENVELOPE_TAG_BYTES + varintBytes(inner) + inner;
}

/**
 * Cuts a tree's entries, in order, into Manifest messages whose Control envelopes (the CONTROL
 * frame body) each take at most `maxBytes` (pass the session's maxFrameBytes) and hold at most
 * MAX_MANIFEST_ENTRIES_PER_MESSAGE entries. Only the final batch has last = true; an empty list
 * gives one empty batch with last = true. An entry too large for a frame on its own (a file
 * with very many chunks) is a FRAME_TOO_LARGE ClawpeerError naming its path and chunk count.
 * Entries are validated as encodeControl would (RangeError on a malformed one).
 */
export function splitManifest(
  transferId: number,
  entries: readonly ManifestEntry[],
  maxBytes: number,
): ManifestMessage[] {
  checkUint('transferId', transferId, UINT32_MAX);
  checkUint('maxBytes', maxBytes, Number.MAX_SAFE_INTEGER);
  const batches: ManifestMessage[] = [];
  let batch: ManifestEntry[] = [];
  let batchBytes = 0;
  for (const entry of entries) {
    const bytes = manifestEntryWireBytes(entry);
    if (manifestEnvelopeBytes(transferId, bytes) > maxBytes) {
      throw new ClawpeerError(
        'FRAME_TOO_LARGE',
        `manifest entry ${quote(entry.path)} with ${entry.chunkLengths.length} chunks needs ${manifestEnvelopeBytes(transferId, bytes)} bytes, more than the ${maxBytes}-byte frame limit`,
      );
    }
    if (
      batch.length === MAX_MANIFEST_ENTRIES_PER_MESSAGE ||
      manifestEnvelopeBytes(transferId, batchBytes + bytes) > maxBytes
    ) {
      batches.push({ type: 'manifest', transferId, entries: batch, last: false });
      batch = [];
      batchBytes = 0;
    }
    batch.push(entry);
    batchBytes += bytes;
  }
  batches.push({ type: 'manifest', transferId, entries: batch, last: true });
  return batches;
}
