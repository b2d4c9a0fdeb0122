import t from 'tap';
import { CONFIG_LIMITS, DEFAULT_CONFIG, keepAliveFor, resolveConfig } from '../../src/home/config.js';
import { parseShareSpec } from '../../src/home/shares.js';

t.test('defaults are complete and frozen', async (t) => {
  const c = resolveConfig();
  t.same(c, DEFAULT_CONFIG);
  t.ok(Object.isFrozen(c));
});

t.test('overrides validated, unknown keys rejected', async (t) => {
  t.equal(resolveConfig({ idleTimeoutMs: 1000, keepAliveMs: 500 }).idleTimeoutMs, 1000);
  t.throws(() => resolveConfig({ idleTimeout: 5 }), {
    code: 'CONFIG_INVALID',
    message: /unknown setting "idleTimeout"/,
  });
  t.throws(() => resolveConfig({ maxFrameBytes: 10 }), {
    code: 'CONFIG_INVALID',
    message: /maxFrameBytes must be an integer in 1024/,
  });
  t.throws(() => resolveConfig({ transport: 'udp' }), { code: 'CONFIG_INVALID', message: /quic, tcp or auto/ });
  t.equal(resolveConfig().compression, 'auto', 'compression is on by default (when the zstd binding loads)');
  t.equal(resolveConfig({ compression: 'none' }).compression, 'none');
  t.throws(() => resolveConfig({ compression: 'gzip' }), {
    code: 'CONFIG_INVALID',
    message: /compression must be auto or none, got "gzip"/,
  });
  t.throws(() => resolveConfig({ keepAliveMs: 20_000 }), { message: /must be below idleTimeoutMs/ });
  t.equal(resolveConfig({ shutdownGraceMs: 0 }).shutdownGraceMs, 0, '0 is a value, not a missing one');
});

t.test('listener limits: defaults, ranges, and a keep-alive that fits a short idle timeout', async (t) => {
  t.match(DEFAULT_CONFIG, { sessionIdleTimeoutMs: 300_000, maxConnections: 256, maxConnectionsPerPeer: 16 });
  t.equal(resolveConfig({ sessionIdleTimeoutMs: 2_000 }).sessionIdleTimeoutMs, 2_000);
  t.throws(() => resolveConfig({ maxConnections: 0 }), {
    code: 'CONFIG_INVALID',
    message: /maxConnections must be an integer in 1\.\.65536, got 0/,
  });
  t.throws(() => resolveConfig({ maxConnectionsPerPeer: 1.5 }), {
    code: 'CONFIG_INVALID',
    message: /maxConnectionsPerPeer/,
  });
  t.throws(() => resolveConfig({ sessionIdleTimeoutMs: 50 }), {
    code: 'CONFIG_INVALID',
    message: /sessionIdleTimeoutMs must be an integer in 100\./,
  });
  for (const [key, [min, max]] of Object.entries(CONFIG_LIMITS)) {
    const value = DEFAULT_CONFIG[key as keyof typeof CONFIG_LIMITS];
    t.ok(value >= min && value <= max, `default ${key} ${value} is within its own limits ${min}..${max}`);
  }
  for (const idle of [100, 150, 1_000, 2_000, 15_000, 3_600_000]) {
    const keepAliveMs = keepAliveFor(idle);
    t.ok(keepAliveMs < idle, `keep-alive ${keepAliveMs} ms is below an idle timeout of ${idle} ms`);
    t.equal(
      resolveConfig({ idleTimeoutMs: idle, keepAliveMs }).keepAliveMs,
      keepAliveMs,
      `and resolves (idle ${idle} ms)`,
    );
  }
  t.equal(
    keepAliveFor(DEFAULT_CONFIG.idleTimeoutMs),
    DEFAULT_CONFIG.keepAliveMs,
    'the default idle timeout keeps the default keep-alive',
  );
});

t.test('share specs', async (t) => {
  t.match(parseShareSpec('docs=/tmp/d:ro'), { name: 'docs', dir: '/tmp/d', readOnly: true });
  t.match(parseShareSpec('docs=/tmp/d'), { name: 'docs', readOnly: false });
  t.match(parseShareSpec('docs=/tmp/d:nodelete'), { name: 'docs', dir: '/tmp/d', readOnly: false, noDelete: true });
  t.notOk('noDelete' in parseShareSpec('docs=/tmp/d:ro'), ':ro writes nothing at all: no delete flag of its own');
  t.match(parseShareSpec('docs=/tmp/d:nodelete:fsync'), { dir: '/tmp/d', noDelete: true, alwaysFsync: true });
  t.match(parseShareSpec('docs=/tmp/d:fsync'), { dir: '/tmp/d', readOnly: false, alwaysFsync: true });
  t.notOk('alwaysFsync' in parseShareSpec('docs=/tmp/d'), 'a share takes --fsync=none unless served with :fsync');
  t.throws(() => parseShareSpec('/tmp/d'), { code: 'USAGE', message: /NAME=DIR/ });
  t.throws(() => parseShareSpec('a b=/tmp'), { code: 'USAGE', message: /invalid share name/ });
});
