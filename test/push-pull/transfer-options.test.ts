// push-pull/transfer-options.ts: which push/pull flags combine, named as the CLI spells them.
import t from 'tap';
import { checkPullList, transferChoices, type TransferFlags } from '../../src/push-pull/transfer-options.js';

const none: TransferFlags = {
  direction: 'push',
  force: false,
  ignoreExisting: false,
  update: false,
  delete: false,
  removeSourceFiles: false,
  backup: false,
  chmod: [],
  copyLinks: false,
  copyUnsafeLinks: false,
  filterRules: [],
};

t.test('no flags: nothing asked of the transfer', async (t) => {
  t.same(transferChoices(none), {});
});

t.test('the existing-file policies exclude each other and --force', async (t) => {
  t.equal(transferChoices({ ...none, ignoreExisting: true }).existing, 'keep');
  t.equal(transferChoices({ ...none, update: true }).existing, 'update');
  t.throws(() => transferChoices({ ...none, force: true, update: true }), {
    code: 'USAGE',
    message: '--force and --update exclude each other',
  });
  t.throws(() => transferChoices({ ...none, ignoreExisting: true, update: true }), {
    code: 'USAGE',
    message: /--ignore-existing and --update/,
  });
});

t.test('flags that need another, or refuse one', async (t) => {
  t.throws(() => transferChoices({ ...none, maxDelete: 3 }), {
    code: 'USAGE',
    message: '--max-delete limits --delete',
  });
  t.equal(transferChoices({ ...none, delete: true, maxDelete: 3 }).maxDelete, 3);
  t.throws(() => transferChoices({ ...none, suffix: '.old' }), { code: 'USAGE', message: /--suffix names backups/ });
  t.throws(() => transferChoices({ ...none, direction: 'pull', removeSourceFiles: true }), {
    code: 'USAGE',
    message: /applies to push/,
  });
  t.throws(() => transferChoices({ ...none, removeSourceFiles: true, update: true }), {
    code: 'USAGE',
    message: /--remove-source-files with --update/,
  });
  t.throws(() => transferChoices({ ...none, removeSourceFiles: true, copyLinks: true }), {
    code: 'USAGE',
    message: /--remove-source-files with --copy-links/,
  });
  t.throws(() => transferChoices({ ...none, copyLinks: true, copyUnsafeLinks: true }), {
    code: 'USAGE',
    message: /give one/,
  });
  t.throws(() => transferChoices({ ...none, delete: true, minSize: '1K' }), {
    code: 'USAGE',
    message: /--delete with --min-size/,
  });
});

t.test('sizes, backups, chmod and filters become transfer options', async (t) => {
  t.same(transferChoices({ ...none, minSize: '1K', maxSize: '0' }).sizes, { min: 1024 }, '0 is no bound');
  t.throws(() => transferChoices({ ...none, minSize: 'lots' }), { code: 'USAGE', message: '--min-size "lots"' });
  t.throws(() => transferChoices({ ...none, minSize: '2M', maxSize: '1M' }), {
    code: 'USAGE',
    message: /no file would go/,
  });
  t.ok(transferChoices({ ...none, backupDir: 'old' }).backup, '--backup-dir implies --backup');
  t.throws(() => transferChoices({ ...none, backupDir: '' }), { code: 'USAGE', message: /--backup-dir is empty/ });
  t.equal(typeof transferChoices({ ...none, chmod: ['F644'] }).modeChange, 'function');
  t.equal(
    transferChoices({ ...none, filterRules: [{ pattern: '*.log', include: false }] }).excludeRules?.excludes(
      'a.log',
      false,
    ),
    true,
    'the rules compiled',
  );
  t.equal(transferChoices({ ...none, removeSourceFiles: true }).removeSourceFiles, true);
});

t.test("a pull's --files-from list stays within one request", async (t) => {
  checkPullList(['a', 'b']);
  t.throws(() => checkPullList(Array.from({ length: 200_000 }, (_, i) => `f${i}`)), {
    code: 'USAGE',
    message: /split the list/,
  });
});
