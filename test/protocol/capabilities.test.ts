import t from 'tap';
import {
  acceptSessionCapabilities,
  DEFAULT_CAPABILITIES,
  intersectCapabilities,
  negotiateVersion,
  sessionToCapabilities,
  validateCapabilities,
  type Capabilities,
} from '../../src/protocol/capabilities.js';

const SMALL = { minBytes: 16 << 10, avgBytes: 64 << 10, maxBytes: 256 << 10 };
const DEFAULT_CHUNKING = { minBytes: 64 << 10, avgBytes: 256 << 10, maxBytes: 1 << 20 };

const client: Capabilities = {
  aeadSuites: ['chacha20-poly1305', 'aes-256-gcm'],
  compression: ['zstd', 'none'],
  chunking: [SMALL, DEFAULT_CHUNKING],
  maxWindowChunks: 128,
  maxStreams: 4,
  maxFrameBytes: 8 << 20,
  features: ['history', 'sync'],
};
const server: Capabilities = {
  aeadSuites: ['aes-256-gcm', 'chacha20-poly1305'],
  compression: ['none'],
  chunking: [DEFAULT_CHUNKING, SMALL],
  maxWindowChunks: 64,
  maxStreams: 16,
  maxFrameBytes: 16 << 20,
  features: ['sync', 'resume'],
};

t.test('intersection: client order for lists, min for numbers, server choice for chunking', async (t) => {
  t.same(intersectCapabilities(client, server), {
    aeadSuite: 'chacha20-poly1305', // the client's first choice that the server supports
    compression: ['none'],
    chunking: DEFAULT_CHUNKING, // the server's first choice the client also lists
    maxWindowChunks: 64,
    maxStreams: 4,
    maxFrameBytes: 8 << 20,
    features: ['sync'],
  });
});

t.test('intersection: the server falls back to its next chunking choice the client supports', async (t) => {
  const c = { ...client, chunking: [SMALL] };
  t.same(intersectCapabilities(c, server).chunking, SMALL);
});

t.test('intersection: nothing in common is a PROTOCOL error naming both sides', async (t) => {
  t.throws(
    () =>
      intersectCapabilities(
        { ...client, aeadSuites: ['chacha20-poly1305'] },
        { ...server, aeadSuites: ['aes-256-gcm'] },
      ),
    {
      code: 'PROTOCOL',
      message: 'no AEAD suite in common: client offers [chacha20-poly1305], server supports [aes-256-gcm]',
    },
  );
  t.throws(() => intersectCapabilities({ ...client, compression: ['zstd'] }, server), {
    code: 'PROTOCOL',
    message: /no compression codec in common: client offers \[zstd\], server supports \[none\]/,
  });
  t.throws(
    () => intersectCapabilities({ ...client, chunking: [{ minBytes: 1024, avgBytes: 4096, maxBytes: 8192 }] }, server),
    {
      code: 'PROTOCOL',
      message:
        /no chunking parameters in common: client supports \[1024\/4096\/8192\], server uses \[65536\/262144\/1048576, 16384\/65536\/262144\]/,
    },
  );
});

t.test('intersection: chunks that do not fit the smaller frame limit are refused', async (t) => {
  const big = { minBytes: 1 << 20, avgBytes: 4 << 20, maxBytes: 16 << 20 };
  t.throws(() => intersectCapabilities({ ...client, chunking: [big] }, { ...server, chunking: [big] }), {
    code: 'PROTOCOL',
    message: /chunking max 16777216 bytes does not fit the frame limit of 8388608 bytes/,
  });
});

t.test('intersection of the defaults with themselves is the defaults', async (t) => {
  const session = intersectCapabilities(DEFAULT_CAPABILITIES, DEFAULT_CAPABILITIES);
  t.equal(session.aeadSuite, 'aes-256-gcm');
  t.same(sessionToCapabilities(session), { ...DEFAULT_CAPABILITIES, aeadSuites: ['aes-256-gcm'] });
});

t.test('version negotiation picks the highest common version', async (t) => {
  t.equal(negotiateVersion({ min: 1, max: 3 }, { min: 2, max: 5 }), 3);
  t.equal(negotiateVersion({ min: 1, max: 1 }, { min: 1, max: 1 }), 1);
  t.equal(negotiateVersion({ min: 4, max: 9 }, { min: 1, max: 4 }), 4);
});

t.test('version mismatch names both sides', async (t) => {
  t.throws(() => negotiateVersion({ min: 1, max: 1 }, { min: 7, max: 9 }), {
    code: 'VERSION_MISMATCH',
    message: 'peer speaks protocol 7..9, we speak 1..1',
  });
  t.throws(() => negotiateVersion({ min: 1, max: 2 }, { min: 0, max: 0 }), {
    code: 'VERSION_MISMATCH',
    message: 'peer speaks protocol 0..0, we speak 1..2',
  });
  t.throws(
    () => negotiateVersion({ min: 1, max: 5 }, { min: 3, max: 2 }),
    { code: 'VERSION_MISMATCH' },
    'an inverted range matches nothing',
  );
});

t.test('validation rejects unusable capability sets', async (t) => {
  t.doesNotThrow(() => validateCapabilities(DEFAULT_CAPABILITIES));
  const cases: [string, Partial<Capabilities>, RegExp][] = [
    ['no AEAD', { aeadSuites: [] }, /no known AEAD suite/],
    ['no codec', { compression: [] }, /no known compression codec/],
    ['no chunking', { chunking: [] }, /no chunking parameters/],
    ['window 0', { maxWindowChunks: 0 }, /maxWindowChunks 0 is outside 1\.\./],
    ['streams 0', { maxStreams: 0 }, /maxStreams 0/],
    ['tiny frames', { maxFrameBytes: 1000 }, /maxFrameBytes 1000 is outside 65536\.\./],
    ['chunking order', { chunking: [{ minBytes: 100, avgBytes: 50, maxBytes: 200 }] }, /chunking 100\/50\/200/],
    ['too many entries', { chunking: Array.from({ length: 17 }, () => SMALL) }, /chunking has 17 entries/],
  ];
  for (const [name, patch, message] of cases) {
    t.throws(() => validateCapabilities({ ...DEFAULT_CAPABILITIES, ...patch }), { code: 'PROTOCOL', message }, name);
  }
});

t.test('the client accepts only an effective set within its offer', async (t) => {
  const announced = sessionToCapabilities(intersectCapabilities(client, server));
  t.same(acceptSessionCapabilities(client, announced), intersectCapabilities(client, server));
  const cases: [string, Partial<Capabilities>, RegExp][] = [
    ['two suites', { aeadSuites: ['aes-256-gcm', 'chacha20-poly1305'] }, /2 AEAD suites instead of 1/],
    [
      'foreign chunking',
      { chunking: [{ minBytes: 1024, avgBytes: 2048, maxBytes: 4096 }] },
      /chunking 1024\/2048\/4096/,
    ],
    ['bigger window', { maxWindowChunks: 129 }, /maxWindowChunks 129 > 128/],
    ['feature not offered', { features: ['resume'] }, /feature resume/],
  ];
  for (const [name, patch, message] of cases) {
    t.throws(() => acceptSessionCapabilities(client, { ...announced, ...patch }), { code: 'PROTOCOL', message }, name);
  }
  t.throws(
    () => acceptSessionCapabilities({ ...client, compression: ['none'] }, { ...announced, compression: ['zstd'] }),
    {
      code: 'PROTOCOL',
      message: /compression zstd/,
    },
  );
});
