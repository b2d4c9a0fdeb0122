// Macro benchmark of zstd chunk compression: the real CLI pushing the same bytes with
// compression on (the default, `auto`) and off (`--no-compress`), side by side in one run.
//
// Data: (a) real content present on any Debian machine: a tar of /usr/include and
// /usr/share/doc (C headers, READMEs, changelogs, many of them already .gz inside the tar),
// cut to a fixed size; (b) the same number of random bytes, where compression can only cost.
// Links: loopback (CPU-bound: what compression costs) and a simulated 20 ms / 100 Mbit/s link
// through `clawpeer relay` (bandwidth-bound: what it buys).
// What is timed: the CLI's own `seconds` (push() start to the receiver's done); wire bytes are
// the CLI's `wireBytes` (QUIC bytes both ways). CPU: the sender process and the listener
// during the push. Reference: zstd level 3 on the same data in 256 KiB pieces in this process,
// the best the chunk codec can do with its chunks.
// Run: node <outDir>/bench/compression.js [--smoke] [--runs N] [--out FILE] [--keep]
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, open, rm, stat } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { zstdCodec } from '../src/session/chunk-compression.js';
import {
  runAsScript,
  machineConditions,
  median,
  MiB,
  ratio,
  REPO_ROOT,
  round,
  writeJsonFile,
  writeResult,
} from './common.js';
import {
  clawpeerPush,
  setUpClawpeer,
  syncDisks,
  writeRandomFile,
  type ClawpeerSample,
  type ClawpeerSetup,
} from './transfer.js';

const CORPUS_BYTES = 96 * MiB;
const WAN_BYTES = 32 * MiB;
const SMOKE_BYTES = 4 * MiB;
const WAN_LINK = 'rtt=20ms,rate=100mbit';
const CORPUS_DIRS = ['/usr/include', '/usr/share/doc'];
const PIECE_BYTES = 256 << 10;

export interface CompressionBenchOptions {
  readonly smoke?: boolean;
  readonly runs?: number;
  readonly outFile?: string;
  readonly keep?: boolean;
}

/** `bytes` of a tar of the corpus directories (the tar is cut, not padded: it must be long enough). */
async function writeCorpus(file: string, bytes: number): Promise<void> {
  const tar = spawnSync('sh', ['-c', `tar -cf - ${CORPUS_DIRS.join(' ')} 2>/dev/null | head -c ${bytes} > ${file}`]);
  if (tar.status !== 0) throw new Error(`building the corpus failed: ${tar.stderr.toString()}`);
  const got = (await stat(file)).size;
  if (got !== bytes) throw new Error(`the corpus (${CORPUS_DIRS.join(', ')}) has only ${got} bytes, ${bytes} needed`);
}

/** zstd level 3 over `file` in 256 KiB pieces: compressed/original, the codec's best case. */
async function zstdReference(file: string): Promise<number | null> {
  const zstd = zstdCodec();
  if (zstd === null) return null;
  const h = await open(file, 'r');
  let raw = 0;
  let packed = 0;
  try {
    const buf = Buffer.alloc(PIECE_BYTES);
    for (;;) {
      const { bytesRead } = await h.read(buf, 0, PIECE_BYTES, raw);
      if (bytesRead === 0) break;
      packed += Math.min(bytesRead, (await zstd.compress(buf.subarray(0, bytesRead), 3)).length);
      raw += bytesRead;
    }
  } finally {
    await h.close();
  }
  return round(packed / raw, 3);
}

/** A `clawpeer relay` child between the sender and the listener; resolves with its port. */
function startRelay(targetPort: number, spec: string): Promise<{ port: number; child: ChildProcess }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        join(REPO_ROOT, 'bin', 'clawpeer.cjs'),
        'relay',
        '--listen',
        '127.0.0.1:0',
        '--to',
        `127.0.0.1:${targetPort}`,
        '--impair',
        spec,
        '--json',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    createInterface({ input: child.stdout }).once('line', (line) =>
      resolve({ port: Number((JSON.parse(line) as Record<string, unknown>)['port']), child }),
    );
    child.on('close', (code) => reject(new Error(`relay exited ${String(code)}: ${stderr}`)));
  });
}

/** One push of `file` (a fresh share each time), compressed or not, directly or through the relay at `addr`. */
function push(
  setup: ClawpeerSetup,
  file: string,
  share: number,
  bytes: number,
  compress: boolean,
  addr: string | undefined,
): Promise<ClawpeerSample> {
  syncDisks();
  return clawpeerPush(setup, file, share, bytes, {}, 'push', [
    ...(compress ? [] : ['--no-compress']),
    ...(addr === undefined ? [] : ['--addr', addr]),
  ]);
}

function summary(samples: readonly ClawpeerSample[], bytes: number): Record<string, unknown> {
  const pick = (f: (s: ClawpeerSample) => number | undefined): number[] =>
    samples.map(f).filter((x): x is number => x !== undefined);
  const seconds = median(pick((s) => s.seconds));
  return {
    secondsAll: pick((s) => s.seconds),
    secondsMedian: round(seconds, 3),
    MiBps: round(bytes / MiB / seconds, 1),
    wireBytesMedian: median(pick((s) => s.wireBytes)),
    wirePctOfPayload: round((100 * median(pick((s) => s.wireBytes))) / bytes, 1),
    cpuSecondsSender: pick((s) => s.cpuSender),
    cpuSecondsReceiver: pick((s) => s.cpuReceiver).map((x) => round(x, 2)),
  };
}

export async function main(options: CompressionBenchOptions = {}): Promise<Record<string, unknown>> {
  const smoke = options.smoke === true;
  const runs = options.runs ?? (smoke ? 1 : 3);
  const bytes = smoke ? SMOKE_BYTES : CORPUS_BYTES;
  const wanBytes = smoke ? SMOKE_BYTES : WAN_BYTES;
  const loadBefore = loadavg().map((x) => round(x, 2));
  const root = await mkdtemp(join(tmpdir(), 'clawpeer-bench-compression-'));
  let setup: ClawpeerSetup | undefined;
  let relay: ChildProcess | undefined;
  try {
    if (zstdCodec() === null) {
      // Optional dependency: without it clawpeer sends raw chunks, and there is nothing to compare.
      return {
        bench: 'compression',
        smoke,
        skipped: '@mongodb-js/zstd (an optional dependency) is not installed',
        conditions: machineConditions(),
      };
    }
    await mkdir(join(root, 'src'), { recursive: true });
    const corpus = join(root, 'src', 'corpus.tar');
    const random = join(root, 'src', 'random.bin');
    const wan = join(root, 'src', 'wan.tar');
    await writeCorpus(corpus, bytes);
    await writeCorpus(wan, wanBytes);
    await writeRandomFile(random, bytes);
    // Smoke: each code path once (both codecs on loopback, random data raw, the relay), 3 pushes not 6.
    const loopbackCases = [
      ['corpus', corpus],
      ['random', random],
    ] as const;
    const codecsFor = (name: string): readonly boolean[] => (smoke && name === 'random' ? [true] : [true, false]);
    const wanRuns = smoke ? 1 : Math.max(1, runs - 1);
    const wanCodecs: readonly boolean[] = smoke ? [true] : [true, false];
    setup = await setUpClawpeer(root, runs * 4 + wanRuns * 2, undefined);
    let share = 0;
    const samples = new Map<string, ClawpeerSample[]>();
    const record = (key: string, s: ClawpeerSample): void => void samples.set(key, [...(samples.get(key) ?? []), s]);
    // Interleaved: a burst of load on this shared machine hits both settings alike.
    for (let r = 0; r < runs; r++) {
      for (const [name, file] of loopbackCases) {
        for (const compress of codecsFor(name))
          record(
            `loopback/${name}/${compress ? 'zstd' : 'none'}`,
            await push(setup, file, share++, bytes, compress, undefined),
          );
      }
    }
    const started = await startRelay(setup.listener.port, WAN_LINK);
    relay = started.child;
    for (let r = 0; r < wanRuns; r++) {
      for (const compress of wanCodecs)
        record(
          `wan/corpus/${compress ? 'zstd' : 'none'}`,
          await push(setup, wan, share++, wanBytes, compress, `127.0.0.1:${started.port}`),
        );
    }
    const cases = [...samples.entries()].map(([key, list]) => {
      const [link, data, codec] = key.split('/');
      return {
        link,
        data,
        compression: codec,
        bytes: link === 'wan' ? wanBytes : bytes,
        ...summary(list, link === 'wan' ? wanBytes : bytes),
      };
    });
    const find = (link: string, data: string, codec: string): Record<string, unknown> | undefined =>
      cases.find((c) => c.link === link && c.data === data && c.compression === codec);
    const ratios: Record<string, number> = {};
    for (const [link, data] of [
      ['loopback', 'corpus'],
      ['loopback', 'random'],
      ['wan', 'corpus'],
    ] as const) {
      const on = find(link, data, 'zstd');
      const off = find(link, data, 'none');
      if (on === undefined || off === undefined) continue;
      ratios[`${link}/${data}: seconds zstd/none`] = ratio(Number(on['secondsMedian']), Number(off['secondsMedian']));
      ratios[`${link}/${data}: wire bytes zstd/none`] = ratio(
        Number(on['wireBytesMedian']),
        Number(off['wireBytesMedian']),
      );
    }
    const result = {
      bench: 'compression',
      smoke,
      conditions: {
        ...machineConditions(),
        loadAverageBefore: loadBefore,
        loadAverageAfter: loadavg().map((x) => round(x, 2)),
        corpus: `first ${bytes / MiB} MiB of a tar of ${CORPUS_DIRS.join(' and ')} (real text, headers and already-gzipped changelogs); the WAN case takes the first ${wanBytes / MiB} MiB`,
        random: `${bytes / MiB} MiB of crypto.randomBytes (incompressible)`,
        zstdReferenceRatio: {
          corpus: await zstdReference(corpus),
          random: await zstdReference(random),
          note: 'zstd level 3 over 256 KiB pieces in this process: compressed/original, pieces that do not shrink counted raw',
        },
        links: {
          loopback: '127.0.0.1, sender and listener processes on the same 2 cores',
          wan: `clawpeer relay --impair ${WAN_LINK} between them (UDP relay in its own process)`,
        },
        clawpeer:
          'CLI defaults (streams, window, chunking); compression: auto (zstd level 3, a chunk goes compressed when that saves > 5%) vs --no-compress',
        runs,
        wanRuns,
      },
      cases,
      ratios,
    };
    const outFile = options.outFile ?? (smoke ? undefined : 'compression');
    if (outFile !== undefined)
      await (outFile.includes('/') ? writeJsonFile(outFile, result) : writeResult(outFile, result));
    return result;
  } finally {
    relay?.kill('SIGINT');
    await setup?.listener.stop();
    if (options.keep !== true) await rm(root, { recursive: true, force: true });
  }
}

runAsScript(import.meta.url, ({ smoke, has, numbers, texts }) =>
  main({ smoke, keep: has('--keep'), ...numbers({ runs: '--runs' }), ...texts({ outFile: '--out' }) }),
);
