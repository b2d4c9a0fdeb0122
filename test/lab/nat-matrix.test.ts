// The NAT matrix (issue 28): for every pair of NAT kinds, two clawpeer homes behind their NATs
// and a rendezvous on the public segment; pairing with no address typed (by default a short code:
// `pair invite` on one side, `pair join CODE` on the other, the number looked up at the
// rendezvous; CLAWPEER_LAB_PAIRING=id pins by `pair add ID` instead), `ping`, a 64 MiB push
// (content verified) and a two-way sync, and the path each cell took against the prediction.
// Slow (minutes): run by `npm run test:lab`, not by `npm test`.
//   CLAWPEER_LAB_CELLS     cells to run, e.g. "none+eim,symmetric+symmetric" (default: all 15)
//   CLAWPEER_LAB_PUSH_MIB  the push's size in MiB (default 64)
//   CLAWPEER_LAB_RESULTS   where the JSON results go (default bench/results/tmp/nat-matrix.json)
// In each cell the home behind the more restrictive NAT dials the other (the dialer can always
// choose the more open side as the listener to reach); both homes run listeners.
import t, { type Test } from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, open, readdir, readFile, writeFile } from 'node:fs/promises';
import { release, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { initNode } from '../e2e/cli-harness.js';
import { cliIn, reachCliSkipReason, startIn, type LabProcess } from './lab-cli.js';
import { createLab, labSkipReason, type Lab, type NatKind } from './netlab.js';

/** Most open first: in a cell, the later kind dials the earlier. */
const OPENNESS: readonly NatKind[] = ['none', 'upnp', 'eim', 'port-restricted', 'symmetric'];
const RENDEZVOUS_PORT = 7800;
const LISTEN_PORT = 7700;
const PUSH_MIB = Number(process.env['CLAWPEER_LAB_PUSH_MIB'] ?? 64);
const PAIRING = process.env['CLAWPEER_LAB_PAIRING'] === 'id' ? 'id' : 'code';
const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const RESULTS = process.env['CLAWPEER_LAB_RESULTS'] ?? path.join(REPO, 'bench', 'results', 'tmp', 'nat-matrix.json');

type PathKind = 'lan' | 'direct' | 'mapped' | 'punched' | 'relayed';

/**
 * The path a dial should take. The target's listener is reachable as such when it is public
 * (direct) or port-mapped (mapped); otherwise the two traversal sockets punch, which fails only
 * when one side is symmetric and the other filters by endpoint (port-restricted or symmetric):
 * then the relay. (A upnp home maps its traversal socket too, so it punches as a full cone.)
 */
export function predictPath(dialer: NatKind, target: NatKind): PathKind {
  if (target === 'none') return 'direct';
  if (target === 'upnp') return 'mapped';
  const filtering = (k: NatKind): boolean => k === 'port-restricted' || k === 'symmetric';
  if ((dialer === 'symmetric' && filtering(target)) || (target === 'symmetric' && filtering(dialer))) return 'relayed';
  return 'punched';
}

interface Cell {
  readonly name: string;
  readonly dialer: NatKind;
  readonly target: NatKind;
}

function allCells(): Cell[] {
  const cells: Cell[] = [];
  for (let i = 0; i < OPENNESS.length; i++) {
    for (let j = i; j < OPENNESS.length; j++)
      cells.push({ name: `${OPENNESS[i]}+${OPENNESS[j]}`, target: OPENNESS[i]!, dialer: OPENNESS[j]! });
  }
  return cells;
}

function chosenCells(): Cell[] {
  const wanted = (process.env['CLAWPEER_LAB_CELLS'] ?? 'all')
    .split(',')
    .map((c) => c.trim())
    .filter((c) => c !== '');
  const cells = allCells();
  if (wanted.includes('all')) return cells;
  return wanted.map((w) => {
    const [a, b] = w.split('+');
    const cell = cells.find((c) => (c.target === a && c.dialer === b) || (c.target === b && c.dialer === a));
    if (cell === undefined)
      throw new Error(`CLAWPEER_LAB_CELLS: no cell ${w} (kinds: ${OPENNESS.join(', ')}; e.g. none+eim)`);
    return cell;
  });
}

async function sha256(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Writes `mib` MiB of random bytes, 1 MiB at a time. */
async function randomFile(file: string, mib: number): Promise<void> {
  const handle = await open(file, 'w');
  try {
    for (let i = 0; i < mib; i++) await handle.write(randomBytes(1 << 20));
  } finally {
    await handle.close();
  }
}

interface CellResult {
  cell: string;
  dialer: NatKind;
  target: NatKind;
  predicted: PathKind;
  path: string | null;
  pushPath: string | null;
  pingRttMs: number | null;
  pushMiB: number;
  pushSeconds: number | null;
  syncSeconds: number | null;
  ok: boolean;
  error?: string;
}

const skip = labSkipReason() ?? reachCliSkipReason();
if (skip !== undefined) {
  t.comment(`skipping the NAT matrix: ${skip}`);
  t.pass(`skipped: ${skip}`, { skip });
} else {
  const results: CellResult[] = [];
  const startedAt = new Date().toISOString();
  t.teardown(async () => {
    await mkdir(path.dirname(RESULTS), { recursive: true });
    const conditions = {
      node: process.version,
      kernel: release(),
      pushMiB: PUSH_MIB,
      lab: 'network namespaces, veth, nftables NAT, miniupnpd (test/lab/README.md)',
    };
    await writeFile(
      RESULTS,
      JSON.stringify({ startedAt, finishedAt: new Date().toISOString(), conditions, cells: results }, null, 2) + '\n',
    );
    t.comment(`results: ${RESULTS}`);
  });

  for (const cell of chosenCells()) {
    t.test(`${cell.name}: ${cell.dialer} dials ${cell.target}`, async (t) => {
      const predicted = predictPath(cell.dialer, cell.target);
      const result: CellResult = {
        cell: cell.name,
        dialer: cell.dialer,
        target: cell.target,
        predicted,
        path: null,
        pushPath: null,
        pingRttMs: null,
        pushMiB: PUSH_MIB,
        pushSeconds: null,
        syncSeconds: null,
        ok: false,
      };
      results.push(result);
      const lab: Lab = await createLab([cell.dialer, cell.target]);
      const running: LabProcess[] = [];
      const logs: string[] = [];
      t.teardown(async () => {
        for (const p of running) await p.stop();
        await lab.close();
        // Each cell's logs (the rendezvous, both listeners, the dialer's commands) beside the results.
        const dir = path.join(path.dirname(RESULTS), 'nat-matrix-logs');
        await mkdir(dir, { recursive: true });
        const processes = running.map(
          (p, i) => `== ${['rendezvous', 'target listener', 'dialer listener'][i] ?? `process ${i}`}\n${p.stderr()}`,
        );
        await writeFile(path.join(dir, `${result.cell}.log`), [...processes, ...logs].join('\n'));
      });
      try {
        await runCell(t, lab, running, result, logs);
        result.ok = result.path === predicted && result.pushPath === predicted && result.syncSeconds !== null;
      } catch (err) {
        result.error = err instanceof Error ? err.message.slice(0, 2000) : String(err);
        throw err;
      }
    });
  }

  async function runCell(t: Test, lab: Lab, running: LabProcess[], result: CellResult, logs: string[]): Promise<void> {
    const rv = `${lab.pub.address}:${RENDEZVOUS_PORT}`;
    const dialerNs = lab.homes[0]!.hosts[0]!.ns;
    const targetNs = lab.homes[1]!.hosts[0]!.ns;
    const work = await mkdtemp(path.join(tmpdir(), `clawpeer-matrix-${result.cell}-`));
    const dialer = await initNode('matrix-dialer');
    const target = await initNode('matrix-target');
    const syncShare = path.join(work, 'target-sync');
    const syncLocal = path.join(work, 'dialer-sync');
    await mkdir(syncShare, { recursive: true });
    await mkdir(syncLocal, { recursive: true });

    running.push(await startIn(lab, lab.pub.ns, ['rendezvous', '--listen', rv, '--json'], { readyOptionalMs: 1_500 }));
    const listen = (home: string, extra: string[] = []): string[] => [
      '-v',
      '--home',
      home,
      '--rendezvous',
      rv,
      'listen',
      '--host',
      '0.0.0.0',
      '--port',
      String(LISTEN_PORT),
      '--json',
      ...extra,
    ];
    const isListening = (l: Record<string, unknown>): boolean => l['event'] === 'listening';
    running.push(
      await startIn(
        lab,
        targetNs,
        listen(target.home, ['--share', `inbox=${path.join(target.home, 'inbox')}`, '--share', `sync=${syncShare}`]),
        { isReady: isListening },
      ),
    );
    running.push(await startIn(lab, dialerNs, listen(dialer.home), { isReady: isListening }));

    if (PAIRING === 'code') {
      // A short code: the target's listener holds it, the dialer finds it by number at the rendezvous.
      const invite = await cliIn(lab, targetNs, [
        '--home',
        target.home,
        '--rendezvous',
        rv,
        'pair',
        'invite',
        '--no-wait',
        '--name',
        'dialer',
        '--json',
      ]);
      t.equal(invite.code, 0, `pair invite: ${invite.stderr}`);
      const code = String(invite.json[0]?.['code']);
      const joined = await cliIn(
        lab,
        dialerNs,
        ['-v', '--home', dialer.home, '--rendezvous', rv, 'pair', 'join', code, '--name', 'target', '--json'],
        60_000,
      );
      logs.push(`== pair join (exit ${String(joined.code)})\n${joined.stdout}\n${joined.stderr}`);
      t.equal(joined.code, 0, `pair join ${code} without an address: ${joined.stderr}`);
      if (joined.code !== 0) return;
    } else {
      // Pairing by id alone: each finds the other through the rendezvous.
      for (const [ns, home, id, name] of [
        [dialerNs, dialer.home, target.id, 'target'],
        [targetNs, target.home, dialer.id, 'dialer'],
      ] as const) {
        const r = await cliIn(lab, ns, ['--home', home, '--rendezvous', rv, 'pair', 'add', id, '--name', name]);
        t.equal(r.code, 0, `pair add ${name} without an address: ${r.stderr}`);
      }
    }

    const cli = (args: string[], timeoutMs?: number) =>
      cliIn(lab, dialerNs, ['--home', dialer.home, '--rendezvous', rv, ...args], timeoutMs);
    const ping = await cli(['-v', 'ping', 'target', '--count', '3', '--json'], 60_000);
    logs.push(`== ping (exit ${String(ping.code)})\n${ping.stdout}\n${ping.stderr}`);
    t.equal(ping.code, 0, `ping: ${ping.stderr}`);
    if (ping.code !== 0) return;
    const pongs = ping.json.filter((l) => l['event'] === 'pong');
    t.equal(pongs.length, 3, 'three pongs');
    result.path = typeof pongs[0]?.['path'] === 'string' ? pongs[0]['path'] : null;
    result.pingRttMs = typeof pongs[0]?.['rttMs'] === 'number' ? pongs[0]['rttMs'] : null;
    t.equal(
      result.path,
      result.predicted,
      `the path: ${result.dialer} dialling ${result.target} should go ${result.predicted}`,
    );

    const file = path.join(work, 'payload.bin');
    await randomFile(file, PUSH_MIB);
    const started = Date.now();
    const push = await cli(['push', file, 'target', '--json'], 600_000);
    logs.push(`== push (exit ${String(push.code)})\n${push.stderr}`);
    t.equal(push.code, 0, `push: ${push.stderr}`);
    if (push.code !== 0) return;
    result.pushSeconds = (Date.now() - started) / 1000;
    const done = push.json.find((l) => l['event'] === 'done');
    result.pushPath = typeof done?.['path'] === 'string' ? done['path'] : null;
    t.equal(result.pushPath, result.predicted, 'the push took the predicted path too');
    t.equal(
      await sha256(path.join(target.home, 'inbox', 'payload.bin')),
      await sha256(file),
      `${PUSH_MIB} MiB arrived intact`,
    );

    await writeFile(path.join(syncLocal, 'from-dialer.txt'), `dialer ${result.cell}\n`);
    await writeFile(path.join(syncShare, 'from-target.txt'), `target ${result.cell}\n`);
    const syncStarted = Date.now();
    const sync = await cli(['sync', syncLocal, 'target:sync', '--json'], 120_000);
    logs.push(`== sync (exit ${String(sync.code)})\n${sync.stderr}`);
    t.equal(sync.code, 0, `sync: ${sync.stderr}`);
    if (sync.code !== 0) return;
    result.syncSeconds = (Date.now() - syncStarted) / 1000;
    t.same(
      (await readdir(syncLocal)).filter((n) => !n.startsWith('.')).sort(),
      ['from-dialer.txt', 'from-target.txt'],
      "the dialer got the target's file",
    );
    t.same(
      (await readdir(syncShare)).filter((n) => !n.startsWith('.')).sort(),
      ['from-dialer.txt', 'from-target.txt'],
      "the target got the dialer's file",
    );
    t.equal(await readFile(path.join(syncShare, 'from-dialer.txt'), 'utf8'), `dialer ${result.cell}\n`);
  }
}
