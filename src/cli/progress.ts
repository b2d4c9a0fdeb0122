// Transfer progress for people and machines: a cli-progress bar on a TTY (bytes, rate, ETA,
// files), NDJSON progress events with --json (at most every 500 ms, and at each new phase),
// nothing otherwise. Push, pull and sync report through it.
import { human } from '../format.js';
import type cliProgressModule from 'cli-progress';
import { createRequire } from 'node:module';
import type { TransferProgress } from '../node/transfer-progress.js';
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
        out.emit({ event: 'progress', phase: p.phase, bytes: p.bytes, totalBytes: p.totalBytes, files: p.files, totalFiles: p.totalFiles }, '');
      },
      active: true,
      stop() {},
    };
  }
  if (process.stderr.isTTY !== true || out.silent) return { active: false, update() {}, stop() {} };
  const cliProgress = requireCjs('cli-progress') as typeof cliProgressModule;
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: '{phase} |{bar}| {percentage}% {value_h}/{total_h} {speed} ETA {eta_formatted} files {files}',
      hideCursor: true,
      etaBuffer: 50,
      formatValue: (v, _o, type) => (type === 'value' || type === 'total' ? String(v) : String(v)),
    },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  let t0 = Date.now();
  let phase = '';
  return {
    active: true,
    update(p) {
      if (p.phase !== phase) {
        // The rate is the phase's own: hashing speed is not sending speed.
        phase = p.phase;
        t0 = Date.now();
      }
      const total = p.totalBytes;
      const payload = { phase: p.phase.padEnd(10), value_h: human(p.bytes), total_h: human(total), speed: `${human(p.bytes / Math.max(0.001, (Date.now() - t0) / 1000))}/s`, files: filesLabel(p) };
      if (!started) {
        bar.start(Math.max(total, 1), p.bytes, payload);
        started = true;
      } else {
        bar.setTotal(Math.max(total, p.bytes, 1));
        bar.update(p.bytes, payload);
      }
    },
    stop() {
      if (started) bar.stop();
    },
  };
}

/**
 * The bar's files field. Files done: published (receiving), or held completely by the peer
 * (sending); the total alone until the first is done; the count alone while the total is
 * unknown (a sync's scan hashes as it walks).
 */
export function filesLabel(p: Pick<TransferProgress, 'files' | 'totalFiles'>): string {
  if (p.totalFiles === 0) return String(p.files);
  return p.files > 0 ? `${p.files}/${p.totalFiles}` : String(p.totalFiles);
}
