import { spawnSync } from 'node:child_process';
import t from 'tap';

// The committed src/protocol/gen must be what `npm run proto` makes of proto/clawpeer.proto.
t.test('generated protobuf code is up to date with proto/clawpeer.proto', async (t) => {
  const result = spawnSync(process.execPath, ['scripts/gen-proto.mjs', '--check'], {
    cwd: process.cwd(),
    encoding: 'utf8',
  });
  t.equal(result.status, 0, result.stderr);
  t.match(result.stdout, /up to date/);
});
