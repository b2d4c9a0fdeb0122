import t from 'tap';
import { DEFAULT_CONFIG, resolveConfig } from '../../src/node/config.js';
import { parseShareSpec } from '../../src/node/shares.js';

t.test('defaults are complete and frozen', async (t) => {
  const c = resolveConfig();
  t.same(c, DEFAULT_CONFIG);
  t.ok(Object.isFrozen(c));
});

t.test('overrides validated, unknown keys rejected', async (t) => {
  t.equal(resolveConfig({ idleTimeoutMs: 1000, keepAliveMs: 500 }).idleTimeoutMs, 1000);
  t.throws(() => resolveConfig({ idleTimeout: 5 }), { code: 'CONFIG_INVALID', message: /unknown setting "idleTimeout"/ });
  t.throws(() => resolveConfig({ maxFrameBytes: 10 }), { code: 'CONFIG_INVALID', message: /maxFrameBytes must be an integer in 1024/ });
  t.throws(() => resolveConfig({ transport: 'udp' }), { code: 'CONFIG_INVALID', message: /quic, tcp or auto/ });
  t.throws(() => resolveConfig({ keepAliveMs: 20_000 }), { message: /must be below idleTimeoutMs/ });
  t.equal(resolveConfig({ shutdownGraceMs: 0 }).shutdownGraceMs, 0, '0 is a value, not a missing one');
});

t.test('share specs', async (t) => {
  t.match(parseShareSpec('docs=/tmp/d:ro'), { name: 'docs', dir: '/tmp/d', readOnly: true });
  t.match(parseShareSpec('docs=/tmp/d'), { name: 'docs', readOnly: false });
  t.throws(() => parseShareSpec('/tmp/d'), { code: 'USAGE', message: /NAME=DIR/ });
  t.throws(() => parseShareSpec('a b=/tmp'), { code: 'USAGE', message: /invalid share name/ });
});
