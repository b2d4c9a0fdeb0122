// Transfer progress for people and machines: a cli-progress bar on a TTY (bytes, rate, ETA,
// files), NDJSON progress events with --json (at most every 500 ms, and at each new phase),
// nothing otherwise. Push, pull and sync report through it.
import { duration, human } from '../format.js';
import type cliProgressModule from 'cli-progress';
import { createRequire } from 'node:module';
import type { TransferProgress } from '../push-pull/transfer-with-peer.js';
import type { Output } from './output.js';

const JSON_INTERVAL_MS = 500;
// cli-progress (~10 ms to load) is loaded only when a bar is drawn.
const requireCjs = createRequire(import.meta.url);

export interface ProgressReporter {
  /** False when nothing is shown (no --json, no TTY): callers then skip the bookkeeping. */
  readonly active: boolean;
  update(p: TransferProgress): void;
  stop(): void;
}

export function createProgress(out: Output): ProgressReporter {
  if (out.json) {
    let last = 0;
    let lastPhase = '';
    let lastFiles = 0;
    return {
      update(p) {
        const now = Date.now();
        // A new phase, and the last file of a phase, are told at once; the rest every 500 ms.
        const allFiles = p.totalFiles > 0 && p.files === p.totalFiles && lastFiles !== p.files;
        if (p.phase === lastPhase && !allFiles && now - last < JSON_INTERVAL_MS) return;
        last = now;
        lastPhase = p.phase;
        lastFiles = p.files;
        out.emit(
          {
            event: 'progress',
            phase: p.phase,
            bytes: p.bytes,
            totalBytes: p.totalBytes,
            files: p.files,
            totalFiles: p.totalFiles,
          },
          '',
        );
      },
      active: true,
      stop() {},
    };
  }
  if (!process.stderr.isTTY || out.silent) return { active: false, update() {}, stop() {} };
  const cliProgress = requireCjs('cli-progress') as typeof cliProgressModule;
  // cli-progress draws (throttled redraws, cursor and line wrap restored on exit); the line is ours.
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: (_options, _params, payload: { line?: string }) => payload.line ?? '',
      hideCursor: true,
    },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  let phase = '';
  let rate = new RateMeter();
  return {
    active: true,
    update(p) {
      if (p.phase !== phase) {
        // The rate is the phase's own: hashing speed is not sending speed.
        phase = p.phase;
        rate = new RateMeter();
      }
      rate.add(Date.now(), p.bytes);
      const line = progressLine(p, rate.bytesPerSecond());
      if (!started) {
        bar.start(1, 0, { line });
        started = true;
      } else {
        bar.update(0, { line });
      }
    },
    stop() {
      if (started) bar.stop();
    },
  };
}

/** How far back the rate (and so the ETA) looks: long enough to ride out a stall, short enough to follow a change. */
export const RATE_WINDOW_MS = 5000;
const RATE_SAMPLE_MS = 100;
const BAR_WIDTH = 30;

/** Bytes per second over the last RATE_WINDOW_MS (since the first sample, until that long has passed). */
export class RateMeter {
  // One sample per RATE_SAMPLE_MS at most: updates come per chunk, thousands a second.
  readonly #samples: { t: number; bytes: number }[] = [];
  #last: { t: number; bytes: number } | undefined;

  add(t: number, bytes: number): void {
    this.#last = { t, bytes };
    const newest = this.#samples.at(-1);
    if (newest === undefined || t - newest.t >= RATE_SAMPLE_MS) this.#samples.push(this.#last);
    while (this.#samples.length > 1 && (this.#samples[1]?.t ?? t) <= t - RATE_WINDOW_MS) this.#samples.shift();
  }

  bytesPerSecond(): number {
    const first = this.#samples[0];
    const last = this.#last;
    if (first === undefined || last === undefined || last.t <= first.t) return 0;
    return ((last.bytes - first.bytes) * 1000) / (last.t - first.t);
  }
}

/**
 * The bar's line. With a known total: a bar, the percentage, bytes of total, the rate and the
 * ETA at that rate; without one (a scan hashing as it walks): the bytes and rate only, never a
 * bar stuck at 100%. Publishing is the peer's fsyncs and renames: files, no byte rate.
 */
export function progressLine(p: TransferProgress, bytesPerSecond: number): string {
  const head = `${p.phase.padEnd(10)} `;
  const files = `files ${filesLabel(p)}`;
  if (p.phase === 'publishing') return `${head}${files}`;
  const rate = `${human(bytesPerSecond)}/s`;
  if (p.totalBytes <= 0) return `${head}${human(p.bytes)} ${rate} ${files}`;
  const done = Math.min(1, Math.max(0, p.bytes / p.totalBytes));
  const filled = Math.round(done * BAR_WIDTH);
  const bar = '\u2588'.repeat(filled) + '\u2591'.repeat(BAR_WIDTH - filled);
  const left = Math.max(0, p.totalBytes - p.bytes);
  const eta = left === 0 ? '0 s' : bytesPerSecond > 0 ? duration(left / bytesPerSecond) : '-';
  return `${head}|${bar}| ${Math.floor(done * 100)}% ${human(p.bytes)}/${human(p.totalBytes)} ${rate} ETA ${eta} ${files}`;
}

/**
 * The bar's files field: files done (published when receiving, held completely by the peer when
 * sending) of the total; the count alone while the total is unknown (a scan hashes as it walks).
 */
export function filesLabel(p: Pick<TransferProgress, 'files' | 'totalFiles'>): string {
  return p.totalFiles === 0 ? String(p.files) : `${p.files}/${p.totalFiles}`;
}
