// Peak memory of one large push, on both sides (issue 3: a 4 GiB push stays under 256 MiB of RSS):
// the real CLI pushing one incompressible file to a fresh listener over loopback QUIC.
//
// Measured: each process's VmHWM (bench/proc-status.ts), the kernel's high-water mark of RSS, so
// a short peak cannot fall between samples. The sender's is read in its exit hook; the listener's
// after the push, with its RSS before the push for reference (its peak covers start-up too).
// Conditions: machine, file size, chunking and window defaults (the CLI's), threads used for the
// sender's manifest (file-chunking/parallel-manifest.ts), and the push's own time and rate.
// Run: node <outDir>/bench/push-rss.js [--smoke] [--size-mib N]  (writes bench/results/push-rss.json)

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { threadsFor } from '../src/file-chunking/parallel-manifest.js';
import { DEFAULT_STREAMS, DEFAULT_WINDOW } from '../src/cli/commands/transfer.js';
import { TRANSFER_WINDOW_BYTES } from '../src/exchange/transfer-send.js';
import { DEFAULT_CAPABILITIES } from '../src/protocol/capabilities.js';
import { runAsScript, machineConditions, MiB, round, writeResult } from './common.js';
import { peakRssKiBOf, procStatusKiB } from './proc-status.js';
import { clawpeerPush, setUpClawpeer, syncDisks, writeRandomFile } from './transfer.js';

export interface PushRssOptions {
  /** 32 MiB, nothing written: for CI. */
  readonly smoke?: boolean;
  /** File size, bytes (default 4 GiB; smoke 32 MiB). */
  readonly sizeBytes?: number;
  readonly verbose?: boolean;
}

/** The bound on either side's peak RSS. */
const GOAL_KIB = 256 * 1024;

export async function main(options: PushRssOptions = {}): Promise<Record<string, unknown>> {
  const smoke = options.smoke === true;
  const bytes = options.sizeBytes ?? (smoke ? 32 * MiB : 4096 * MiB);
  if (!Number.isSafeInteger(bytes) || bytes <= 0)
    throw new RangeError(`file size must be a positive whole number of bytes, got ${bytes}`);
  const log = options.verbose === true ? (m: string) => process.stderr.write(`${m}\n`) : () => undefined;
  const conditions = machineConditions();
  const root = await mkdtemp(join(tmpdir(), 'clawpeer-bench-rss-'));
  try {
    const source = join(root, 'big.bin');
    log(`writing ${bytes / MiB} MiB of random bytes`);
    await writeRandomFile(source, bytes);
    const setup = await setUpClawpeer(root, 1, undefined);
    try {
      const pid = setup.listener.child.pid ?? -1;
      const receiverBefore = procStatusKiB(pid, 'VmRSS');
      syncDisks();
      log('pushing');
      const sample = await clawpeerPush(setup, source, 0, bytes, {}, 'push-rss');
      const receiverPeak = peakRssKiBOf(pid);
      const within = (kib: number | undefined): boolean | null => (kib === undefined ? null : kib <= GOAL_KIB);
      const result = {
        bench: 'push-rss',
        smoke,
        conditions: {
          ...conditions,
          fileBytes: bytes,
          data: 'incompressible (crypto.randomBytes, distinct 8 MiB blocks), page-cached source, destination on the same disk',
          transport: 'quic (quinn), loopback 127.0.0.1; sender and listener are separate processes on the same cores',
          chunking: DEFAULT_CAPABILITIES.chunking[0],
          streamsAndWindow: `CLI defaults (--streams ${DEFAULT_STREAMS} --window ${DEFAULT_WINDOW}), at most ${TRANSFER_WINDOW_BYTES / MiB} MiB unacknowledged per transfer`,
          manifestThreads: threadsFor(bytes),
          measure:
            'VmHWM of each process (/proc/<pid>/status): the peak RSS; the listener was started fresh for this push',
        },
        goalKiB: GOAL_KIB,
        sender: { peakRssKiB: sample.peakRssKiBSender ?? null, withinGoal: within(sample.peakRssKiBSender) },
        receiver: {
          rssBeforeKiB: receiverBefore ?? null,
          peakRssKiB: receiverPeak ?? null,
          withinGoal: within(receiverPeak),
        },
        push: {
          seconds: sample.seconds,
          scanSeconds: round(sample.scanSeconds, 2),
          MiBps: round(bytes / MiB / sample.seconds),
          cpuSender: sample.cpuSender ?? null,
          cpuReceiver: sample.cpuReceiver ?? null,
        },
      };
      log(
        `peak RSS: sender ${String(result.sender.peakRssKiB)} KiB, receiver ${String(result.receiver.peakRssKiB)} KiB (goal <= ${GOAL_KIB} KiB)`,
      );
      if (!smoke) log(`wrote ${await writeResult('push-rss', result)}`);
      return result;
    } finally {
      await setup.listener.stop();
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

runAsScript(import.meta.url, ({ smoke, numbers }) => {
  const { mib } = numbers({ mib: '--size-mib' });
  return main({ smoke, verbose: true, ...(mib === undefined ? {} : { sizeBytes: mib * MiB }) });
});
