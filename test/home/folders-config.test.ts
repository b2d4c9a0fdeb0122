// The `folders` of config.json: each key checked and named on error, versioning syntax, and
// edits that keep the file's other keys.
import t from 'tap';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadReachConfig } from '../../src/home/config-file.js';
import {
  DEFAULT_VERSIONING,
  editFolders,
  loadFolders,
  parseFolders,
  versioningProblem,
} from '../../src/home/folders-config.js';

t.test('versioning: keep-last:N, trashcan:DAYS, staggered[:DAYS]; nothing else', async (t) => {
  for (const good of ['keep-last:10', 'trashcan:30', 'staggered', 'staggered:90'])
    t.equal(versioningProblem(good), undefined, good);
  for (const bad of [
    'keep-last',
    'keep-last:0',
    'keep-last:-1',
    'keep-last:1e3',
    'simple',
    'Staggered',
    ' staggered',
  ]) {
    t.match(versioningProblem(bad), /./, bad);
  }
});

t.test('defaults, and each bad key named with its folder', async (t) => {
  t.same(parseFolders(undefined, 'f'), []);
  t.same(parseFolders([{ id: 'docs', path: '/srv/docs', with: ['alice', 'alice'] }], 'f'), [
    {
      id: 'docs',
      path: '/srv/docs',
      with: ['alice'],
      mode: 'two-way',
      versioning: DEFAULT_VERSIONING,
      paused: false,
      intervalS: 60,
    },
  ]);
  const bad: [unknown, RegExp][] = [
    [{}, /folders must be a list/],
    [[1], /folders\[0\] must be an object/],
    [[{ id: 'docs', path: '/d', with: [], colour: 'red' }], /folders\[0\] \(docs\): unknown key "colour"/],
    [[{ id: '../x', path: '/d', with: [] }], /folders\[0\] \(\.\.\/x\)\.id must be/],
    [[{ id: 'docs', path: 'rel/dir', with: [] }], /\(docs\)\.path must be an absolute path, got "rel\/dir"/],
    [[{ id: 'docs', path: '/d', with: 'alice' }], /\(docs\)\.with must be a list/],
    [
      [{ id: 'docs', path: '/d', with: [], mode: 'both' }],
      /\(docs\)\.mode must be one of two-way, send-only, receive-only, got "both"/,
    ],
    [
      [{ id: 'docs', path: '/d', with: [], versioning: 'keep-last:0' }],
      /\(docs\)\.versioning must be keep-last:N, trashcan:DAYS or staggered\[:DAYS\], got "keep-last:0"/,
    ],
    [[{ id: 'docs', path: '/d', with: [], paused: 'yes' }], /\(docs\)\.paused must be true or false/],
    [
      [{ id: 'docs', path: '/d', with: [], intervalS: 0 }],
      /\(docs\)\.intervalS must be an integer of seconds in 1\.\.86400, got 0/,
    ],
    [
      [
        { id: 'docs', path: '/d', with: [] },
        { id: 'docs', path: '/e', with: [] },
      ],
      /folders\[1\] \(docs\)\.id "docs" is given twice/,
    ],
    [
      [
        { id: 'a', path: '/d', with: [] },
        { id: 'b', path: '/d/', with: [] },
      ],
      /folders\[1\] \(b\)\.path \/d is the path of another folder too/,
    ],
  ];
  for (const [raw, message] of bad)
    t.throws(() => parseFolders(raw, 'config.json'), { code: 'CONFIG_INVALID', message }, JSON.stringify(raw));
});

t.test('config.json: folders checked by every command; edits keep the other keys', async (t) => {
  const home = await mkdtemp(join(tmpdir(), 'clawpeer-folders-config-'));
  await writeFile(
    join(home, 'config.json'),
    JSON.stringify({ lanDiscovery: false, folders: [{ id: 'docs', path: '/d', with: ['bob'], mode: 'sideways' }] }),
  );
  await t.rejects(loadReachConfig(home), {
    code: 'CONFIG_INVALID',
    message: /config\.json: folders\[0\] \(docs\)\.mode must be/,
  });
  await writeFile(join(home, 'config.json'), JSON.stringify({ lanDiscovery: false }));
  t.same(await loadFolders(home), []);
  await editFolders(home, (fs) => [
    ...fs,
    {
      id: 'docs',
      path: '/srv/docs',
      with: ['bob'],
      mode: 'receive-only',
      versioning: 'trashcan:7',
      paused: false,
      intervalS: 60,
    },
  ]);
  await editFolders(home, (fs) => fs.map((f) => ({ ...f, paused: true })));
  const raw = JSON.parse(await readFile(join(home, 'config.json'), 'utf8')) as Record<string, unknown>;
  t.same(raw, {
    lanDiscovery: false,
    folders: [
      { id: 'docs', path: '/srv/docs', with: ['bob'], mode: 'receive-only', versioning: 'trashcan:7', paused: true },
    ],
  });
  t.equal((await loadReachConfig(home)).lanDiscovery, false, 'the reach config still reads it');
  await t.rejects(
    editFolders(home, (fs) => [...fs, ...fs.map((f) => ({ ...f, id: 'other' }))]),
    { code: 'CONFIG_INVALID', message: /is the path of another folder too/ },
  );
  t.equal((await loadFolders(home)).length, 1, 'a refused edit writes nothing');
});
