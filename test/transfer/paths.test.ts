import path from 'node:path';
import fc from 'fast-check';
import t from 'tap';
import { ClawpeerError, isClawpeerError } from '../../src/errors.js';
import {
  isConfinedRealpath,
  joinSharePath,
  LOCAL_NAME_RULES,
  MAX_PATH_BYTES,
  MAX_PATH_SEGMENT_BYTES,
  needsWindowsNames,
  normalizeSharePath,
  PEER_NAME_RULES,
  WINDOWS_NAME_REFUSAL,
} from '../../src/transfer/paths.js';
import { isInternalPath } from '../../src/store/internal-names.js';
import { pathRefusal } from '../../src/support/path-refusal.js';

function refusal(raw: string): string {
  try {
    normalizeSharePath(raw);
  } catch (err) {
    if (isClawpeerError(err, 'PATH_INVALID')) return err.message;
    throw err;
  }
  throw new Error(`accepted ${JSON.stringify(raw)}`);
}

t.test('accepts and normalises ordinary relative paths', async (t) => {
  t.equal(normalizeSharePath('a.txt'), 'a.txt');
  t.equal(normalizeSharePath('dir/sub/file.tar.gz'), 'dir/sub/file.tar.gz');
  t.equal(normalizeSharePath('./a/./b'), 'a/b', '"." segments are dropped');
  t.equal(normalizeSharePath('.hidden/..dots/x..y'), '.hidden/..dots/x..y', 'dots inside names are fine');
  t.equal(
    normalizeSharePath('CONFIG/console.log/nul1/com0/lpt10'),
    'CONFIG/console.log/nul1/com0/lpt10',
    'near-miss device names are fine',
  );
  t.equal(normalizeSharePath('e\u0301t\u00e9'), '\u00e9t\u00e9', 'NFD becomes NFC');
  t.equal(normalizeSharePath('emoji/\u{1f600}'), 'emoji/\u{1f600}', 'astral characters survive');
  t.equal(normalizeSharePath('x'.repeat(MAX_PATH_SEGMENT_BYTES)), 'x'.repeat(MAX_PATH_SEGMENT_BYTES));
});

t.test('refuses unsafe paths with PATH_INVALID naming the path', async (t) => {
  const cases: [string, RegExp][] = [
    ['', /empty path/],
    ['..', /"\.\."/],
    ['a/../b', /"\.\."/],
    ['../etc/passwd', /"\.\."/],
    ['/etc/passwd', /absolute/],
    ['a\\b', /backslash/],
    ['..\\evil', /backslash/],
    ['C:evil', /drive letter/],
    ['./c:/x', /drive letter/],
    ['a\u0000b', /control/],
    ['a\nb', /control/],
    ['a\u007fb', /control/],
    ['a\u0085b', /control/],
    ['a//b', /empty path segment/],
    ['a/', /empty path segment/],
    ['.', /share root/],
    ['./.', /share root/],
    ['x'.repeat(MAX_PATH_SEGMENT_BYTES + 1), /longer than 255 bytes/],
    ['\u00e9'.repeat(128), /longer than 255 bytes/], // 256 UTF-8 bytes in 128 characters
    [Array.from({ length: 20 }, () => 'y'.repeat(250)).join('/'), /longer than 4096 bytes/],
    ['CON', /device name/],
    ['dir/con', /device name/],
    ['nul.txt', /device name/],
    ['Com1.tar.gz', /device name/],
    ['LPT9', /device name/],
    ['com\u00b9', /device name/],
    ['conout$', /device name/],
    ['aux .txt', /device name/],
    ['name.', /dot or space/],
    ['name ', /dot or space/],
    ['dir./x', /dot or space/],
    ['a\ud800b', /surrogate/],
  ];
  for (const [raw, why] of cases) {
    const message = refusal(raw);
    t.match(message, why, `${JSON.stringify(raw).slice(0, 40)}: ${message.slice(0, 80)}`);
    t.match(message, /^path ".*" refused/s, 'names the path');
  }
  t.ok(MAX_PATH_BYTES === 4096);
});

t.test('error is a ClawpeerError with a printable message', async (t) => {
  const err = t.throws(() => normalizeSharePath('a\u0000b')) as unknown;
  t.ok(err instanceof ClawpeerError);
  t.match((err as ClawpeerError).message, /a\\u0000b/);
  t.equal((err as ClawpeerError).code, 'PATH_INVALID');
});

t.test('property: accepted paths never escape the share and are canonical', async (t) => {
  const segment = fc.oneof(
    fc.constantFrom(
      '.',
      '..',
      '',
      'a',
      'B',
      'con',
      'CON.txt',
      'x.',
      'y ',
      ' z',
      '...',
      '.a',
      'a\\b',
      '\u0000',
      'e\u0301',
      '/',
      'C:',
    ),
    fc.string({ maxLength: 6 }),
    fc.string({ unit: 'grapheme', maxLength: 4 }),
  );
  const rawPath = fc.array(segment, { minLength: 0, maxLength: 6 }).map((s) => s.join('/'));
  let accepted = 0;
  fc.assert(
    fc.property(rawPath, (raw) => {
      let result: string;
      try {
        result = normalizeSharePath(raw);
      } catch (err) {
        if (isClawpeerError(err, 'PATH_INVALID')) return;
        throw err;
      }
      accepted++;
      const joined = path.posix.join('/share', result);
      if (!joined.startsWith('/share/')) throw new Error(`${JSON.stringify(raw)} -> ${joined} escapes`);
      if (path.posix.normalize(result) !== result) throw new Error(`${JSON.stringify(result)} is not POSIX-normal`);
      if (result.split('/').some((s) => s === '' || s === '.' || s === '..'))
        throw new Error(`bad segment in ${result}`);
      if (normalizeSharePath(result) !== result) throw new Error(`not idempotent on ${result}`);
      if (!isConfinedRealpath('/share', joined, path.posix)) throw new Error(`${joined} not confined`);
    }),
    { numRuns: 3000, seed: 20261130 },
  );
  t.ok(accepted > 100, `the generator produced accepted paths too (${accepted})`);
});

t.test('joinSharePath(parent, name) agrees with normalizeSharePath(parent/name)', async (t) => {
  const outcome = (f: () => string): string => {
    try {
      return `ok ${f()}`;
    } catch (err) {
      if (isClawpeerError(err, 'PATH_INVALID')) return 'refused';
      throw err;
    }
  };
  const nameChars = fc.constantFrom(
    'a',
    'Z',
    '0',
    '.',
    ' ',
    '-',
    '_',
    ':',
    'é',
    'e\u0301',
    '\\',
    '\u0000',
    'con',
    'LPT1',
    '\ud800',
    '~',
    '#',
  );
  const name = fc.array(nameChars, { minLength: 1, maxLength: 6 }).map((parts) => parts.join(''));
  const longName = fc.integer({ min: 250, max: 260 }).map((n) => 'x'.repeat(n));
  // Parents are canonical (a tree walk only ever extends what it accepted); the long one is near MAX_PATH_BYTES.
  let fastPathHits = 0;
  fc.assert(
    fc.property(
      fc.option(fc.constantFrom('a', 'dir/sub', Array(20).fill('y'.repeat(200)).join('/')), { nil: null }),
      fc.oneof(name, longName),
      (parent, n) => {
        const joined = outcome(() => joinSharePath(parent, n));
        const reference = outcome(() => normalizeSharePath(parent === null ? n : `${parent}/${n}`));
        if (/^[A-Za-z0-9]/.test(n) && !n.includes('\\')) fastPathHits++;
        // "." alone is dropped by normalizeSharePath; a directory listing never holds it.
        if (n === '.') return;
        if (joined !== reference)
          throw new Error(`${JSON.stringify(parent)} + ${JSON.stringify(n)}: join ${joined}, normalize ${reference}`);
      },
    ),
    { numRuns: 5000, seed: 20261130 },
  );
  t.ok(fastPathHits > 500, `plain names were generated (${fastPathHits})`);
  t.equal(joinSharePath('docs', 'a.txt'), 'docs/a.txt');
  t.throws(() => joinSharePath('docs', 'nul.txt'), { code: 'PATH_INVALID' });
  t.throws(() => joinSharePath('docs', 'x'.repeat(256)), { code: 'PATH_INVALID' });
});

const WINDOWS_ONLY = ['aux.c', 'src/con.h', 'nul', 'prn.txt', 'LPT1', 'notes.', 'name ', 'dir./x', 'a/trail.', 'a./b '];

t.test('Windows name rules: on by default, off with { windowsNames: false }, nothing else relaxed', async (t) => {
  for (const raw of WINDOWS_ONLY) {
    const err = t.throws(() => normalizeSharePath(raw), { code: 'PATH_INVALID' }, `strict refuses ${raw}`);
    t.equal(pathRefusal(err), WINDOWS_NAME_REFUSAL, `${raw}: a per-path refusal a receiver can leave out`);
    t.equal(normalizeSharePath(raw, { windowsNames: false }), raw, `relaxed takes ${JSON.stringify(raw)}`);
    t.throws(() => normalizeSharePath(raw, { windowsNames: true }), { code: 'PATH_INVALID' }, 'windowsNames: true');
  }
  t.equal(pathRefusal(t.throws(() => normalizeSharePath('a/../b'))), undefined, 'other refusals refuse the whole');
  const relaxed = (raw: string): string => normalizeSharePath(raw, PEER_NAME_RULES);
  t.equal(relaxed('w/aux.c'), 'w/aux.c');
  t.equal(joinSharePath('w', 'con.h', PEER_NAME_RULES), 'w/con.h', 'the plain-name fast path too');
  t.equal(joinSharePath('w', 'trail.', PEER_NAME_RULES), 'w/trail.');
  t.equal(joinSharePath('w', 'spaceé ', PEER_NAME_RULES), 'w/spaceé ', 'and the slow path');
  t.throws(() => joinSharePath('w', 'aux.c'), { code: 'PATH_INVALID' }, 'joinSharePath stays strict by default');
  for (const [raw, why] of [
    ['..', /"\.\."/],
    ['a/../b', /"\.\."/],
    ['/etc/passwd', /absolute/],
    ['a\\b', /backslash/],
    ['aux\\..', /backslash/],
    ['C:aux', /drive letter/],
    ['a\u0000b', /control/],
    ['nul\u001f', /control/],
    ['a//b', /empty path segment/],
    ['.', /share root/],
    ['x'.repeat(MAX_PATH_SEGMENT_BYTES + 1), /longer than 255 bytes/],
    ['a\ud800.', /surrogate/],
    ['...', /only dots and spaces/],
    ['a/.. /b', /only dots and spaces/],
    ['. ', /only dots and spaces/],
  ] as const) {
    t.throws(
      () => relaxed(raw),
      { code: 'PATH_INVALID', message: why },
      `relaxed still refuses ${JSON.stringify(raw)}`,
    );
    t.throws(() => joinSharePath(null, raw, PEER_NAME_RULES), { code: 'PATH_INVALID' });
  }
  // clawpeer's own names are the callers' check (isInternalPath), which folds trailing dots and spaces.
  for (const raw of [
    '.clawpeer/index',
    '.clawpeer./index',
    '.CLAWPEER /x',
    'd/.clawpeer-tmp-1.',
    'd/.clawpeer-tmp-x ',
  ]) {
    t.ok(isInternalPath(relaxed(raw)), `${JSON.stringify(raw)} passes the path rules but is clawpeer's own`);
  }
});

t.test('the local rules: Windows names only where files are made or read on Windows', async (t) => {
  t.equal(needsWindowsNames('win32'), true);
  t.equal(needsWindowsNames('linux'), false);
  t.equal(needsWindowsNames('darwin'), false);
  t.same(LOCAL_NAME_RULES, { windowsNames: process.platform === 'win32' });
});

t.test('property: relaxed paths never escape the share either', async (t) => {
  const segment = fc.oneof(
    fc.constantFrom('.', '..', '', 'a', 'con', 'aux.c', 'x.', 'y ', '...', '.. ', ' ..', 'a\\b', '\u0000', '/', 'C:'),
    fc.string({ maxLength: 6 }),
  );
  let windowsOnly = 0;
  fc.assert(
    fc.property(fc.array(segment, { maxLength: 6 }), (parts) => {
      let result: string;
      try {
        result = normalizeSharePath(parts.join('/'), PEER_NAME_RULES);
      } catch (err) {
        if (isClawpeerError(err, 'PATH_INVALID')) return;
        throw err;
      }
      const joined = path.posix.join('/share', result);
      if (!joined.startsWith('/share/') || path.posix.normalize(result) !== result)
        throw new Error(`${JSON.stringify(parts)} -> ${joined}`);
      // Nor on Windows, which drops a name's trailing dots and spaces.
      if (result.split('/').some((s) => s.replace(/[. ]+$/, '') === '')) throw new Error(`bad segment in ${result}`);
      if (path.win32.isAbsolute(result) || /^[a-zA-Z]:/.test(result)) throw new Error(`absolute on Windows: ${result}`);
      try {
        normalizeSharePath(result);
      } catch {
        windowsOnly++;
      }
    }),
    { numRuns: 3000, seed: 20261205 },
  );
  t.ok(windowsOnly > 50, `paths only the relaxed rules accept were generated (${windowsOnly})`);
});

t.test('isConfinedRealpath compares by segment', async (t) => {
  const p = path.posix;
  t.ok(isConfinedRealpath('/srv/share', '/srv/share', p), 'the root itself');
  t.ok(isConfinedRealpath('/srv/share', '/srv/share/a/b', p));
  t.ok(isConfinedRealpath('/srv/share', '/srv/share/..x', p), 'a name starting with .. is inside');
  t.notOk(isConfinedRealpath('/srv/share', '/srv/share-evil/a', p), 'sibling with a common prefix');
  t.notOk(isConfinedRealpath('/srv/share', '/srv', p));
  t.notOk(isConfinedRealpath('/srv/share', '/etc/passwd', p));
  const w = path.win32;
  t.ok(isConfinedRealpath('C:\\share', 'C:\\share\\a', w));
  t.notOk(isConfinedRealpath('C:\\share', 'D:\\share\\a', w), 'other drive');
  t.notOk(isConfinedRealpath('C:\\share', 'C:\\shared', w));
  t.throws(() => isConfinedRealpath('share', '/share/a', p), TypeError);
});
