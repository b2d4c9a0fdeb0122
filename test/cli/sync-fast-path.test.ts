import t from 'tap';
import { parseFastSync } from '../../src/cli/sync-fast-path.js';

t.test('the plain forms of sync are read as yargs reads them', async (t) => {
  t.match(parseFastSync(['sync', 'docs', 'alice:share']), {
    home: undefined,
    json: false,
    dir: 'docs',
    remote: { peer: 'alice', share: 'share', path: '' },
    mode: 'two-way',
    compress: true,
    addr: undefined,
    transport: undefined,
  });
  t.match(parseFastSync(['--home', '/h', 'sync', 'docs', 'alice:share', '--json']), { home: '/h', json: true });
  t.match(parseFastSync(['sync', '--home=/h', 'docs', '--mode', 'receive-only', 'alice:share']), {
    home: '/h',
    mode: 'receive-only',
    dir: 'docs',
  });
  t.match(
    parseFastSync(['sync', 'docs', 'alice:share', '--no-compress', '--transport=tcp', '--addr', '127.0.0.1:7700']),
    { compress: false, transport: 'tcp', addr: '127.0.0.1:7700' },
  );
});

t.test('anything else is left to the full CLI', async (t) => {
  const declined: string[][] = [
    ['sync', 'docs', 'alice:share', '--watch'],
    ['sync', 'docs', 'alice:share', '-v'],
    ['sync', 'docs', 'alice:share', '--help'],
    ['sync', 'docs', 'alice:share', '--interval', '5'],
    ['sync', 'docs', 'alice:share', '--mode', 'both'],
    ['sync', 'docs', 'alice:share', '--mode'],
    ['sync', 'docs', 'alice:share', '--mode', 'two-way', '--mode', 'send-only'],
    ['sync', 'docs', 'alice:share', '--home', '--json'],
    ['sync', 'docs', 'alice:share', '--transport', 'udp'],
    ['sync', 'docs', 'alice:share', '--compress', '--no-compress'],
    ['sync', 'docs', 'alice:share', '--', 'x'],
    ['sync', 'docs', 'alice:share/sub'],
    ['sync', 'docs', 'alice'],
    ['sync', 'docs'],
    ['sync', 'docs', 'alice:share', 'extra'],
    ['push', 'docs', 'alice:share'],
    ['log', 'sync', 'alice:share'],
  ];
  for (const argv of declined) t.equal(parseFastSync(argv), undefined, argv.join(' '));
});
