// The backend registry: names resolve to the right backends, unknown names are usage errors,
// and the availability list is ordered best first and truthful on this runtime.
import t from 'tap';
import { isClawpeerError } from '../../src/errors.js';
import { availableBackends, backendByName, TRANSPORT_NAMES } from '../../src/transport/backends.js';

void t.test('backendByName returns the backend with that name', async (t) => {
  for (const name of TRANSPORT_NAMES) {
    const b = await backendByName(name);
    t.equal(b.name, name);
  }
  let err: unknown;
  try {
    await backendByName('carrier-pigeon');
  } catch (e) {
    err = e;
  }
  t.ok(isClawpeerError(err, 'USAGE'), 'unknown name is a USAGE error');
  t.match(String(err), /quic, node-quic, tcp, memory/, 'and lists the valid names');
});

void t.test('availableBackends lists runnable backends best first', async (t) => {
  const names = (await availableBackends()).map((b) => b.name);
  t.equal(names[0], 'quic', 'quinn is available and preferred on this platform');
  t.notOk(names.includes('memory'), 'test-only memory is excluded by default');
  t.equal(names.includes('node-quic'), (await backendByName('node-quic')).available());
  const withTest = (await availableBackends({ includeTestOnly: true })).map((b) => b.name);
  t.equal(withTest.at(-1), 'memory');
  const order = withTest.map((n) => TRANSPORT_NAMES.indexOf(n));
  t.same(
    order,
    [...order].sort((a, b) => a - b),
    'in preference order',
  );
});
