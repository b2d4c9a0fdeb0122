// What the traversal socket's extra hop costs: a 64 MiB push on loopback, three ways, each
// between the same two processes:
//   direct:  the dialer's quinn to the listener's quinn (the baseline);
//   punched: through both traversal sockets (dialer forwarder -> dialer traversal socket ->
//            listener traversal socket -> listener forwarder -> quinn), as after a hole punch;
//   relayed: the same, plus the rendezvous relay in between.
// Three processes, as in use: the rendezvous (`clawpeer rendezvous`), the listener with its
// traversal socket (this script with --listener-side), the dialer (this process). Reported:
// median MiB/s of RUNS pushes, and CPU-seconds per GiB summed over the three processes
// (/proc/<pid>/stat), since the forwarding costs CPU wherever it runs.
// Twice: on the usual loopback, and (as root) in a network namespace whose loopback has MTU 1500,
// where datagrams are internet-sized (see measureAtMtu1500).
// Run: npm run build --silent && node dist/bench/reach-hop.js  (writes bench/results/reach-hop.json)
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { generateIdentity, identityFromSeed } from '../src/crypto/identity.js';
import { silentLogger } from '../src/logger.js';
import { resolveConfig } from '../src/home/config.js';
import { PeerStore } from '../src/home/peer-store.js';
import { Listener } from '../src/listener/listener.js';
import { push } from '../src/push-pull/transfer-client.js';
import { startListenerReach } from '../src/reach/listener-reach.js';
import { rendezvousSourcesFor } from '../src/reach/rendezvous-paths.js';
import type { DialCandidate } from '../src/reach/paths.js';
import { dialPeer } from '../src/session/dialer.js';
import { runAsScript, machineConditions, median, MiB, REPO_ROOT, round, writeResult } from './common.js';

const FULL_BYTES = 64 * MiB;
const FULL_RUNS = 5;
const SMOKE_BYTES = 4 * MiB;
const CLI = join(REPO_ROOT, 'bin', 'clawpeer.cjs');
const TICKS_PER_SECOND = 100; // USER_HZ on Linux

function cpuSecondsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

async function firstLine(child: ChildProcess): Promise<Record<string, unknown>> {
  const lines = createInterface({ input: child.stdout! });
  for await (const line of lines) {
    if (line.startsWith('{')) return JSON.parse(line) as Record<string, unknown>;
  }
  throw new Error('child ended before its ready line');
}

/** The listener side: a Listener and its traversal socket, pinning the dialer's key; prints where. */
async function listenerSide(): Promise<void> {
  const [rvPort, dialerId, dir] = process.argv.slice(3);
  const identity = generateIdentity();
  const peers = new PeerStore(join(dir!, 'peers.json'));
  await peers.add(dialerId!, 'dialer');
  const listener = await Listener.start({
    identity,
    peers,
    shares: [{ name: 'inbox', dir: dir!, readOnly: false }],
    host: '127.0.0.1',
    port: 0,
    config: resolveConfig({ transport: 'quic' }),
    log: silentLogger,
  });
  const reach = await startListenerReach({
    identity,
    rendezvous: { host: '127.0.0.1', port: Number(rvPort) },
    bound: listener.bound,
    log: silentLogger,
    muxHost: '127.0.0.1',
  });
  await reach.registered;
  process.stdout.write(
    JSON.stringify({
      id: identity.nodeId,
      publicKey: Buffer.from(identity.publicKey).toString('hex'),
      port: listener.port,
    }) + '\n',
  );
  process.stdin.resume();
  process.stdin.on('end', () => void Promise.all([listener.close(), reach.close()]).then(() => process.exit(0)));
}

interface Row {
  readonly path: string;
  readonly miBps: number;
  readonly miBpsAll: number[];
  readonly cpuSecondsPerGiB: number;
  ratioToDirect?: number;
}

async function measure(BYTES: number, RUNS: number): Promise<Row[]> {
  const dir = await realpath(await mkdtemp(join(tmpdir(), 'clawpeer-reach-hop-')));
  const dialer = identityFromSeed(randomBytes(32));
  const rv = spawn(process.execPath, [CLI, '--json', 'rendezvous', '--listen', '127.0.0.1:0', '--relay-rate', '1GiB'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const rvPort = Number((await firstLine(rv))['port']);
  const side = spawn(
    process.execPath,
    [fileURLToPath(import.meta.url), '--listener-side', String(rvPort), dialer.nodeId, dir],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  // Whatever happens here, the two children go too.
  process.on('exit', () => {
    side.kill('SIGKILL');
    rv.kill('SIGKILL');
  });
  const info = await firstLine(side);
  const peer = {
    id: String(info['id']),
    name: 'listener',
    publicKey: Uint8Array.from(Buffer.from(String(info['publicKey']), 'hex')),
  };
  const src = join(dir, 'src.bin');
  await writeFile(src, randomBytes(BYTES));
  const config = resolveConfig({ transport: 'quic' });
  const pids = [process.pid, side.pid!, rv.pid!];
  const cpuNow = (): number => pids.reduce((s, p) => s + cpuSecondsOf(p), 0);
  const PATHS = ['direct', 'punched', 'relayed'] as const;
  const rates = new Map<string, number[]>(PATHS.map((p) => [p, []]));
  const cpus = new Map<string, number[]>(PATHS.map((p) => [p, []]));
  // Runs interleave the paths, so a load change on the shared machine hits all three alike.
  for (let run = 0; run < (RUNS > 1 ? RUNS + 1 : 1); run++) {
    for (const path of PATHS) {
      const sources = rendezvousSourcesFor({
        rendezvous: { host: '127.0.0.1', port: rvPort },
        identity: dialer,
        log: silentLogger,
        disable: path === 'relayed' ? ['punched'] : ['relayed'],
      });
      const ac = new AbortController();
      let candidate: DialCandidate | undefined;
      for await (const c of (path === 'direct' ? sources.lookup : sources.traversal).find(peer, ac.signal)) {
        candidate = c;
        break;
      }
      ac.abort();
      sources.release();
      if (candidate === undefined || candidate.path() !== path) throw new Error(`no ${path} candidate`);
      const session = await dialPeer({
        identity: dialer,
        peer: { ...peer, address: candidate.address },
        config,
        log: silentLogger,
      });
      const cpu0 = cpuNow();
      const t0 = performance.now();
      await push({
        session,
        share: 'inbox',
        remotePath: `${path}-${run}.bin`,
        localPath: src,
        force: true,
        streams: 4,
        window: 32,
        idleTimeoutMs: config.idleTimeoutMs,
        log: silentLogger,
        signal: new AbortController().signal,
      });
      const seconds = (performance.now() - t0) / 1000;
      const cpu = cpuNow() - cpu0;
      await session.close();
      candidate.release();
      await rm(join(dir, `${path}-${run}.bin`), { recursive: true, force: true });
      if (run === 0 && RUNS > 1) continue; // warm-up: JIT, the listener's first chunk index
      rates.get(path)!.push(BYTES / MiB / seconds);
      cpus.get(path)!.push(cpu / (BYTES / (1024 * MiB)));
      process.stderr.write(`${path} run ${run}: ${round(BYTES / MiB / seconds)} MiB/s, ${round(cpu, 2)} CPU-s\n`);
    }
  }
  const rows: Row[] = PATHS.map((path) => ({
    path,
    miBps: round(median(rates.get(path)!)),
    miBpsAll: rates.get(path)!.map((r) => round(r)),
    cpuSecondsPerGiB: round(median(cpus.get(path)!), 2),
  }));
  const direct = rows[0]!;
  for (const r of rows) r.ratioToDirect = round(r.miBps / direct.miBps, 3);
  side.stdin.end();
  rv.kill('SIGTERM');
  // The listener side writes in `dir` (its home) until it has exited: removing it sooner raced
  // (ENOTEMPTY). SIGKILL after 5 s.
  await new Promise<void>((resolve) => {
    if (side.exitCode !== null || side.signalCode !== null) {
      resolve();
      return;
    }
    const killer = setTimeout(() => side.kill('SIGKILL'), 5_000);
    side.once('exit', () => {
      clearTimeout(killer);
      resolve();
    });
  });
  await rm(dir, { recursive: true, force: true, maxRetries: 3 });
  return rows;
}

const loMtu = (): number => Number(readFileSync('/sys/class/net/lo/mtu', 'utf8').trim());

/**
 * The same measurement in a network namespace whose loopback has an internet-sized MTU (1500):
 * on the usual loopback (MTU 65536) quinn's path MTU discovery grows datagrams to ~64 KiB, so
 * each hop forwards ~45x fewer datagrams than on a real path and the forwarding looks free.
 */
function measureAtMtu1500(): Row[] | undefined {
  const ns = `clawpeer-reach-hop-${process.pid}`;
  try {
    execFileSync('ip', ['netns', 'add', ns]);
  } catch {
    return undefined; // not root, or no iproute2
  }
  try {
    execFileSync('ip', ['-n', ns, 'link', 'set', 'lo', 'mtu', '1500', 'up']);
    const out = execFileSync(
      'ip',
      ['netns', 'exec', ns, process.execPath, fileURLToPath(import.meta.url), '--rows-only'],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 20 },
    );
    return JSON.parse(out.trim().split('\n').at(-1) ?? '[]') as Row[];
  } finally {
    execFileSync('ip', ['netns', 'del', ns]);
  }
}

/** The bench: full (64 MiB x 5, and again at MTU 1500), or smoke (4 MiB once, nothing written). */
export async function main(options: { smoke?: boolean } = {}): Promise<unknown> {
  const smoke = options.smoke === true;
  const BYTES = smoke ? SMOKE_BYTES : FULL_BYTES;
  const RUNS = smoke ? 1 : FULL_RUNS;
  const rows = await measure(BYTES, RUNS);
  const mtu1500 = smoke ? undefined : measureAtMtu1500();
  const result = {
    bench: 'reach-hop',
    date: new Date().toISOString(),
    conditions: {
      ...machineConditions(),
      bytes: BYTES,
      runs: RUNS,
      warmupRuns: smoke ? 0 : 1,
      order: 'runs interleave the three paths (direct, punched, relayed, direct, ...)',
      push: { streams: 4, window: 32, transport: 'quic', content: 'incompressible (random)', destination: 'tmpdir' },
      processes:
        'three on one machine: dialer (this), listener + its traversal socket, `clawpeer rendezvous` (--relay-rate 1GiB: not the cap under test)',
      cpu: 'CPU-seconds of all three processes during the push (user+system, /proc/<pid>/stat), per GiB pushed',
      note: 'loopback: no loss and ~0 RTT, so this measures the cost of the forwarding alone; the 2 cores are shared with other agents (load average ~8-10 during the run), so single runs vary a lot: compare medians and CPU-s/GiB',
    },
    loopbackMtu: { mtu: loMtu(), rows },
    ...(mtu1500 === undefined
      ? {}
      : {
          mtu1500: {
            mtu: 1500,
            note: 'the same run inside a network namespace whose lo has MTU 1500: datagrams of internet size, so every hop forwards as many datagrams as on a real path',
            rows: mtu1500,
          },
        }),
  };
  if (smoke) return result;
  const out = await writeResult('reach-hop', result);
  process.stderr.write(`${JSON.stringify({ rows, mtu1500 })}\nwrote ${out}\n`);
  return result;
}

runAsScript(import.meta.url, async ({ argv }) => {
  if (argv[0] === '--listener-side') await listenerSide();
  else if (argv[0] === '--rows-only') return measure(FULL_BYTES, FULL_RUNS);
  else await main();
  return undefined;
});
