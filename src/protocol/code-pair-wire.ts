// Encode/decode of the pairing-by-short-code messages (CodePairStart/Reply/Finish/Done, see
// pairing/code-pake.ts): fixed-size elements and tags, a nameplate of digits, bounded sealed info.
import { ClawpeerError } from '../errors.js';
import type { clawpeer } from './gen/clawpeer.js';
import {
  CODE_PAIR_CONFIRM_BYTES,
  CODE_PAIR_SHARE_BYTES,
  MAX_CODE_PAIR_SEALED_BYTES,
  MAX_NAMEPLATE_CHARS,
  type CodePairMessage,
} from './message-types.js';
import { copyBytes, fixedBytes, wireText } from './wire-helpers.js';

const NAMEPLATE = new RegExp(`^[1-9][0-9]{0,${MAX_NAMEPLATE_CHARS - 1}}$`);

function checkFixed(field: string, value: Uint8Array, length: number): void {
  if (value.length !== length) throw new RangeError(`${field} must be ${length} bytes, got ${value.length}`);
}

function checkSealed(field: string, value: Uint8Array): void {
  if (value.length === 0 || value.length > MAX_CODE_PAIR_SEALED_BYTES)
    throw new RangeError(`${field} must be 1 to ${MAX_CODE_PAIR_SEALED_BYTES} bytes, got ${value.length}`);
}

export function codePairToWire(m: CodePairMessage): clawpeer.v1.Control.$Properties {
  switch (m.type) {
    case 'code-pair-start':
      if (!NAMEPLATE.test(m.nameplate))
        throw new RangeError(
          `CodePairStart.nameplate ${JSON.stringify(m.nameplate)} is not 1 to ${MAX_NAMEPLATE_CHARS} digits`,
        );
      checkFixed('CodePairStart.share', m.share, CODE_PAIR_SHARE_BYTES);
      return { codePairStart: { nameplate: m.nameplate, share: m.share } };
    case 'code-pair-reply':
      checkFixed('CodePairReply.share', m.share, CODE_PAIR_SHARE_BYTES);
      checkFixed('CodePairReply.confirm', m.confirm, CODE_PAIR_CONFIRM_BYTES);
      return { codePairReply: { share: m.share, confirm: m.confirm } };
    case 'code-pair-finish':
      checkFixed('CodePairFinish.confirm', m.confirm, CODE_PAIR_CONFIRM_BYTES);
      checkSealed('CodePairFinish.sealed', m.sealed);
      return { codePairFinish: { confirm: m.confirm, sealed: m.sealed } };
    case 'code-pair-done':
      checkSealed('CodePairDone.sealed', m.sealed);
      return { codePairDone: { sealed: m.sealed } };
  }
}

function sealedFromWire(field: string, value: Uint8Array | null | undefined): Uint8Array {
  const got = value?.length ?? 0;
  if (got === 0 || got > MAX_CODE_PAIR_SEALED_BYTES)
    throw new ClawpeerError('PROTOCOL', `${field} must be 1 to ${MAX_CODE_PAIR_SEALED_BYTES} bytes, got ${got}`);
  return copyBytes(value);
}

/** The message of a Control whose body is one of the code-pair members; undefined when the member is absent. */
export function codePairFromWire(control: clawpeer.v1.Control): CodePairMessage | undefined {
  switch (control.body) {
    case 'codePairStart': {
      const s = control.codePairStart;
      if (s === null || s === undefined) return undefined;
      const nameplate = wireText('CodePairStart.nameplate', s.nameplate);
      if (!NAMEPLATE.test(nameplate))
        throw new ClawpeerError(
          'PROTOCOL',
          `CodePairStart.nameplate ${JSON.stringify(nameplate.slice(0, 16))} is not 1 to ${MAX_NAMEPLATE_CHARS} digits`,
        );
      return {
        type: 'code-pair-start',
        nameplate,
        share: fixedBytes('CodePairStart.share', s.share, CODE_PAIR_SHARE_BYTES),
      };
    }
    case 'codePairReply': {
      const r = control.codePairReply;
      if (r === null || r === undefined) return undefined;
      return {
        type: 'code-pair-reply',
        share: fixedBytes('CodePairReply.share', r.share, CODE_PAIR_SHARE_BYTES),
        confirm: fixedBytes('CodePairReply.confirm', r.confirm, CODE_PAIR_CONFIRM_BYTES),
      };
    }
    case 'codePairFinish': {
      const f = control.codePairFinish;
      if (f === null || f === undefined) return undefined;
      return {
        type: 'code-pair-finish',
        confirm: fixedBytes('CodePairFinish.confirm', f.confirm, CODE_PAIR_CONFIRM_BYTES),
        sealed: sealedFromWire('CodePairFinish.sealed', f.sealed),
      };
    }
    case 'codePairDone': {
      const d = control.codePairDone;
      if (d === null || d === undefined) return undefined;
      return { type: 'code-pair-done', sealed: sealedFromWire('CodePairDone.sealed', d.sealed) };
    }
    default:
      return undefined;
  }
}
