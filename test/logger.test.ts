import t from 'tap';
import { createLogger } from '../src/logger.js';

t.test("a field carrying a peer's text cannot forge a log line or disguise one", async (t) => {
  const lines: string[] = [];
  const log = createLogger('clawpeer:test', 0, (l) => lines.push(l));
  log.warn('peer session failed', {
    path: 'a\n2026-01-01T00:00:00.000Z WARN clawpeer:listen: paired by code',
    name: 'invoice\u202efdp.exe',
    list: ['x\u202ey'],
    count: 3,
  });
  t.equal(lines.length, 1);
  const line = lines[0]!;
  t.equal(line.split('\n').length, 2, 'one line, ended by its own newline');
  t.match(line, / WARN clawpeer:test: peer session failed path=a\\#0122026-01-01T00:00:00.000Z WARN /);
  t.match(line, / name=invoice\\u202efdp\.exe /);
  t.match(line, / list=\["x\\u202ey"\] count=3\n$/);
  t.notMatch(line, /\u202e/);
});
