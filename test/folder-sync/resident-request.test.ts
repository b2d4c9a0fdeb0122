// The request line a CLI sends its home's listener to run a sync there (every field checked), to ask its status, or to revert a folder.
import t from 'tap';
import { failureLog, parseResidentRequest } from '../../src/folder-sync/resident-sync.js';

const base = {
  op: 'sync',
  dir: '/tmp/d',
  peer: 'bob',
  share: 'docs',
  mode: 'two-way',
  compression: 'auto',
  progress: false,
};

t.test('a plain request, and one with a rate limit, parse as sent', async (t) => {
  t.same(parseResidentRequest(JSON.stringify(base)), base);
  t.same(parseResidentRequest(JSON.stringify({ ...base, bwlimit: 524288 })), { ...base, bwlimit: 524288 });
});

t.test('a status request carries nothing else', async (t) => {
  t.same(parseResidentRequest(JSON.stringify({ op: 'status', extra: 'ignored' })), { op: 'status' });
});

t.test('a revert request names its folder and whether it is a dry run', async (t) => {
  const req = { op: 'revert', folder: 'docs', dryRun: true };
  t.same(parseResidentRequest(JSON.stringify({ ...req, extra: 'ignored' })), req);
});

t.test('a bad field is a USAGE error naming it', async (t) => {
  for (const [bad, field] of [
    [{ ...base, bwlimit: 0 }, /bwlimit must be an integer/],
    [{ ...base, bwlimit: 1.5 }, /bwlimit must be an integer/],
    [{ ...base, bwlimit: '512KiB' }, /bwlimit must be an integer/],
    [{ ...base, bwlimit: 2 ** 32 }, /bwlimit must be an integer/],
    [{ ...base, mode: 'sideways' }, /mode must be one of/],
    [{ ...base, progress: 'yes' }, /progress must be a boolean/],
    [{ ...base, op: 'delete' }, /op must be "sync", "status", "revert" or "override"/],
    [{ op: 'revert', folder: 'docs' }, /dryRun must be a boolean/],
    [{ op: 'revert', dryRun: false }, /folder must be a string/],
  ] as const) {
    t.throws(() => parseResidentRequest(JSON.stringify(bad)), { code: 'USAGE', message: field }, JSON.stringify(bad));
  }
  t.throws(() => parseResidentRequest('{'), { code: 'USAGE', message: /not JSON/ });
});

t.test('a failed request is logged as what it was, naming the folder', async (t) => {
  t.same(failureLog({ op: 'revert', folder: 'docs', dryRun: false }), {
    message: 'folder revert for the CLI failed',
    fields: { folder: 'docs' },
  });
  t.same(
    failureLog({ op: 'revert', folder: 'docs', dryRun: true }).message,
    'folder revert --dry-run for the CLI failed',
  );
  t.same(failureLog(parseResidentRequest(JSON.stringify(base))), {
    message: 'sync for the CLI failed',
    fields: { folder: '/tmp/d', share: 'docs', peer: 'bob' },
  });
  t.equal(failureLog({ op: 'status' }).message, 'status for the CLI failed');
  t.equal(failureLog(undefined).message, 'control request from the CLI failed');
});
