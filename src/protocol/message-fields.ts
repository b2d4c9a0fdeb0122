// The top-level fields of an encoded protobuf message, read without decoding it (messages.ts):
// the envelope's members are counted before protobufjs allocates anything, and the handshake
// verifies signatures over a body with its signature field stripped.
import protobuf from 'protobufjs/minimal.js';
import { ClawpeerError } from '../errors.js';

export interface FieldSpan {
  readonly field: number;
  readonly wireType: number;
  /** Whole field, tag included. */
  readonly start: number;
  readonly end: number;
  /** Value bytes of a length-delimited field. */
  readonly valueStart: number;
}

/** The top-level fields of a protobuf message, in wire order. Throws on malformed input. */
export function scanFields(bytes: Uint8Array): FieldSpan[] {
  const reader = protobuf.Reader.create(bytes);
  const spans: FieldSpan[] = [];
  while (reader.pos < reader.len) {
    const start = reader.pos;
    const tag = reader.uint32();
    const field = tag >>> 3;
    const wireType = tag & 7;
    if (field === 0) throw new RangeError(`field number 0 at offset ${start}`);
    let valueStart = reader.pos;
    if (wireType === 2) {
      const length = reader.uint32();
      valueStart = reader.pos;
      if (length > reader.len - reader.pos)
        throw new RangeError(`field ${field} length ${length} runs past the end at offset ${start}`);
      reader.pos += length;
    } else {
      reader.skipType(wireType);
    }
    spans.push({ field, wireType, start, end: reader.pos, valueStart });
  }
  return spans;
}

/** `message` (an encoded protobuf message) without any occurrence of top-level `field`. */
export function stripField(message: Uint8Array, field: number): Uint8Array {
  let spans: FieldSpan[];
  try {
    spans = scanFields(message);
  } catch (cause) {
    throw new ClawpeerError('PROTOCOL', `malformed protobuf message: ${(cause as Error).message}`, { cause });
  }
  const kept = spans.filter((s) => s.field !== field);
  const out = new Uint8Array(kept.reduce((n, s) => n + (s.end - s.start), 0));
  let at = 0;
  for (const s of kept) {
    out.set(message.subarray(s.start, s.end), at);
    at += s.end - s.start;
  }
  return out;
}
