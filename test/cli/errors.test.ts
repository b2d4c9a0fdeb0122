// The exit-code and error tables agree with each other and with the README.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { ClawpeerError, EXIT_CODES, LOCAL_ERRORS, WIRE_ERRORS, errorFromWire, wireCodeFor } from '../../src/errors.js';

t.test('wire numbers are unique and map to local codes', async (t) => {
  const numbers = Object.values(WIRE_ERRORS).map((w) => w.wire);
  t.equal(new Set(numbers).size, numbers.length);
  for (const [name, spec] of Object.entries(WIRE_ERRORS)) {
    t.ok(spec.local in LOCAL_ERRORS, `${name} maps to a local code`);
    const err = errorFromWire(spec.wire, 'x');
    t.equal(err.code, spec.local);
  }
  t.equal(errorFromWire(9999, 'boom').code, 'REMOTE');
  t.equal(wireCodeFor(new ClawpeerError('PEER_NOT_PAIRED')).name, 'NOT_PAIRED');
  t.equal(wireCodeFor(new TypeError('bug')).name, 'INTERNAL');
});

t.test('every local code exits with a code from the table', async (t) => {
  const exits = new Set<number>(Object.values(EXIT_CODES));
  for (const [code, spec] of Object.entries(LOCAL_ERRORS)) t.ok(exits.has(spec.exit), code);
  t.equal(new ClawpeerError('PEER_NOT_PAIRED').exitCode, 3);
  t.equal(new ClawpeerError('UNREACHABLE').exitCode, 4);
});

t.test('README documents the same exit codes', async (t) => {
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
  for (const [name, code] of Object.entries(EXIT_CODES)) {
    t.match(readme, new RegExp(`^\\| ${code} \\| \`${name}\` \\|`, 'm'), `README row for ${name}=${code}`);
  }
});

t.test('busy: a locked folder and a connection cap travel as BUSY and come back retryable', async (t) => {
  t.same(wireCodeFor(new ClawpeerError('FOLDER_BUSY', 'inbox/tree is busy')), {
    code: WIRE_ERRORS.BUSY.wire,
    name: 'BUSY',
  });
  t.same(wireCodeFor(new ClawpeerError('PEER_BUSY', 'too many connections')), {
    code: WIRE_ERRORS.BUSY.wire,
    name: 'BUSY',
  });
  const back = errorFromWire(WIRE_ERRORS.BUSY.wire, 'too many connections');
  t.equal(back.code, 'PEER_BUSY');
  t.ok(back.retryable);
  t.equal(back.exitCode, EXIT_CODES.unreachable);
});

t.test(
  'an interruption travels as CANCELLED and is no failure of the peer; locally it exits as the signal',
  async (t) => {
    t.equal(new ClawpeerError('INTERRUPTED').exitCode, 130, '128 + SIGINT');
    t.equal(new ClawpeerError('TERMINATED').exitCode, 143, '128 + SIGTERM');
    t.same(wireCodeFor(new ClawpeerError('INTERRUPTED')), { code: WIRE_ERRORS.CANCELLED.wire, name: 'CANCELLED' });
    t.same(wireCodeFor(new ClawpeerError('TERMINATED')), { code: WIRE_ERRORS.CANCELLED.wire, name: 'CANCELLED' });
    t.match(errorFromWire(WIRE_ERRORS.CANCELLED.wire, 'the push was interrupted (SIGINT) on the other side'), {
      code: 'INTERRUPTED',
      wire: 'CANCELLED',
    });
  },
);
