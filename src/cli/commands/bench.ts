// `bench`: measure a link through clawpeer's own data plane, against a real paired peer
// (--peer) or on this machine through the built-in impairment relay (--simulate), over a matrix
// of windows, streams, connections and simulated RTTs/losses. Prints a table (or --json, one
// object with every condition; or --csv, one row per run), writes --svg FILE, shows a progress
// line on stderr while it runs (TTY only). The work is in src/benchkit/.
import { stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Argv } from 'yargs';
import { planBench, type BenchPlanInput } from '../../benchkit/bench-plan.js';
import { formatTable, toBenchJson, toCsv } from '../../benchkit/report.js';
import type { BenchProgress } from '../../benchkit/bench-results.js';
import { chartFromBench, renderLineChart } from '../../benchkit/svg.js';
import { ClawpeerError } from '../../errors.js';
import { loadIdentity, PeerStore, resolvePeer } from '../../home/facade.js';
import { flagText } from '../args.js';
import type { Runner } from '../context.js';
import { human } from '../../format.js';
import { DEFAULT_STREAMS, DEFAULT_WINDOW } from './transfer.js';

/** Redraw the progress line at most this often, ms. */
const PROGRESS_INTERVAL_MS = 200;

const optionalString = (v: unknown): string | undefined => (v === undefined ? undefined : flagText(v));
const optionalNumber = (v: unknown): number | undefined => (v === undefined ? undefined : Number(v));

/** The command's flags as the plan's input (validation happens in planBench). */
export function benchInputFromArgs(args: Record<string, unknown>): BenchPlanInput {
  const input: Record<string, unknown> = {
    peer: optionalString(args['peer']),
    addr: optionalString(args['addr']),
    simulate: optionalString(args['simulate']),
    workload: optionalString(args['workload']),
    size: optionalString(args['size']),
    files: optionalNumber(args['files']),
    fileSize: optionalString(args['file-size']),
    window: optionalString(args['window']),
    streams: optionalString(args['streams']),
    connections: optionalString(args['connections']),
    sessionConnections: optionalString(args['session-connections']),
    rtt: optionalString(args['rtt']),
    loss: optionalString(args['loss']),
    transport: optionalString(args['transport']),
    repeat: optionalNumber(args['repeat']),
    warmup: optionalString(args['warmup']),
    changed: optionalNumber(args['changed']),
  };
  return Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)); // exactOptionalPropertyTypes: absent, not undefined
}

/** `dir` resolved, when it is an existing directory; else USAGE naming `flag`. */
async function existingDir(dir: string, flag: string): Promise<string> {
  const st = await stat(dir).catch(() => undefined);
  if (st === undefined) throw new ClawpeerError('USAGE', `${flag} ${dir}: no such directory`);
  if (!st.isDirectory()) throw new ClawpeerError('USAGE', `${flag} ${dir}: not a directory`);
  return path.resolve(dir);
}

function progressLine(): { update(p: BenchProgress): void; stop(): void } {
  if (!process.stderr.isTTY) return { update() {}, stop() {} };
  let last = 0;
  let shown = false;
  return {
    update(p) {
      const now = Date.now();
      if (now - last < PROGRESS_INTERVAL_MS && p.phase !== 'done') return;
      last = now;
      const bytes = p.totalBytes > 0 ? ` ${human(p.bytes)}/${human(p.totalBytes)}` : '';
      const text = p.run === 0 ? `bench: ${p.label}` : `bench run ${p.run}/${p.runs}: ${p.label}: ${p.phase}${bytes}`;
      const width = Math.max(20, (process.stderr.columns ?? 100) - 1);
      process.stderr.write(`\r${text.slice(0, width).padEnd(width)}`);
      shown = true;
    },
    stop() {
      if (shown) process.stderr.write(`\r${' '.repeat(Math.max(20, (process.stderr.columns ?? 100) - 1))}\r`);
      shown = false;
    },
  };
}

export function registerBenchCommands(cli: Argv, run: Runner): Argv {
  return cli.command(
    'bench',
    "measure a link through clawpeer's data plane: a real paired peer (--peer) or a simulated WAN on this machine (--simulate)",
    (y) =>
      y
        .option('peer', {
          type: 'string',
          describe:
            'pair name or node id of a listening peer; runs push into clawpeer-bench/<timestamp> of its default share',
        })
        .option('addr', { type: 'string', describe: "HOST:PORT of the peer (default: the pair entry's address)" })
        .option('simulate', {
          type: 'string',
          describe:
            'simulated link, e.g. rtt=50ms,jitter=5ms,loss=1%,rate=100mbit (listener, relay and client on this machine)',
        })
        .option('workload', {
          type: 'string',
          choices: ['large', 'small', 'revisions', 'revisions-seq', 'sync'],
          describe:
            'large: one file (--size); small: --files of --file-size; revisions: --files (100) revisions of a --file-size (4KiB) page in one push, W in flight; revisions-seq: the same as sequential pushes; sync: a two-way sync of --files after --changed of them changed (--simulate only)',
        })
        .option('size', { type: 'string', describe: 'large workload size, e.g. 256MiB, 1GiB (default 64MiB)' })
        .option('files', {
          type: 'number',
          describe: 'files (small, default 1000) or revisions (revisions, default 100)',
        })
        .option('file-size', { type: 'string', describe: 'size of each small file or page (default 4KiB)' })
        .option('changed', {
          type: 'number',
          describe:
            'sync workload: files rewritten between the untimed first sync and the timed second (default 10; 0: a no-op sync)',
        })
        .option('window', { type: 'string', describe: `windows to sweep, e.g. 1,4,16,64 (default ${DEFAULT_WINDOW})` })
        .option('streams', {
          type: 'string',
          describe: `streams per connection to sweep, e.g. 1,2,4,8 (default ${DEFAULT_STREAMS})`,
        })
        .option('connections', {
          type: 'string',
          describe: 'separate sessions to split each run over (part files, one push each), e.g. 1,8 (default 1)',
        })
        .option('session-connections', {
          type: 'string',
          describe:
            "push's own --connections to sweep: joined QUIC connections of one session, e.g. 1,auto or 1,4,8 (default 1)",
        })
        .option('rtt', {
          type: 'string',
          describe: "simulate: RTTs to sweep, ms, overriding the spec's rtt, e.g. 1,5,50,100",
        })
        .option('loss', {
          type: 'string',
          describe: "simulate: random loss to sweep, %, overriding the spec's loss, e.g. 0,0.1,0.5,1",
        })
        .option('transport', {
          type: 'string',
          describe: 'quic, tcp (TLS-over-TCP fallback through a TCP-level relay: no loss) or quic,tcp (default quic)',
        })
        .option('warmup', {
          type: 'string',
          describe:
            'push this much (e.g. 1MiB) untimed on each connection before each run, to time warm connections (default: cold)',
        })
        .option('repeat', { type: 'number', default: 1, describe: 'runs per setting (the table shows medians)' })
        .option('csv', {
          type: 'boolean',
          default: false,
          describe: 'one CSV row per run on stdout instead of the table',
        })
        .option('svg', {
          type: 'string',
          describe: 'write a chart (goodput vs RTT/loss/window/streams, one line per other setting) to FILE',
        })
        .option('out', { type: 'string', describe: 'also write the full JSON document to FILE' })
        .option('work-dir', {
          type: 'string',
          describe:
            "directory for the workload files and, with --simulate, the simulated peer's shares (default: the OS temp dir); with --simulate the JSON records how fast files are created there",
        })
        .example(
          '$0 bench --simulate rtt=50ms,rate=100mbit --size 256MiB --window 4,16,64',
          'a large file through a simulated 50 ms, 100 Mbit/s link',
        )
        .example(
          '$0 bench --simulate rate=100mbit --workload revisions --rtt 1,5,50,100 --window 1,4,16 --svg rev.svg',
          'the sliding-window benchmark',
        )
        .example('$0 bench --peer bob --size 1GiB --streams 1,4', 'a real link to the paired peer bob'),
    run(async (ctx, args) => {
      const csv = args['csv'] === true;
      if (csv && ctx.out.json)
        throw new ClawpeerError('USAGE', '--json and --csv are exclusive: pick one output format');
      const timestamp = new Date().toISOString().replace(/[:.]/g, '-');
      const plan = planBench(benchInputFromArgs(args), { window: DEFAULT_WINDOW, streams: DEFAULT_STREAMS }, timestamp);
      let peer:
        | { identity: Awaited<ReturnType<typeof loadIdentity>>; resolved: Awaited<ReturnType<typeof resolvePeer>> }
        | undefined;
      if (plan.target.kind === 'peer') {
        const identity = await loadIdentity(ctx.home.identityKeyFile);
        const resolved = await resolvePeer(new PeerStore(ctx.home.peersFile), plan.target.peer, plan.target.addr);
        // A benchmark measures one known path: it dials one address, never a discovery race.
        if (resolved.address === undefined)
          throw new ClawpeerError(
            'USAGE',
            `bench dials one address and peer ${resolved.name} has none pinned: pass --addr HOST:PORT`,
          );
        peer = { identity, resolved };
      }
      const workDir =
        args['work-dir'] === undefined ? undefined : await existingDir(flagText(args['work-dir']), '--work-dir');
      const { runBench } = await import('../../benchkit/runner.js');
      const progress = progressLine();
      let report;
      try {
        report = await runBench(plan, {
          log: ctx.log.child('bench'),
          signal: ctx.signal,
          onProgress: (p) => progress.update(p),
          ...(peer === undefined ? {} : { peer }),
          ...(workDir === undefined ? {} : { workDir }),
        });
      } finally {
        progress.stop();
      }
      const json = toBenchJson(report);
      if (args['svg'] !== undefined) {
        const file = flagText(args['svg']);
        try {
          await writeFile(file, renderLineChart(chartFromBench(json)));
        } catch (err) {
          throw new ClawpeerError('IO', `cannot write --svg ${file}: ${(err as Error).message}`, { cause: err });
        }
      }
      if (args['out'] !== undefined) {
        const file = flagText(args['out']);
        try {
          await writeFile(file, JSON.stringify(json, null, 2) + '\n');
        } catch (err) {
          throw new ClawpeerError('IO', `cannot write --out ${file}: ${(err as Error).message}`, { cause: err });
        }
      }
      // Machine output keeps stdout clean: the loud warnings go to stderr as well.
      if (ctx.out.json || csv) for (const w of json.warnings) process.stderr.write(`${w}\n`);
      if (csv) ctx.out.emit({}, toCsv(json).trimEnd());
      else ctx.out.emit({ event: 'bench', ...json }, formatTable(json));
    }),
  );
}
