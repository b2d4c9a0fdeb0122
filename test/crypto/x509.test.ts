import { execFileSync, spawnSync } from 'node:child_process';
import { X509Certificate, createPublicKey, generateKeyPairSync, sign } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import t from 'tap';
import { generateIdentity, identityFromSeed } from '../../src/crypto/identity.js';
import {
  createSelfSignedCertificate,
  derLength,
  derOid,
  derTime,
  derTlv,
  derUnsignedInteger,
  ed25519KeyFromSelfSignedCertificate,
  encodeTbsCertificate,
} from '../../src/crypto/x509.js';
import { isClawpeerError } from '../../src/errors.js';

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
/** Annotated hex: everything after '#' on a line is a comment, whitespace is ignored. */
const unhex = (annotated: string): string => annotated.replace(/#.*$/gm, '').replace(/\s+/g, '');

const fixedIdentity = identityFromSeed(Uint8Array.from({ length: 32 }, (_, i) => i));
const fixedOptions = {
  commonName: 'test',
  serial: Uint8Array.of(0x01, 0x02),
  notBefore: new Date(Date.UTC(2024, 0, 2, 3, 4, 5)),
};

t.test('DER primitives', async (t) => {
  t.equal(hex(derLength(0)), '00');
  t.equal(hex(derLength(127)), '7f', 'short form up to 127');
  t.equal(hex(derLength(128)), '8180', 'long form from 128');
  t.equal(hex(derLength(255)), '81ff');
  t.equal(hex(derLength(256)), '820100');
  t.equal(hex(derLength(0x123456)), '83123456');
  t.throws(() => derLength(-1), TypeError);
  t.equal(hex(derUnsignedInteger(Uint8Array.of(2))), '020102');
  t.equal(hex(derUnsignedInteger(Uint8Array.of(0x80))), '02020080', 'pad byte keeps it positive');
  t.equal(hex(derUnsignedInteger(Uint8Array.of(0, 0, 0x7f))), '02017f', 'leading zeros stripped');
  t.equal(hex(derUnsignedInteger(Uint8Array.of(0, 0))), '020100', 'zero is one 0x00 byte');
  t.equal(hex(derOid('1.3.101.112')), '06032b6570', 'id-Ed25519');
  t.equal(hex(derOid('2.5.4.3')), '0603550403', 'commonName');
  t.equal(hex(derOid('1.2.840.113549')), '06062a864886f70d', 'multi-byte base-128 arc (rsadsi)');
  t.throws(() => derOid('3.1'), TypeError);
  t.throws(() => derOid('1.x'), TypeError);
  t.equal(
    Buffer.from(derTime(new Date(Date.UTC(2049, 11, 31, 23, 59, 59)))).toString('latin1', 2),
    '491231235959Z',
    'UTCTime through 2049',
  );
  t.equal(
    Buffer.from(derTime(new Date(Date.UTC(2050, 0, 1)))).toString('latin1', 2),
    '20500101000000Z',
    'GeneralizedTime from 2050',
  );
  t.equal(derTime(new Date(Date.UTC(1999, 0, 1)))[0], 0x17);
  t.throws(() => derTime(new Date(Number.NaN)), TypeError);
  t.equal(hex(derTlv(0x30)), '3000', 'empty SEQUENCE');
});

t.test('DER length round-trips through the long form for any size', async (t) => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 2 ** 40 }), (n) => {
      const b = derLength(n);
      if (n < 128) return b.length === 1 && b[0] === n;
      const count = (b[0] ?? 0) & 0x7f;
      if (b.length !== 1 + count || b[1] === 0) return false; // minimal: no leading zero byte
      let v = 0;
      for (let i = 1; i < b.length; i++) v = v * 256 + (b[i] ?? 0);
      return v === n;
    }),
    { numRuns: 500 },
  );
  t.pass('lengths decode back to themselves');
});

t.test(
  'exact bytes: certificate for seed 00..1f, CN "test", serial 0102, notBefore 2024-01-02T03:04:05Z',
  async (t) => {
    // Ed25519 signatures are deterministic, so the whole certificate is pinned.
    const expected = unhex(`
    3081ef                                  # Certificate SEQUENCE, 239 bytes
      3081a2                                # tbsCertificate SEQUENCE, 162 bytes
        a003 020102                         # [0] version: INTEGER 2 (v3)
        02020102                            # serialNumber 0x0102
        3005 06032b6570                     # signature AlgorithmIdentifier: id-Ed25519, no parameters
        300f 310d 300b 0603550403           # issuer: SET { SEQUENCE { commonName
               0c0474657374                 #   UTF8String "test" } }
        3020                                # validity
          170d 3234303130323033303430355a   #   notBefore UTCTime 240102030405Z
          180f 39393939313233313233353935395a # notAfter GeneralizedTime 99991231235959Z (no expiry)
        300f 310d 300b 0603550403 0c0474657374 # subject = issuer
        302a 3005 06032b6570                # subjectPublicKeyInfo: id-Ed25519
          032100                            #   BIT STRING, 0 unused bits:
          03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8 # the 32-byte identity key
        a320 301e                           # [3] extensions
          300c 0603551d13 0101ff 04023000   #   basicConstraints, critical, CA:FALSE
          300e 0603551d0f 0101ff 040403020780 # keyUsage, critical, digitalSignature
      3005 06032b6570                       # signatureAlgorithm: id-Ed25519
      034100                                # signatureValue BIT STRING, 64 bytes:
      895da9d399cec57f9c17c4121179d25f339a3b9d5048faf1892b337604f042e0
      cb84fac29fe2466936dc7acb2300184799ced903c1cb5dca4d5b8ece39afdc06
  `);
    t.equal(
      hex(fixedIdentity.publicKey),
      '03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8',
      'RFC 8032-style key for this seed',
    );
    const cert = createSelfSignedCertificate(fixedIdentity, fixedOptions);
    t.equal(hex(cert.der), expected);
    t.equal(
      hex(encodeTbsCertificate(fixedIdentity, fixedOptions)),
      expected.slice(6, 6 + 2 * (3 + 0xa2)),
      'TBS is the first element',
    );
  },
);

t.test('node:crypto parses the certificate and it verifies with its own key', async (t) => {
  const id = generateIdentity();
  const cert = createSelfSignedCertificate(id);
  for (const form of [cert.pem, Buffer.from(cert.der)]) {
    const x509 = new X509Certificate(form);
    t.equal(x509.verify(x509.publicKey), true, 'self-signature verifies');
    t.equal(x509.publicKey.asymmetricKeyType, 'ed25519');
    t.equal(x509.subject, `CN=${id.nodeId}`, 'subject CN is the node id');
    t.equal(x509.issuer, x509.subject, 'issuer = subject');
    t.equal(x509.ca, false);
    t.ok(new Date(x509.validFrom).getTime() <= Date.now(), 'valid from the past (clock skew allowance)');
    t.equal(new Date(x509.validTo).getUTCFullYear(), 9999, 'no expiry');
  }
  t.same(ed25519KeyFromSelfSignedCertificate(cert.der), id.publicKey, 'the raw key comes back out');
  t.same(
    ed25519KeyFromSelfSignedCertificate(new X509Certificate(cert.pem)),
    id.publicKey,
    'also from a parsed certificate',
  );
  t.not(hex(createSelfSignedCertificate(id).der), hex(cert.der), 'fresh random serial each time');
});

t.test(
  'openssl accepts the certificate',
  { skip: spawnSync('openssl', ['version']).status === 0 ? false : 'openssl not on PATH' },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'clawpeer-x509-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const id = generateIdentity();
    const file = join(dir, 'cert.pem');
    writeFileSync(file, createSelfSignedCertificate(id).pem);
    const text = execFileSync('openssl', ['x509', '-in', file, '-text', '-noout'], { encoding: 'utf8' });
    t.match(text, /Version: 3 \(0x2\)/);
    t.match(text, /Signature Algorithm: ED25519/);
    t.match(text, new RegExp(`Subject: CN ?= ?${id.nodeId}`));
    const verify = spawnSync('openssl', ['verify', '-check_ss_sig', '-CAfile', file, file], { encoding: 'utf8' });
    t.equal(verify.status, 0, `openssl verify: ${verify.stdout}${verify.stderr}`);
  },
);

t.test('peer certificate check rejects everything but a self-signed Ed25519 certificate', async (t) => {
  const authFailed = (f: () => unknown, what: string): void => {
    let err: unknown;
    try {
      f();
    } catch (e) {
      err = e;
    }
    t.ok(isClawpeerError(err, 'AUTH_FAILED'), `${what}: AUTH_FAILED (got ${String(err)})`);
  };
  authFailed(() => ed25519KeyFromSelfSignedCertificate(undefined), 'no certificate');
  authFailed(() => ed25519KeyFromSelfSignedCertificate(Uint8Array.of(0x30, 0x03, 1, 2, 3)), 'garbage DER');

  // Signed by a different key than the one it carries: splice identity B's key into A's TBS.
  const a = generateIdentity();
  const b = generateIdentity();
  const tbs = Buffer.from(encodeTbsCertificate(a, fixedOptions));
  const keyAt = tbs.indexOf(Buffer.from(a.publicKey));
  Buffer.from(b.publicKey).copy(tbs, keyAt);
  const forged = derTlv(
    0x30,
    tbs,
    derTlv(0x30, derOid('1.3.101.112')),
    derTlv(0x03, Uint8Array.of(0), sign(null, tbs, a.privateKeyObject)),
  );
  t.ok(new X509Certificate(forged), 'the forged certificate parses');
  authFailed(() => ed25519KeyFromSelfSignedCertificate(forged), 'signed by another key');

  // A flipped signature bit.
  const good = Buffer.from(createSelfSignedCertificate(a).der);
  good[good.length - 1] = (good[good.length - 1] ?? 0) ^ 1;
  authFailed(() => ed25519KeyFromSelfSignedCertificate(good), 'corrupted signature');

  // Not Ed25519: an openssl-made EC certificate, when openssl is here.
  if (spawnSync('openssl', ['version']).status === 0) {
    const dir = mkdtempSync(join(tmpdir(), 'clawpeer-x509-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    writeFileSync(join(dir, 'key.pem'), privateKey.export({ format: 'pem', type: 'pkcs8' }));
    execFileSync(
      'openssl',
      ['req', '-x509', '-key', join(dir, 'key.pem'), '-subj', '/CN=ec', '-days', '1', '-out', join(dir, 'ec.pem')],
      { stdio: 'ignore' },
    );
    const ec = new X509Certificate(readFileSync(join(dir, 'ec.pem')));
    t.equal(ec.verify(createPublicKey(privateKey)), true, 'the EC certificate is self-signed');
    authFailed(() => ed25519KeyFromSelfSignedCertificate(ec), 'P-256 key');
  }
});

t.test('certificate inputs are validated', async (t) => {
  t.throws(() => createSelfSignedCertificate(fixedIdentity, { commonName: '' }), TypeError);
  t.throws(() => createSelfSignedCertificate(fixedIdentity, { commonName: 'x'.repeat(65) }), TypeError);
  t.throws(() => createSelfSignedCertificate(fixedIdentity, { serial: new Uint8Array(21).fill(1) }), TypeError);
  t.throws(() => createSelfSignedCertificate(fixedIdentity, { serial: Uint8Array.of(0, 0) }), TypeError, 'zero serial');
  t.throws(
    () => createSelfSignedCertificate(fixedIdentity, { serial: new Uint8Array(20).fill(0xff) }),
    TypeError,
    '20 bytes + sign pad = 21 octets',
  );
  const big = createSelfSignedCertificate(fixedIdentity, { serial: new Uint8Array(20).fill(0x7f) });
  t.equal(new X509Certificate(big.der).serialNumber.toLowerCase(), '7f'.repeat(20), 'largest allowed serial');
});
