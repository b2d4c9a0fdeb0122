// CPace against the published test vectors of draft-irtf-cfrg-cpace ("Test vector for CPace
// using group ristretto255 and hash SHA-512", and G_Coffee25519_points in its testvectors.json).
import t from 'tap';
import {
  calculateGenerator,
  generatorString,
  intermediateKey,
  makeShare,
  sha512,
  sharedPoint,
  transcriptIr,
  utf8,
} from '../../src/pairing/cpace.js';
import { scalarMultVfy } from '../../src/pairing/ristretto255.js';

const h = (s: string): Uint8Array => Uint8Array.from(Buffer.from(s.replace(/\s+/g, ''), 'hex'));
const hx = (b: Uint8Array): string => Buffer.from(b).toString('hex');

const V = {
  prs: utf8('Password'),
  ci: h('0b415f696e69746961746f720b425f726573706f6e646572'),
  sid: h('7e4b4791d6a8ef019b936c79fb7f2c57'),
  generatorString: `11435061636552697374726574746f3235350850617373776f726464
    ${'00'.repeat(100)}180b415f696e69746961746f720b425f726573706f6e646572107e4b4791d6a8ef019b936c79fb7f2c57`,
  hash: `da6d3ddc8802fca9058755ffd3ebde08a9c2c74945901a258482a288b6663af06bf645c93cd1c51512307199c80e84908916d983b34af77205f90851a657ee27`,
  g: '222b6b195fe84b1652badb6f6a3ae3d24341e7306967f0b8115b40d5698c7e56',
  ya: 'da3d23700a9e5699258aef94dc060dfda5ebb61f02a5ea77fad53f4ff0976d08',
  ada: utf8('ADa'),
  Ya: 'd6bac480f2c386c394efc7c47adb9925dcd2630b64f240c50f8d0eec482b9157',
  yb: 'd2316b454718c35362d83d69df6320f38578ed5984651435e2949762d900b80d',
  adb: utf8('ADb'),
  Yb: '3ea7e0b19560d7c0b0f5734f63b955286dfa8232b5ebe63324e2d9e7433f7258',
  K: '80b69a8a76457ab6a4d7f887a4bf6b55a2f80ac19c333f917a05fc9887c8b40f',
  transcriptIr: `20d6bac480f2c386c394efc7c47adb9925dcd2630b64f240c50f8d0eec482b915703414461203ea7e0b19560d7c0b0f5734f63b955286dfa8232b5ebe63324e2d9e7433f725803414462`,
  iskIr: `b69effbf61b51d56401c0f65601abe428de8206feaaf0e32198896dcae7b35cd2b38950a39dfd5d4a79164614c2984f7daa460b588c1e80c3fa2068af7900447`,
};

t.test('calculate_generator: generator string, its hash, the encoded generator', async (t) => {
  const inputs = { prs: V.prs, ci: V.ci, sid: V.sid };
  t.equal(hx(generatorString(V.prs, V.ci, V.sid)), hx(h(V.generatorString)));
  t.equal(generatorString(V.prs, V.ci, V.sid).length, 170);
  t.equal(hx(sha512(generatorString(V.prs, V.ci, V.sid))), V.hash);
  t.equal(hx(calculateGenerator(inputs)), V.g);
});

t.test('messages from A and B, the shared point K and the ISK (initiator-responder)', async (t) => {
  const inputs = { prs: V.prs, ci: V.ci, sid: V.sid };
  const a = makeShare(inputs, { scalar: h(V.ya) });
  const b = makeShare(inputs, { scalar: h(V.yb) });
  t.equal(hx(a.element), V.Ya);
  t.equal(hx(b.element), V.Yb);
  const ka = sharedPoint(a, b.element);
  const kb = sharedPoint(b, a.element);
  t.equal(hx(ka ?? new Uint8Array()), V.K);
  t.equal(hx(kb ?? new Uint8Array()), V.K);
  t.equal(hx(transcriptIr(a.element, V.ada, b.element, V.adb)), V.transcriptIr);
  t.equal(hx(intermediateKey(V.sid, ka!, a.element, V.ada, b.element, V.adb)), V.iskIr);
});

t.test('scalar_mult_vfy: the valid vector, and both invalid encodings refused', async (t) => {
  const s = h('7cd0e075fa7955ba52c02759a6c90dbbfc10e6d40aea8d283e407d88cf538a05');
  t.equal(
    hx(scalarMultVfy(s, h('2c3c6b8c4f3800e7aef6864025b4ed79bd599117e427c41bd47d93d654b4a51c')) ?? new Uint8Array()),
    '7c13645fe790a468f62c39beb7388e541d8405d1ade69d1778c5fe3e7f6b600e',
  );
  t.equal(
    scalarMultVfy(s, h('2b3c6b8c4f3800e7aef6864025b4ed79bd599117e427c41bd47d93d654b4a51c')),
    undefined,
    'not a canonical encoding',
  );
  t.equal(scalarMultVfy(s, h('00'.repeat(32))), undefined, 'the identity');
});

t.test('a different password gives a different key', async (t) => {
  const a = makeShare({ prs: V.prs, ci: V.ci, sid: V.sid }, { scalar: h(V.ya) });
  const b = makeShare({ prs: utf8('Passwore'), ci: V.ci, sid: V.sid }, { scalar: h(V.yb) });
  t.not(hx(sharedPoint(a, b.element)!), hx(sharedPoint(b, a.element)!));
});
