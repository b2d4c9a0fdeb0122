// --chmod clauses as rsync reads them, checked by hand and against chmod(1) itself.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { combineChmods, parseChmod } from '../../src/transfer/chmod.js';

const oct = (n: number): string => n.toString(8).padStart(3, '0');

t.test('octal and symbolic clauses, D and F for directories or files only, applied in order', async (t) => {
  const cases: [string, number, 'file' | 'dir', number][] = [
    ['D755,F644', 0o600, 'file', 0o644],
    ['D755,F644', 0o700, 'dir', 0o755],
    ['go-w', 0o777, 'file', 0o755],
    ['u+x', 0o644, 'file', 0o744],
    ['a=r', 0o755, 'dir', 0o444],
    ['=r', 0o755, 'file', 0o444],
    ['+X', 0o644, 'file', 0o644],
    ['+X', 0o744, 'file', 0o755],
    ['+X', 0o600, 'dir', 0o711],
    ['Fa-x,Da+rx', 0o755, 'file', 0o644],
    ['Fa-x,Da+rx', 0o700, 'dir', 0o755],
    ['g=u', 0o640, 'file', 0o660],
    ['o=g', 0o750, 'dir', 0o755],
    ['ug+w,o-rwx', 0o444, 'file', 0o660],
    ['u=rwx,g=rx,o=', 0o000, 'dir', 0o750],
    ['Dg+s', 0o755, 'dir', 0o755],
    ['D2775', 0o700, 'dir', 0o775],
    ['u-w+x', 0o644, 'file', 0o544],
  ];
  for (const [spec, mode, kind, want] of cases)
    t.equal(oct(parseChmod(spec)(mode, kind)), oct(want), `${spec} on ${kind} ${oct(mode)}`);
  const both = combineChmods(['F600', 'u+x']);
  t.equal(both?.(0o644, 'file'), 0o700, 'several --chmod apply in the order given');
  t.equal(combineChmods([]), undefined);
});

t.test('a clause that is not chmod syntax is a usage error naming it', async (t) => {
  for (const bad of ['', 'D', 'x+r', 'u+q', '999', 'u+r,,g+w', 'F 644', 'Q755']) {
    t.throws(() => parseChmod(bad), { code: 'USAGE', message: /is not a chmod clause/ }, JSON.stringify(bad));
  }
  t.throws(() => parseChmod('u+r,zz'), { message: /"zz" is not a chmod clause/ });
});

t.test('symbolic clauses with a who agree with chmod(1) on real files and directories', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'clawpeer-chmod-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const specs = [
    'u+x',
    'g-r',
    'o=rw',
    'a+X',
    'ug=rx',
    'go-w',
    'u=rwx,g=rx,o=',
    'g=u',
    'o=g',
    'u-w+x',
    'a-x,u+X',
    'ug+X',
  ];
  const modes = [0o000, 0o644, 0o755, 0o600, 0o751, 0o444, 0o070];
  let n = 0;
  for (const spec of specs) {
    for (const mode of modes) {
      for (const kind of ['file', 'dir'] as const) {
        const p = path.join(dir, `e${n++}`);
        if (kind === 'dir') mkdirSync(p);
        else writeFileSync(p, '');
        chmodSync(p, mode);
        execFileSync('chmod', [spec, p]);
        t.equal(oct(parseChmod(spec)(mode, kind)), oct(statSync(p).mode & 0o777), `${spec} on ${kind} ${oct(mode)}`);
        chmodSync(p, 0o700);
      }
    }
  }
});
