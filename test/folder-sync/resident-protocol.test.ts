import t from 'tap';
import { controlSocketPath } from '../../src/folder-sync/resident-protocol.js';

t.test('the control socket lives in the home, when its path fits a Unix socket address', async (t) => {
  t.equal(controlSocketPath('/home/ann/.config/clawpeer'), '/home/ann/.config/clawpeer/control.sock');
  const longest = '/' + 'h'.repeat(107 - '/control.sock'.length - 1);
  t.equal(controlSocketPath(longest), `${longest}/control.sock`, '107 bytes: fits');
  t.equal(
    controlSocketPath(longest + 'h'),
    undefined,
    '108 bytes: no socket (the listener says so; the CLI syncs by itself)',
  );
  t.equal(controlSocketPath('/' + 'é'.repeat(50)), undefined, 'bytes, not characters, count');
});
