// `doctor`: runs the health checks of ops/doctor.ts and prints each as it completes: a table
// row (ok / warn / FAIL, what was found, the fix) or, with --json, one
// {"event":"check","name","status","detail","fix"} line per check and a final
// {"event":"summary","ok","warn","fail","checks"}. Exits 1 when any check failed (warnings
// alone exit 0), so `clawpeer doctor --expect-listener --no-peers` works as a health check.
import type { Argv } from 'yargs';
import { ClawpeerError } from '../../errors.js';
import { DEFAULT_LISTEN_PORT, readListening } from '../../home/facade.js';
import { intOption } from '../args.js';
import { DEFAULT_PEER_TIMEOUT_MS, runDoctor, summarize, type CheckResult } from '../../ops/doctor.js';
import type { Runner } from '../context.js';

const STATUS_LABEL: Record<CheckResult['status'], string> = { ok: 'ok  ', warn: 'warn', fail: 'FAIL' };
/** Wide enough for the fixed check names; peer names longer than this just push the column. */
const NAME_COLUMN_CHARS = 12;

function humanRow(r: CheckResult): string {
  const row = `${STATUS_LABEL[r.status]}  ${r.name.padEnd(NAME_COLUMN_CHARS)}  ${r.detail}`;
  return r.fix === undefined || r.status === 'ok'
    ? row
    : `${row}\n${' '.repeat(6 + NAME_COLUMN_CHARS + 2)}fix: ${r.fix}`;
}

export function registerDoctorCommands(cli: Argv, run: Runner): Argv {
  return cli.command(
    'doctor',
    'check this machine for clawpeer: UDP buffers, port, identity, QUIC and BLAKE3 bindings, clock, paired peers; says how to fix each',
    (y) =>
      y
        .option('port', {
          type: 'number',
          describe: `the port \`clawpeer listen\` uses (UDP and TCP; default: this home's running listener's, else ${DEFAULT_LISTEN_PORT})`,
        })
        .option('host', {
          type: 'string',
          array: true,
          describe: 'addresses to test the port on (default: 0.0.0.0 and 127.0.0.1)',
        })
        .option('peers', {
          type: 'boolean',
          default: true,
          describe: 'dial paired peers that have an address (--no-peers skips it)',
        })
        .option('peer-timeout', {
          type: 'number',
          default: DEFAULT_PEER_TIMEOUT_MS,
          describe: 'milliseconds each peer gets to connect and answer one ping',
        })
        .option('expect-listener', {
          type: 'boolean',
          default: false,
          describe: "health check: fail unless this node's own listener holds the port",
        })
        .example('$0 doctor', 'run every check')
        .example('$0 doctor --expect-listener --no-peers', 'container/systemd health check: is our listener up?'),
    run(async (ctx, args) => {
      // Without --port, the port this home's listener runs on (its listening.json): checking the
      // default port while it listens elsewhere would call its port free and --expect-listener would fail.
      const port =
        args['port'] !== undefined
          ? intOption(args['port'], '--port', 0, 65535)
          : ((await readListening(ctx.home.dir))?.port ?? DEFAULT_LISTEN_PORT);
      const peerTimeoutMs = intOption(args['peer-timeout'], '--peer-timeout', 100, 60_000);
      const hosts = args['host'] as string[] | undefined;
      const { rendezvous } = await ctx.reach();
      const results: CheckResult[] = [];
      for await (const r of runDoctor({
        home: ctx.home,
        port,
        log: ctx.log.child('doctor'),
        peers: args['peers'] !== false,
        peerTimeoutMs,
        expectListener: args['expect-listener'] === true,
        signal: ctx.signal,
        ...(hosts !== undefined && hosts.length > 0 ? { portHosts: hosts } : {}),
        // The global --rendezvous, else config.json's `rendezvous` (ctx.reach() reads both).
        ...(rendezvous === undefined ? {} : { rendezvous }),
      })) {
        results.push(r);
        ctx.out.emit(
          { event: 'check', name: r.name, status: r.status, detail: r.detail, fix: r.fix ?? null },
          humanRow(r),
        );
      }
      const s = summarize(results);
      ctx.out.emit(
        { event: 'summary', ok: s.ok, warn: s.warn, fail: s.fail, checks: results.length },
        `\n${s.ok} ok, ${s.warn} warning${s.warn === 1 ? '' : 's'}, ${s.fail} failed`,
      );
      if (s.fail > 0) {
        const failed = results.filter((r) => r.status === 'fail').map((r) => r.name);
        throw new ClawpeerError(
          'CHECK_FAILED',
          `${s.fail} check${s.fail === 1 ? '' : 's'} failed: ${failed.join(', ')} (fixes above)`,
        );
      }
    }),
  );
}
