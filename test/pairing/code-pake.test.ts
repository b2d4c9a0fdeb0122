// The short-code PAKE's state machines, both sides in memory: the right code pairs and both
// verification strings agree; a wrong code fails on both sides before anything is revealed; a
// party in the middle that runs its own PAKE with each side (its own keys toward each) fails.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { generateIdentity } from '../../src/crypto/identity.js';
import { InviterPake, JoinerPake, type PairInfo } from '../../src/pairing/code-pake.js';
import { codeEntropyBits, generateCode, guessOdds, parseCode } from '../../src/pairing/code-words.js';
import { CODE_WORDS } from '../../src/pairing/code-word-list.js';

const random = (n: number): Uint8Array => new Uint8Array(randomBytes(n));

t.test('codes: NAMEPLATE-word-word, parsed back in any case and with spaces; bad ones named', async (t) => {
  const code = generateCode(7, 2, random);
  t.match(code.text, /^7-[a-z]+-[a-z]+$/);
  t.same(parseCode(`  ${code.text.toUpperCase().replace(/-/g, ' ')} `), code);
  t.equal(generateCode(12, 4, random).words.length, 4);
  t.throws(() => generateCode(1, 5, random), { code: 'USAGE' });
  t.throws(() => parseCode('acid-zebra'), { code: 'USAGE', message: /must start with its number/ });
  t.throws(() => parseCode('7-acid'), { code: 'USAGE', message: /has 1 word/ });
  t.throws(() => parseCode('7-acid-zebbra'), { code: 'USAGE', message: /"zebbra" is not in the code word list/ });
  t.equal(CODE_WORDS.length, 1295);
  t.equal(new Set(CODE_WORDS).size, 1295, 'no word twice');
  t.equal(guessOdds(2), 1_677_025);
  t.ok(codeEntropyBits(2) > 20.6 && codeEntropyBits(2) < 20.7);
});

async function parties(): Promise<{
  inviter: { key: Uint8Array; id: string };
  joiner: { key: Uint8Array; id: string };
}> {
  const a = generateIdentity();
  const b = generateIdentity();
  return { inviter: { key: a.publicKey, id: a.nodeId }, joiner: { key: b.publicKey, id: b.nodeId } };
}

t.test("the right code: both confirm, both get the other's info, the verification strings agree", async (t) => {
  const { inviter, joiner } = await parties();
  const code = generateCode(3, 2, random);
  const j = new JoinerPake({ code, inviterKey: inviter.key, joinerKey: joiner.key, random });
  const i = new InviterPake({ code, inviterKey: inviter.key, joinerKey: joiner.key, random });
  const reply = i.start({ share: j.start().share });
  const { verify } = j.reply(reply);
  t.match(verify, /^[0-9a-f]{4}(-[0-9a-f]{4}){3}$/);
  const joinerInfo: PairInfo = { id: joiner.id, addrs: ['127.0.0.1:7700'], name: 'laptop' };
  t.same(i.finish(j.finish(joinerInfo)), joinerInfo);
  t.equal(i.verify, verify);
  const inviterInfo: PairInfo = { id: inviter.id, addrs: [], name: 'desk' };
  t.same(j.done(i.done(inviterInfo)), inviterInfo);
});

t.test(
  'a wrong code: the joiner refuses the reply, the inviter refuses a forged finish; nothing revealed',
  async (t) => {
    const { inviter, joiner } = await parties();
    const right = parseCode('5-acid-zebra');
    const wrong = parseCode('5-acid-zero');
    const j = new JoinerPake({ code: wrong, inviterKey: inviter.key, joinerKey: joiner.key, random });
    const i = new InviterPake({ code: right, inviterKey: inviter.key, joinerKey: joiner.key, random });
    const reply = i.start({ share: j.start().share });
    t.throws(() => j.reply(reply), { code: 'AUTH_FAILED', message: /someone may have tried to guess it/ });
    t.throws(
      () => j.finish({ id: joiner.id, addrs: [], name: '' }),
      { code: 'PROTOCOL' },
      'no finish after a failed reply',
    );
    t.throws(() => i.finish({ confirm: random(32), sealed: random(40) }), {
      code: 'AUTH_FAILED',
      message: /someone may have tried to guess it/,
    });
    t.throws(
      () => i.done({ id: inviter.id, addrs: [], name: '' }),
      { code: 'PROTOCOL' },
      'the inviter reveals nothing',
    );
  },
);

t.test(
  'a man in the middle with its own keys, relaying between two PAKE runs, is detected on both sides',
  async (t) => {
    const { inviter, joiner } = await parties();
    const mallory = generateIdentity().publicKey;
    const code = generateCode(9, 2, random);
    // Each side sees Mallory's key on its TLS connection; Mallory forwards the messages as they are.
    const j = new JoinerPake({ code, inviterKey: mallory, joinerKey: joiner.key, random });
    const i = new InviterPake({ code, inviterKey: inviter.key, joinerKey: mallory, random });
    const reply = i.start({ share: j.start().share });
    t.throws(() => j.reply(reply), { code: 'AUTH_FAILED' });
    // Even a finish built by a joiner that believed the reply could not pass the inviter.
    const j2 = new JoinerPake({ code, inviterKey: inviter.key, joinerKey: joiner.key, random });
    const i2 = new InviterPake({ code, inviterKey: inviter.key, joinerKey: mallory, random });
    const reply2 = i2.start({ share: j2.start().share });
    t.throws(() => j2.reply(reply2), { code: 'AUTH_FAILED' });
  },
);

t.test('sealed info naming another node than TLS proved is refused', async (t) => {
  const { inviter, joiner } = await parties();
  const code = generateCode(4, 2, random);
  const j = new JoinerPake({ code, inviterKey: inviter.key, joinerKey: joiner.key, random });
  const i = new InviterPake({ code, inviterKey: inviter.key, joinerKey: joiner.key, random });
  j.reply(i.start({ share: j.start().share }));
  t.throws(() => i.finish(j.finish({ id: inviter.id, addrs: [], name: '' })), {
    code: 'AUTH_FAILED',
    message: /connection proved/,
  });
});
