// Self-signed X.509 v3 certificates for a node's Ed25519 identity key, and the check of a
// peer's certificate, for the TLS-over-TCP transport. The certificate's subject public key IS
// the identity key, so a TLS 1.3 handshake (CertificateVerify) proves possession of it.
//
// Goals: a minimal DER encoder (RFC 5280 / X.690) that produces exactly one certificate shape,
// deterministic for fixed inputs so tests can pin its bytes; a strict peer-certificate check
// that yields the raw 32-byte key or a ClawpeerError AUTH_FAILED.
// Non-goals: parsing arbitrary DER (node:crypto's X509Certificate parses), chains, CAs, names
// other than one CN, revocation, or validity periods as a trust signal (trust is pinning by key).
import { X509Certificate, randomFillSync, sign } from 'node:crypto';
import { ClawpeerError } from '../errors.js';
import type { Identity } from './identity.js';

/** id-Ed25519 (RFC 8410): 1.3.101.112. */
const OID_ED25519 = '1.3.101.112';
/** id-at-commonName: 2.5.4.3. */
const OID_COMMON_NAME = '2.5.4.3';
/** id-ce-basicConstraints: 2.5.29.19. */
const OID_BASIC_CONSTRAINTS = '2.5.29.19';
/** id-ce-keyUsage: 2.5.29.15. */
const OID_KEY_USAGE = '2.5.29.15';

const ED25519_PUBLIC_KEY_BYTES = 32;
const SERIAL_BYTES = 16; // RFC 5280 allows up to 20 octets; 128 random bits never collide.
/** Longest CN we encode; node ids are ~52 characters. Keeps the DER short-form friendly. */
export const MAX_COMMON_NAME_BYTES = 64;
/** notBefore is backdated so a peer whose clock is behind ours does not see a future cert. */
const CLOCK_SKEW_ALLOWANCE_MS = 60 * 60 * 1000; // 1 hour
/** RFC 5280 4.1.2.5: 99991231235959Z means "no well-defined expiration date". */
const NO_EXPIRY = new Date(Date.UTC(9999, 11, 31, 23, 59, 59));

// DER tags (X.690 8.x; universal class unless noted).
const TAG_BOOLEAN = 0x01;
const TAG_INTEGER = 0x02;
const TAG_BIT_STRING = 0x03;
const TAG_OCTET_STRING = 0x04;
const TAG_OID = 0x06;
const TAG_UTF8_STRING = 0x0c;
const TAG_UTC_TIME = 0x17;
const TAG_GENERALIZED_TIME = 0x18;
const TAG_SEQUENCE = 0x30;
const TAG_SET = 0x31;
const TAG_CONTEXT_0 = 0xa0; // [0] EXPLICIT, constructed
const TAG_CONTEXT_3 = 0xa3; // [3] EXPLICIT, constructed

/** DER length octets: short form below 128, else long form with the minimal byte count. */
export function derLength(length: number): Uint8Array {
  if (!Number.isSafeInteger(length) || length < 0)
    throw new TypeError(`DER length must be a non-negative integer, got ${length}`);
  if (length < 0x80) return Uint8Array.of(length);
  const bytes: number[] = [];
  for (let n = length; n > 0; n = Math.floor(n / 256)) bytes.unshift(n % 256);
  return Uint8Array.from([0x80 | bytes.length, ...bytes]);
}

/** One TLV: tag, DER length, then the concatenated contents. */
export function derTlv(tag: number, ...contents: Uint8Array[]): Uint8Array {
  let contentBytes = 0;
  for (const c of contents) contentBytes += c.length;
  const len = derLength(contentBytes);
  const out = new Uint8Array(1 + len.length + contentBytes);
  out[0] = tag;
  out.set(len, 1);
  let at = 1 + len.length;
  for (const c of contents) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** INTEGER from big-endian unsigned magnitude bytes: minimal, with a 0x00 pad if the top bit is set. */
export function derUnsignedInteger(magnitude: Uint8Array): Uint8Array {
  let start = 0;
  while (start < magnitude.length - 1 && magnitude[start] === 0) start++;
  const body = magnitude.subarray(start);
  if (body.length === 0) return derTlv(TAG_INTEGER, Uint8Array.of(0));
  const pad = (body[0] ?? 0) >= 0x80 ? Uint8Array.of(0) : new Uint8Array(0);
  return derTlv(TAG_INTEGER, pad, body);
}

/** OBJECT IDENTIFIER from dotted text (first two arcs packed as 40*a+b, then base-128 arcs). */
export function derOid(dotted: string): Uint8Array {
  const arcs = dotted.split('.').map((s) => {
    if (!/^\d+$/.test(s)) throw new TypeError(`bad OID ${JSON.stringify(dotted)}`);
    return Number(s);
  });
  const [a, b, ...rest] = arcs;
  if (a === undefined || b === undefined || a > 2 || (a < 2 && b >= 40))
    throw new TypeError(`bad OID ${JSON.stringify(dotted)}`);
  const out: number[] = [];
  for (const arc of [40 * a + b, ...rest]) {
    if (!Number.isSafeInteger(arc)) throw new TypeError(`bad OID arc in ${JSON.stringify(dotted)}`);
    const groups: number[] = [arc % 128];
    for (let n = Math.floor(arc / 128); n > 0; n = Math.floor(n / 128)) groups.unshift(0x80 | (n % 128));
    out.push(...groups);
  }
  return derTlv(TAG_OID, Uint8Array.from(out));
}

/** RFC 5280 4.1.2.5: UTCTime (YYMMDDHHMMSSZ) for 1950..2049, GeneralizedTime otherwise. */
export function derTime(date: Date): Uint8Array {
  const ms = date.getTime();
  if (!Number.isFinite(ms)) throw new TypeError('certificate time is not a valid date');
  const year = date.getUTCFullYear();
  if (year < 0 || year > 9999) throw new TypeError(`certificate year ${year} is outside 0..9999`);
  const p2 = (n: number): string => String(n).padStart(2, '0');
  const rest = `${p2(date.getUTCMonth() + 1)}${p2(date.getUTCDate())}${p2(date.getUTCHours())}${p2(date.getUTCMinutes())}${p2(date.getUTCSeconds())}Z`;
  if (year >= 1950 && year <= 2049) return derTlv(TAG_UTC_TIME, Buffer.from(`${p2(year % 100)}${rest}`, 'latin1'));
  return derTlv(TAG_GENERALIZED_TIME, Buffer.from(`${String(year).padStart(4, '0')}${rest}`, 'latin1'));
}

const ed25519AlgorithmIdentifier = (): Uint8Array => derTlv(TAG_SEQUENCE, derOid(OID_ED25519)); // parameters absent (RFC 8410 3)

function derName(commonName: string): Uint8Array {
  const cn = Buffer.from(commonName, 'utf8');
  if (cn.length === 0 || cn.length > MAX_COMMON_NAME_BYTES) {
    throw new TypeError(`certificate common name must be 1..${MAX_COMMON_NAME_BYTES} UTF-8 bytes, got ${cn.length}`);
  }
  const attribute = derTlv(TAG_SEQUENCE, derOid(OID_COMMON_NAME), derTlv(TAG_UTF8_STRING, cn));
  return derTlv(TAG_SEQUENCE, derTlv(TAG_SET, attribute));
}

/** basicConstraints (critical, CA:FALSE = empty SEQUENCE) and keyUsage (critical, digitalSignature). */
function derExtensions(): Uint8Array {
  const critical = derTlv(TAG_BOOLEAN, Uint8Array.of(0xff));
  const basicConstraints = derTlv(
    TAG_SEQUENCE,
    derOid(OID_BASIC_CONSTRAINTS),
    critical,
    derTlv(TAG_OCTET_STRING, derTlv(TAG_SEQUENCE)),
  );
  // KeyUsage BIT STRING: 7 unused bits, bit 0 (digitalSignature) set -> 0x07 0x80.
  const keyUsage = derTlv(
    TAG_SEQUENCE,
    derOid(OID_KEY_USAGE),
    critical,
    derTlv(TAG_OCTET_STRING, derTlv(TAG_BIT_STRING, Uint8Array.of(0x07, 0x80))),
  );
  return derTlv(TAG_CONTEXT_3, derTlv(TAG_SEQUENCE, basicConstraints, keyUsage));
}

export interface SelfSignedCertificateOptions {
  /** Subject and issuer CN; default: the identity's node id. */
  readonly commonName?: string;
  /** Big-endian serial magnitude, at most 20 octets once DER-encoded; default: 16 random bytes. */
  readonly serial?: Uint8Array;
  /** Default: now minus 1 hour. */
  readonly notBefore?: Date;
  /** Default: 9999-12-31T23:59:59Z (no expiry; trust comes from pinning the key). */
  readonly notAfter?: Date;
}

export interface SelfSignedCertificate {
  readonly der: Uint8Array;
  readonly pem: string;
}

/** TBSCertificate (RFC 5280 4.1) for `identity`, issuer = subject. Exposed for the byte-exact tests. */
export function encodeTbsCertificate(identity: Identity, options: SelfSignedCertificateOptions = {}): Uint8Array {
  if (identity.publicKey.length !== ED25519_PUBLIC_KEY_BYTES) {
    throw new TypeError(
      `Ed25519 public key must be ${ED25519_PUBLIC_KEY_BYTES} bytes, got ${identity.publicKey.length}`,
    );
  }
  const serial = options.serial ?? randomSerial();
  const serialInteger = derUnsignedInteger(serial);
  // RFC 5280 4.1.2.2: positive, at most 20 content octets (counting a sign pad byte).
  if (serial.every((b) => b === 0) || serialInteger.length - 2 > 20) {
    throw new TypeError('certificate serial must be non-zero and encode in at most 20 octets (RFC 5280 4.1.2.2)');
  }
  const notBefore = options.notBefore ?? new Date(Date.now() - CLOCK_SKEW_ALLOWANCE_MS);
  const notAfter = options.notAfter ?? NO_EXPIRY;
  const name = derName(options.commonName ?? identity.nodeId);
  const spki = derTlv(
    TAG_SEQUENCE,
    ed25519AlgorithmIdentifier(),
    derTlv(TAG_BIT_STRING, Uint8Array.of(0), identity.publicKey),
  );
  return derTlv(
    TAG_SEQUENCE,
    derTlv(TAG_CONTEXT_0, derUnsignedInteger(Uint8Array.of(2))), // version v3 (value 2)
    serialInteger,
    ed25519AlgorithmIdentifier(),
    name, // issuer
    derTlv(TAG_SEQUENCE, derTime(notBefore), derTime(notAfter)),
    name, // subject
    spki,
    derExtensions(),
  );
}

/** A self-signed v3 certificate whose subject key is `identity`'s Ed25519 key. */
export function createSelfSignedCertificate(
  identity: Identity,
  options: SelfSignedCertificateOptions = {},
): SelfSignedCertificate {
  const tbs = encodeTbsCertificate(identity, options);
  const signature = sign(null, tbs, identity.privateKeyObject); // Ed25519: 64 bytes, no prehash
  const der = derTlv(
    TAG_SEQUENCE,
    tbs,
    ed25519AlgorithmIdentifier(),
    derTlv(TAG_BIT_STRING, Uint8Array.of(0), signature),
  );
  return { der, pem: toPem(der) };
}

export function toPem(der: Uint8Array): string {
  const b64 = Buffer.from(der).toString('base64');
  const lines = b64.match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`;
}

function randomSerial(): Uint8Array {
  const serial = new Uint8Array(SERIAL_BYTES);
  randomFillSync(serial);
  serial[0] = ((serial[0] ?? 0) & 0x7f) | 0x01; // positive and non-zero without a pad byte
  return serial;
}

/**
 * The raw 32-byte Ed25519 key a peer's certificate carries, after checking the certificate is
 * Ed25519 and self-signed by that same key. Anything else is AUTH_FAILED. `cert` is DER bytes
 * or an already parsed certificate (TLSSocket.getPeerX509Certificate()).
 */
export function ed25519KeyFromSelfSignedCertificate(cert: Uint8Array | X509Certificate | undefined): Uint8Array {
  if (cert === undefined) throw new ClawpeerError('AUTH_FAILED', 'peer presented no certificate');
  let x509: X509Certificate;
  try {
    x509 = cert instanceof X509Certificate ? cert : new X509Certificate(cert);
  } catch (cause) {
    throw new ClawpeerError('AUTH_FAILED', 'peer certificate is not valid X.509 DER', { cause });
  }
  const key = x509.publicKey;
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new ClawpeerError(
      'AUTH_FAILED',
      `peer certificate key is ${key.asymmetricKeyType ?? 'unknown'}, expected ed25519`,
    );
  }
  let selfSigned: boolean;
  try {
    selfSigned = x509.verify(key);
  } catch (cause) {
    throw new ClawpeerError('AUTH_FAILED', 'peer certificate signature could not be checked', { cause });
  }
  if (!selfSigned) throw new ClawpeerError('AUTH_FAILED', 'peer certificate is not self-signed by the key it carries');
  const x = key.export({ format: 'jwk' }).x;
  const raw = Buffer.from(x ?? '', 'base64url');
  if (raw.length !== ED25519_PUBLIC_KEY_BYTES) {
    throw new ClawpeerError(
      'AUTH_FAILED',
      `peer Ed25519 key is ${raw.length} bytes, expected ${ED25519_PUBLIC_KEY_BYTES}`,
    );
  }
  return new Uint8Array(raw);
}
