// What push, pull and sync print for people names a path with its control and bidi characters
// escaped ("invoice\u202efdp.exe" would read as "invoiceexe.pdf"); --json keeps the exact name.
import t from 'tap';
import { logLines } from '../../src/cli/commands/folder.js';
import { activityLine, folderLines } from '../../src/cli/commands/status.js';
import type { CommandContext } from '../../src/cli/context.js';
import { Output } from '../../src/cli/output.js';
import { reportSync } from '../../src/cli/sync-report.js';
import {
  reportDeleted,
  reportDryRun,
  reportPublished,
  reportRefused,
  reportSourceKept,
  reportUnreadable,
} from '../../src/cli/transfer-report.js';
import type { SyncFolderResult } from '../../src/folder-sync/facade.js';
import type { TransferResult } from '../../src/push-pull/transfer-with-peer.js';

const ODD = 'invoice\u202efdp.exe';
const SHOWN = 'invoice\\u202efdp.exe';

function capture(json: boolean): { out: Output; ctx: CommandContext; text: () => string } {
  const lines: string[] = [];
  const out = new Output(
    json,
    (s) => lines.push(s),
    () => undefined,
  );
  return { out, ctx: { out } as unknown as CommandContext, text: () => lines.join('') };
}

const transfer = (more: Partial<TransferResult>): TransferResult => ({
  files: 1,
  bytes: 1,
  wireBytes: 1,
  chunksSent: 1,
  chunksSkipped: 0,
  chunksCompressed: 0,
  streams: 1,
  window: 1,
  seconds: 1,
  ...more,
});

const pulled = transfer({
  published: [{ path: `d/${ODD}`, replaced: false }],
  created: [
    { path: 'd\u2067', kind: 'dir' },
    { path: 'l\u2028', kind: 'symlink', target: 't\u202a', replaced: true },
  ],
  updated: [{ path: `u${ODD}`, time: true, perms: false }],
  deleted: [`x${ODD}`],
  deletedCount: 1,
  refused: [{ path: `r${ODD}`, reason: 'EACCES' }],
  refusedCount: 1,
  unreadable: [{ path: `n${ODD}`, error: 'EACCES' }],
  unreadableCount: 1,
  sourceChanged: [`s${ODD}\u0085`],
});

function reportAll(ctx: CommandContext, r: TransferResult): void {
  reportPublished(ctx, r);
  reportDeleted(ctx, r, false);
  reportRefused(ctx, r, undefined);
  reportUnreadable(ctx, r, 'alice', false);
  reportSourceKept(ctx, r);
}

t.test('push and pull lines show a peer path with its bidi and control characters escaped', async (t) => {
  const c = capture(false);
  reportAll(c.ctx, pulled);
  t.equal(
    c.text(),
    [
      'cd+++++++++ d\\u2067/',
      `>f+++++++++ d/${SHOWN}`,
      'cLc........ l\\u2028 -> t\\u202a',
      `.f..t...... u${SHOWN}`,
      `deleting x${SHOWN}`,
      `not written here (EACCES): r${SHOWN}`,
      `not sent by alice, cannot be read there: n${SHOWN} (EACCES)`,
      `not removed, changed or gone since it was sent: s${SHOWN}\\#205`,
      '',
    ].join('\n'),
  );
  t.notMatch(c.text(), /[\u2028\u2067\u202a\u202e\u0085]/, 'nothing raw');
});

t.test("a pull's dry run escapes the same", async (t) => {
  const c = capture(false);
  reportDryRun(c.ctx, 'pulled', transfer({}), {
    files: [{ path: ODD, bytes: 1, sendBytes: 1 }],
    touched: [{ path: `t${ODD}`, time: false, perms: true }],
    others: [
      { path: `d${ODD}`, kind: 'dir' },
      { path: `l${ODD}`, kind: 'symlink', target: 'x' },
    ],
    filesUnchanged: 0,
    chunksToSend: 1,
    bytesToSend: 1,
  });
  const lines = c.text().split('\n');
  t.same(lines.slice(0, 4), [
    `d${SHOWN}/ (directory)`,
    `l${SHOWN} -> x (symlink)`,
    `${SHOWN} (1 B, 1 B to send)`,
    `t${SHOWN} (identical: permissions to set)`,
  ]);
  t.notOk(c.text().includes('\u202e'));
});

t.test('--json keeps the exact names: a program needs them (JSON.stringify leaves U+202E raw)', async (t) => {
  t.equal(JSON.stringify(ODD), `"${ODD}"`, 'JSON does not escape a bidi character');
  const c = capture(true);
  reportAll(c.ctx, pulled);
  const records = c
    .text()
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  t.same(
    records.map((r) => r['path']),
    ['d\u2067', `d/${ODD}`, 'l\u2028', `u${ODD}`, `x${ODD}`, `r${ODD}`, `n${ODD}`, `s${ODD}\u0085`],
  );
  t.equal(records[2]?.['target'], 't\u202a');
});

t.test('a path a push listener already escaped is shown as it came: escaping twice changes nothing', async (t) => {
  const c = capture(false);
  reportPublished(c.ctx, transfer({ published: [{ path: `odd/${SHOWN}`, replaced: true }] }));
  t.equal(c.text(), `>fc........ odd/${SHOWN}\n`);
});

const sync = (more: Partial<SyncFolderResult>): SyncFolderResult => ({
  inSync: false,
  roundTrips: 1,
  reconcileBytes: 1,
  revisionsSent: 0,
  revisionsReceived: 0,
  chunksSent: 0,
  wireBytes: 1,
  conflicts: 0,
  seconds: 1,
  scanned: true,
  skipped: [],
  localOnly: [],
  unreadable: [],
  ...more,
});

t.test("a sync dry run's receive lines, skipped paths and conflict copies are shown escaped", async (t) => {
  const copy = `${ODD}.sync-conflict-20261204-alice`;
  const r = sync({
    skipped: [`k${ODD}`],
    dryRun: {
      receive: [
        { path: ODD, change: 'conflict', kind: 'file', bytes: 3, copy },
        { path: `d${ODD}`, change: 'create', kind: 'dir', bytes: 0 },
        { path: `f${ODD}`, change: 'update', kind: 'file', bytes: 2048 },
      ],
      send: [{ path: `s${ODD}`, change: 'delete', kind: 'file', bytes: 0 }],
    },
  });
  const c = capture(false);
  reportSync(c.out, r, false);
  const lines = c.text().split('\n');
  t.same(lines.slice(0, 5), [
    `receive conflict ${SHOWN} (the losing version kept as ${SHOWN}.sync-conflict-20261204-alice)`,
    `receive create   d${SHOWN}/`,
    `receive update   f${SHOWN} (2.0 KiB)`,
    `send    delete   s${SHOWN}`,
    `would be left as is: k${SHOWN}`,
  ]);
  t.notOk(c.text().includes('\u202e'));
  const j = capture(true);
  reportSync(j.out, r, false);
  const first = JSON.parse(j.text().split('\n')[0] ?? '') as Record<string, unknown>;
  t.same([first['path'], first['copy']], [ODD, copy], '--json: exact');
});

t.test("a real sync's skipped and receive-only lines are shown escaped", async (t) => {
  const c = capture(false);
  reportSync(c.out, sync({ skipped: [`k${ODD}`], localOnly: [`o${ODD}`] }), false);
  const lines = c.text().split('\n');
  t.same(lines.slice(0, 2), [`local change not sent (receive-only): o${SHOWN}`, `left as is this time: k${SHOWN}`]);
});

t.test("`folder log` and `status` show a peer's paths escaped", async (t) => {
  const now = Date.UTC(2026, 11, 4);
  const log = logLines(
    {
      time: now - 5000,
      folder: 'docs',
      peer: 'id',
      peerName: 'alice',
      by: 'peer',
      received: 1,
      added: 1,
      changed: 0,
      deleted: 0,
      paths: [{ path: ODD, change: 'added' }],
      sent: 0,
      conflicts: 0,
      skipped: 0,
      bytes: 1,
      seconds: 1,
    },
    now,
  );
  t.equal(log.split('\n')[1], `  + ${SHOWN}`);
  const line = activityLine(
    {
      peer: 'id',
      kind: 'push',
      share: 'inbox',
      path: ODD,
      startedAt: now - 2000,
      bytes: 0,
      totalBytes: 0,
      files: 0,
      totalFiles: 0,
    },
    'alice',
    now,
  );
  t.match(line, `push from alice into inbox/${SHOWN}: `);
  t.notOk(log.includes('\u202e') || line.includes('\u202e'));
  // A folder's problem and a pair's error may quote a peer's path.
  const folder = folderLines(
    {
      id: 'docs',
      path: '/srv/docs',
      mode: 'two-way',
      versioning: 'keep-last:10',
      paused: false,
      problem: `${ODD} is in the way`,
      peers: [{ peer: 'id', name: 'bob', state: 'error', since: now, mode: 'two-way', error: `cannot write ${ODD}` }],
    },
    new Map(),
    now,
  ).join('\n');
  t.match(folder, `/srv/docs: ${SHOWN} is in the way`);
  t.match(folder, `  bob: error, never synced (cannot write ${SHOWN})`);
  t.notOk(folder.includes('\u202e'));
});
