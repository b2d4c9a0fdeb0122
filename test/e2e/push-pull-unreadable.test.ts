// An entry the sender cannot read (here a name that is not valid UTF-8: names travel as UTF-8)
// is left out and named, everything else is sent, and the command exits 23, as rsync's partial
// transfer: before, the sender's scan failed the whole push or pull (exit 1). Both senders: the
// client of a push, and the listener of a pull (which tells the client in its last Manifest
// batch). --remove-source-files keeps the unread source, and --delete is skipped (rsync's "IO
// error encountered -- skipping file deletion"): the entry missing from the manifest would go.
import t from 'tap';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { initNode, jsonLines, pairAdd, runCli, startListener } from './cli-harness.js';

/** Writes `content` at `dir`/caf<0xff>.txt: a Latin-1 name, no valid UTF-8. */
function writeLatin1Name(dir: string, content: string): void {
  writeFileSync(Buffer.concat([Buffer.from(`${dir}/caf`), Buffer.from([0xff]), Buffer.from('.txt')]), content);
}
const latin1Entries = (dir: string): number =>
  readdirSync(dir, { encoding: 'buffer' }).filter((n) => n.includes(0xff)).length;

t.test('push and pull send what they can read, name what they cannot, and exit 23', async (t) => {
  const a = await initNode('ua');
  const b = await initNode('ub');
  const work = await mkdtemp(path.join(tmpdir(), 'clawpeer-pp-unread-'));
  const inbox = path.join(work, 'inbox');
  await mkdir(inbox);
  await pairAdd(a.home, b.id, 'bob');
  const listener = await startListener(a.home, ['--share', `inbox=${inbox}`]);
  t.teardown(() => listener.stop('SIGKILL'));
  await pairAdd(b.home, a.id, 'alice', `127.0.0.1:${listener.port}`);

  // Push: the client cannot read src/tree/sub/caf?.txt.
  const src = path.join(work, 'src', 'tree');
  await mkdir(path.join(src, 'sub'), { recursive: true });
  await writeFile(path.join(src, 'a.txt'), 'lands\n');
  await writeFile(path.join(src, 'sub', 'b.txt'), 'lands too\n');
  writeLatin1Name(path.join(src, 'sub'), 'stays\n');
  const push = await runCli(['--home', b.home, 'push', src, 'alice', '--remove-source-files']);
  t.equal(push.code, 23, `push exits 23 (partial): ${push.stderr}`);
  t.match(
    push.stdout,
    /not sent, cannot be read here: tree\/sub\/caf\\#377\.txt \(its name is not valid UTF-8[^\n]*\)\n/,
    'names it, with why',
  );
  t.match(push.stdout, /1 entry unreadable, not sent/, 'the summary counts it');
  t.match(push.stderr, /1 entry could not be read here; the rest was pushed/);
  t.equal(await readFile(path.join(inbox, 'tree', 'a.txt'), 'utf8'), 'lands\n', 'the rest landed');
  t.equal(await readFile(path.join(inbox, 'tree', 'sub', 'b.txt'), 'utf8'), 'lands too\n');
  t.equal(latin1Entries(path.join(inbox, 'tree', 'sub')), 0, 'nothing landed for it');
  t.notOk(existsSync(path.join(src, 'a.txt')), 'a sent source is removed');
  t.equal(latin1Entries(path.join(src, 'sub')), 1, 'the unread source stays');

  // Pull: the listener cannot read inbox/tree/caf?.txt; --delete must not remove the local copy
  // of what it could not send, so it removes nothing.
  writeLatin1Name(path.join(inbox, 'tree'), 'not sent\n');
  // A name with an escape sequence cannot travel either; it is named escaped, never raw.
  await writeFile(path.join(inbox, 'tree', 'red\u001b[31m.txt'), 'not sent\n');
  const dest = path.join(work, 'dest');
  await mkdir(path.join(dest, 'tree'), { recursive: true });
  await writeFile(path.join(dest, 'tree', 'extra.txt'), 'kept: --delete is skipped\n');
  const pull = await runCli(['--home', b.home, 'pull', 'alice:inbox/tree', dest, '--delete', '--json']);
  t.equal(pull.code, 23, `pull exits 23 (partial): ${pull.stderr}`);
  const lines = jsonLines(pull.stdout);
  t.same(
    lines.filter((l) => l['event'] === 'unreadable').map((l) => l['path']),
    ['tree/caf\\#377.txt', 'tree/red\\#033[31m.txt'],
    'names them, escaped',
  );
  t.match(
    lines.find((l) => l['event'] === 'unreadable'),
    { error: /^its name is not valid UTF-8/ },
  );
  t.ok(
    lines.some((l) => l['event'] === 'delete-skipped'),
    'says --delete was skipped',
  );
  t.match(
    lines.find((l) => l['event'] === 'done'),
    { unreadable: 2 },
    'the done record counts them',
  );
  t.match(lines.at(-1), { event: 'error', code: 'PARTIAL', exitCode: 23, message: /could not be read by alice/ });
  t.equal(await readFile(path.join(dest, 'tree', 'a.txt'), 'utf8'), 'lands\n', 'the rest landed');
  t.equal(await readFile(path.join(dest, 'tree', 'sub', 'b.txt'), 'utf8'), 'lands too\n');
  t.ok(existsSync(path.join(dest, 'tree', 'extra.txt')), '--delete removed nothing');
  t.match(listener.stderr(), /pull: cannot read an entry here/, 'the listener warns');
});
