// How closely `push --bwlimit` keeps to its cap: the real CLI pushing one incompressible file to
// a listener over loopback QUIC at several caps, beside an uncapped push of the same file in the
// same run (the baseline: what the machine does without a cap).
//
// Measured per push: the data phase (the CLI's seconds less its scan+hash phase, from its own
// progress events) and the wire bytes. The cap counts every byte of the data frames (payload,
// 61-byte headers, 16-byte tags), so the payload rate sits a hair under it; QUIC's own overhead
// is on top (wire rate). Each cap's file is sized to take ~`SECONDS_PER_CAP` at the cap, so the
// burst (a tenth of a second's worth, at most 256 KiB) and the Want/publish round trips are a
// few percent of it. Runs are interleaved over the caps.
// Run: node <outDir>/bench/bwlimit.js [--smoke] [--runs N]  (writes bench/results/bwlimit.json)
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_STREAMS, DEFAULT_WINDOW } from '../src/cli/commands/transfer.js';
import { runAsScript, machineConditions, median, MiB, ratio, round, writeResult } from './common.js';
import { clawpeerPush, setUpClawpeer, syncDisks, writeRandomFile, type ClawpeerSample } from './transfer.js';

export interface BwlimitBenchOptions {
  /** One small cap, one run, nothing written: for CI. */
  readonly smoke?: boolean;
  readonly runs?: number;
  readonly verbose?: boolean;
}

/** Caps measured, MiB per second (64: about half of what this machine pushes uncapped). */
const CAPS_MIB = [1, 8, 32, 64];
const SMOKE_CAPS_MIB = [4];
/** Each capped push moves about this many seconds' worth at its cap. */
const SECONDS_PER_CAP = 8;
const SMOKE_SECONDS = 0.25;

interface Case {
  readonly capMiB: number | null;
  readonly bytes: number;
  readonly file: string;
}

export async function main(options: BwlimitBenchOptions = {}): Promise<Record<string, unknown>> {
  const smoke = options.smoke === true;
  const runs = options.runs ?? (smoke ? 1 : 3);
  const log = options.verbose === true ? (m: string) => process.stderr.write(`${m}\n`) : () => undefined;
  const conditions = machineConditions();
  const root = await mkdtemp(join(tmpdir(), 'clawpeer-bench-bwlimit-'));
  try {
    const caps = smoke ? SMOKE_CAPS_MIB : CAPS_MIB;
    const seconds = smoke ? SMOKE_SECONDS : SECONDS_PER_CAP;
    const cases: Case[] = [];
    for (const capMiB of caps) {
      const bytes = capMiB * seconds * MiB;
      const file = join(root, `cap-${capMiB}.bin`);
      await writeRandomFile(file, bytes);
      cases.push({ capMiB, bytes, file });
    }
    // The baseline pushes the largest file uncapped.
    const largest = cases.at(-1);
    if (largest === undefined) throw new TypeError('no caps to measure');
    cases.push({ capMiB: null, bytes: largest.bytes, file: largest.file });
    const setup = await setUpClawpeer(root, cases.length * runs, undefined);
    const samples = new Map<Case, ClawpeerSample[]>();
    try {
      let share = 0;
      for (let r = 0; r < runs; r++) {
        for (const c of cases) {
          syncDisks();
          const args = c.capMiB === null ? [] : ['--bwlimit', `${c.capMiB}MiB`];
          log(`run ${r + 1}/${runs}: ${c.bytes / MiB} MiB ${c.capMiB === null ? 'uncapped' : `at ${c.capMiB} MiB/s`}`);
          const s = await clawpeerPush(setup, c.file, share++, c.bytes, {}, 'bwlimit', args);
          samples.set(c, [...(samples.get(c) ?? []), s]);
        }
      }
    } finally {
      await setup.listener.stop();
    }
    const baseline = samples.get(cases.at(-1)!) ?? [];
    const baselineMiBps = median(baseline.map((s) => largest.bytes / MiB / s.dataSeconds));
    const rows = cases.map((c) => {
      const list = samples.get(c) ?? [];
      const payloadMiBps = median(list.map((s) => c.bytes / MiB / s.dataSeconds));
      const wireMiBps = median(list.map((s) => s.wireBytes / MiB / s.dataSeconds));
      return {
        capMiBps: c.capMiB,
        fileBytes: c.bytes,
        runs: list.length,
        dataSecondsAll: list.map((s) => round(s.dataSeconds, 3)),
        payloadMiBps: round(payloadMiBps, 2),
        wireMiBps: round(wireMiBps, 2),
        // Payload rate over the cap: ~1. The frames' own bytes count against the cap (-0.03%); the
        // burst at the start goes at once (+1.25% of an 8 s push).
        payloadToCap: c.capMiB === null ? null : ratio(payloadMiBps, c.capMiB),
        payloadToUncapped: ratio(payloadMiBps, baselineMiBps),
      };
    });
    const result = {
      bench: 'bwlimit',
      smoke,
      conditions: {
        ...conditions,
        data: `incompressible (crypto.randomBytes), one file per cap sized to ~${seconds} s at its cap, page-cached, destination on the same disk`,
        transport: 'quic (quinn), loopback 127.0.0.1; sender CLI and listener are separate processes on the same cores',
        streamsAndWindow: `CLI defaults (--streams ${DEFAULT_STREAMS} --window ${DEFAULT_WINDOW})`,
        measure:
          "data phase = the CLI's seconds less its scan+hash phase (from its progress events): it includes the Want round trip and the listener's publish (fsync) after the last chunk; runs interleaved over the caps; medians",
        baseline: 'the largest file pushed without --bwlimit in the same run',
      },
      rows,
    };
    for (const row of rows)
      log(
        `cap ${row.capMiBps ?? 'none'}: payload ${row.payloadMiBps} MiB/s (x cap ${String(row.payloadToCap)}), wire ${row.wireMiBps} MiB/s`,
      );
    if (!smoke) log(`wrote ${await writeResult('bwlimit', result)}`);
    return result;
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

runAsScript(import.meta.url, ({ smoke, numbers }) => main({ smoke, verbose: true, ...numbers({ runs: '--runs' }) }));
