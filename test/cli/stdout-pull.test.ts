// pull ... -: one file's bytes on standard output, from a private temp directory that is gone
// before the first byte is written.
import t from 'tap';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { checkStdoutPull, pullToStdout } from '../../src/cli/stdout-pull.js';

const collect = (): { out: PassThrough; bytes: () => Buffer } => {
  const out = new PassThrough();
  const parts: Buffer[] = [];
  out.on('data', (d: Buffer) => parts.push(d));
  return { out, bytes: () => Buffer.concat(parts) };
};
const spools = async (): Promise<number> =>
  (await readdir(tmpdir())).filter((n) => n.startsWith('clawpeer-stdout-')).length;

t.test('the landed file is written out, and its directory is gone already', async (t) => {
  const before = await spools();
  const data = Buffer.alloc(300_000, 3);
  const { out, bytes } = collect();
  let dirSeen = '';
  await pullToStdout(
    'f.bin',
    async (dir) => {
      dirSeen = dir;
      await writeFile(path.join(dir, 'f.bin'), data);
    },
    out,
  );
  t.same(bytes(), data);
  t.ok(dirSeen.startsWith(path.join(tmpdir(), 'clawpeer-stdout-')));
  t.equal(await spools(), before, 'nothing left behind');
});

t.test('a directory is refused, and a failed pull leaves nothing', async (t) => {
  const before = await spools();
  await t.rejects(
    pullToStdout('d', (dir) => mkdir(path.join(dir, 'd')), collect().out),
    { code: 'USAGE', message: /d is a directory: pull it into a directory/ },
  );
  await t.rejects(
    pullToStdout('x', () => Promise.reject(new Error('peer went away')), collect().out),
    /peer went away/,
  );
  t.equal(await spools(), before);
});

t.test('one remote file, and no flag that prints or writes elsewhere', async (t) => {
  t.doesNotThrow(() => checkStdoutPull(['a/f'], { force: true, json: undefined, 'dry-run': false }));
  t.throws(() => checkStdoutPull(['a', 'b'], {}), { code: 'USAGE', message: /takes one remote file/ });
  t.throws(() => checkStdoutPull([''], {}), { code: 'USAGE', message: /not a whole share/ });
  t.throws(() => checkStdoutPull(['f'], { json: true }), { code: 'USAGE', message: /--json with the destination -/ });
  t.throws(() => checkStdoutPull(['f'], { 'itemize-changes': true }), { code: 'USAGE', message: /--itemize-changes/ });
});
