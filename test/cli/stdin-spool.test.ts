// push -: standard input spooled to a private temp file, named as it should land.
import t from 'tap';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { argWord, STDIN_WORD, toYargsWord } from '../../src/cli/args.js';
import { spoolStdin, stdinName } from '../../src/cli/stdin-spool.js';

t.test('the spool holds the bytes under the name, in a private directory, and goes away', async (t) => {
  const data = Buffer.concat([Buffer.from('first '), Buffer.alloc(200_000, 7)]);
  const spool = await spoolStdin('data.bin', Readable.from([data.subarray(0, 6), data.subarray(6)]));
  t.equal(path.basename(spool.path), 'data.bin');
  t.same(await readFile(spool.path), data);
  t.equal((await stat(path.dirname(spool.path))).mode & 0o777, 0o700, 'only this user can read it');
  await spool.remove();
  await t.rejects(stat(path.dirname(spool.path)), { code: 'ENOENT' });
});

t.test('a terminal is refused rather than waited on; a failing stream leaves nothing', async (t) => {
  const tty = Object.assign(Readable.from([]), { isTTY: true });
  await t.rejects(spoolStdin('x', tty), { code: 'USAGE', message: /standard input is a terminal/ });
  const broken = new Readable({
    read() {
      this.destroy(new Error('pipe broke'));
    },
  });
  await t.rejects(spoolStdin('x', broken), { code: 'IO', message: /cannot spool standard input .*pipe broke/ });
});

t.test('--stdin-name is one plain name', async (t) => {
  t.equal(stdinName('backup.tar'), 'backup.tar');
  t.throws(() => stdinName('a/b'), { code: 'USAGE', message: /a file name, not a path/ });
  t.throws(() => stdinName('..'), { code: 'USAGE', message: /\.\./ });
  t.throws(() => stdinName(''), { code: 'USAGE' });
});

t.test('a lone - reaches the command through yargs as a word no path can be', async (t) => {
  t.equal(toYargsWord('-'), STDIN_WORD);
  t.equal(argWord(toYargsWord('-')), '-');
  t.equal(toYargsWord('--'), '--');
  t.equal(argWord('file'), 'file');
});
