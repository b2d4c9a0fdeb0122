// A listener's errors name share paths, never where its shares live on its disk (issue 32,
// item 7): a refused push used to tell the peer `/srv/.../inbox/photos/a.txt exists`.
import t from 'tap';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { inShareTerms } from '../../src/listener/dispatch.js';
import type { Share } from '../../src/home/shares.js';
import { startRig } from '../fault/fault-harness.js';

t.test('local paths of shares become share paths, the deepest share first', async (t) => {
  const shares: Share[] = [
    { name: 'inbox', dir: '/srv/clawpeer/inbox', readOnly: false },
    { name: 'photos', dir: '/srv/clawpeer/inbox/photos', readOnly: true },
  ];
  t.equal(
    inShareTerms('/srv/clawpeer/inbox/a/b.txt exists and is a file', shares),
    'inbox/a/b.txt exists and is a file',
  );
  t.equal(inShareTerms('/srv/clawpeer/inbox/photos/x.jpg is a directory', shares), 'photos/x.jpg is a directory');
  t.equal(inShareTerms('cannot write /srv/clawpeer/inbox: EACCES', shares), 'cannot write inbox: EACCES');
  t.equal(inShareTerms('no path here', shares), 'no path here');
});

t.test("a push the listener refuses names the share path, not the listener's disk", async (t) => {
  const rig = await startRig('share-paths');
  t.teardown(() => rig.close());
  // In the share, a directory where the pushed file would land.
  await mkdir(path.join(rig.share, 'photos', 'a.txt'), { recursive: true });
  const src = path.join(rig.work, 'photos');
  await mkdir(src);
  await writeFile(path.join(src, 'a.txt'), 'hello\n');
  const r = await rig.cli(['push', src, 'alice']);
  t.not(r.code, 0, 'refused');
  t.match(r.stderr, /inbox\/photos\/a\.txt is a directory where a file should be/);
  t.notMatch(r.stderr, rig.share, `the listener's local path (${rig.share}) is not told`);
  t.match(rig.listener.stderr(), rig.share, "the listener's own log keeps it");
});
