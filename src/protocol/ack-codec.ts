// ACK frame bodies: the data receiver's cumulative acknowledgement for one data stream.
//
// Goals: a fixed-size binary body (no protobuf on the data plane, like the DATA header), so a
// sender can parse acks at line rate and a malformed one is refused by its length alone.
// Non-goals: framing (frame-codec.ts delimits ACK frames), window accounting (src/transfer/
// send-window.ts decides what an ack releases), encryption (ACKs travel on the QUIC/TLS stream,
// which already protects them; they carry no payload).
//
// ACK body (12 bytes, big-endian):
//   offset 0  u32  streamId          the data stream being acknowledged
//   offset 4  u64  ackedThroughSeq   every DATA frame with sequence <= this arrived and was
//                                    verified (cumulative; < 2^53)
// A receiver that has verified nothing yet sends no ACK (there is no "none" value).
import { ClawpeerError } from '../errors.js';
import { FRAME_HEADER_BYTES, writeFrameHeader } from './frame-codec.js';

export const ACK_BODY_BYTES = 12;
/** A whole ACK frame: 5-byte frame header + 12-byte body. */
export const ACK_FRAME_BYTES = FRAME_HEADER_BYTES + ACK_BODY_BYTES;

export interface AckBody {
  readonly streamId: number;
  readonly ackedThroughSeq: number;
}

/** A complete ACK frame (frame header + body), ready to write. RangeError on unencodable values. */
export function encodeAckFrame(streamId: number, ackedThroughSeq: number): Uint8Array {
  if (!Number.isInteger(streamId) || streamId < 0 || streamId > 0xffff_ffff) {
    throw new RangeError(`ACK streamId must be an integer in 0..2^32-1, got ${streamId}`);
  }
  if (!Number.isSafeInteger(ackedThroughSeq) || ackedThroughSeq < 0) {
    throw new RangeError(`ACK ackedThroughSeq must be an integer in 0..2^53-1, got ${ackedThroughSeq}`);
  }
  // One receiver sends one per chunk: frame header and body in one (pooled) allocation.
  const frame = Buffer.allocUnsafe(ACK_FRAME_BYTES);
  writeFrameHeader(frame, 0, 'ack', ACK_BODY_BYTES);
  frame.writeUInt32BE(streamId, FRAME_HEADER_BYTES);
  frame.writeBigUInt64BE(BigInt(ackedThroughSeq), FRAME_HEADER_BYTES + 4);
  return frame;
}

/** Parses an ACK frame body; PROTOCOL error on a wrong length or a sequence of 2^53 or more. */
export function decodeAckBody(body: Uint8Array): AckBody {
  if (body.length !== ACK_BODY_BYTES) {
    throw new ClawpeerError('PROTOCOL', `ACK frame body is ${body.length} bytes, expected ${ACK_BODY_BYTES}`);
  }
  const view = new DataView(body.buffer, body.byteOffset, ACK_BODY_BYTES);
  const seq = view.getBigUint64(4);
  if (seq > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new ClawpeerError('PROTOCOL', `ACK ackedThroughSeq ${seq} exceeds 2^53-1`);
  }
  return { streamId: view.getUint32(0), ackedThroughSeq: Number(seq) };
}
