// The machine a measurement was taken on: every benchmark result carries it, because a number
// without its machine, runtime, load and date is worthless.
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { arch, cpus, loadavg, platform, release, totalmem } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { readNetCoreBytes, type NetCoreBufferKey } from '../transport/udp-buffers.js';
import { median } from './stats.js';

const GiB = 1 << 30;

export interface BenchConditions {
  /** os.cpus()[0].model */
  readonly cpuModel: string;
  /** Logical cores. */
  readonly cores: number;
  /** Total memory, GiB (2 decimals). */
  readonly memGiB: number;
  /** process.version */
  readonly node: string;
  /** platform release arch, e.g. "linux 6.8.0 x64". */
  readonly os: string;
  /** ISO 8601, when the conditions were taken. */
  readonly date: string;
  /** 1-minute load average when taken: other processes share this machine. */
  readonly loadAverage1m: number;
  /**
   * Linux UDP socket buffer settings, bytes (null where unreadable). QUIC's sockets ask for
   * 4 MiB (a listener's through transport/udp-socket-buffers.ts) and `net.core.{r,w}mem_max`
   * clamp what they get.
   */
  readonly udpBuffers: {
    readonly rmemMax: number | null;
    readonly wmemMax: number | null;
    readonly rmemDefault: number | null;
    readonly wmemDefault: number | null;
  };
  /** The clawpeer CLIs a bench starts pace full GCs by the data moved (bin/heap-growth.cjs); false when CLAWPEER_HEAP_GROWTH=0. */
  readonly heapGrowthPacing: boolean;
}

function sysctlBytes(key: NetCoreBufferKey): number | null {
  try {
    return readNetCoreBytes(key);
  } catch {
    return null;
  }
}

export function machineConditions(): BenchConditions {
  const cpu = cpus();
  return {
    cpuModel: cpu[0]?.model.trim() ?? 'unknown',
    cores: cpu.length,
    memGiB: Math.round((totalmem() / GiB) * 100) / 100,
    node: process.version,
    os: `${platform()} ${release()} ${arch()}`,
    date: new Date().toISOString(),
    loadAverage1m: Math.round((loadavg()[0] ?? Number.NaN) * 100) / 100,
    udpBuffers: {
      rmemMax: sysctlBytes('rmem_max'),
      wmemMax: sysctlBytes('wmem_max'),
      rmemDefault: sysctlBytes('rmem_default'),
      wmemDefault: sysctlBytes('wmem_default'),
    },
    heapGrowthPacing: process.env['CLAWPEER_HEAP_GROWTH'] !== '0',
  };
}

/** Creates slower than this (median, µs) make a receiver's per-file cost the disk's, not clawpeer's. */
export const SLOW_FILE_CREATE_MICROS = 100;

/**
 * Microseconds to create (and close) one empty file in a fresh directory under `dir`: the median
 * of `files` creates. A receiver pays it per file, and it is not a constant of the machine: ext4
 * without a journal (this disk) does not reuse an inode freed less than 60 s ago (5 min while its
 * inode-table block is dirty), and its allocator reads and skips each such inode. After a few
 * thousand deletes in a directory's block group, creates there took 100-550 µs instead of ~10 µs,
 * while another directory on the same disk stayed at ~10 µs.
 */
export function fileCreateMicros(dir: string, files = 500): number {
  const probe = mkdtempSync(path.join(dir, 'create-probe-'));
  try {
    const took: number[] = [];
    for (let i = 0; i < files; i++) {
      const t0 = performance.now();
      closeSync(openSync(path.join(probe, `f${i}`), 'wx'));
      took.push((performance.now() - t0) * 1000);
    }
    return Math.round(median(took) * 10) / 10;
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}

/**
 * CPU seconds the whole machine has spent so far (every core: user, nice, system and interrupt
 * time from os.cpus(), idle and steal left out). The difference across a run counts every
 * process a tool starts (rsync's ssh and sshd, its remote rsync) and the kernel's work for it
 * (writeback, the loopback path), which no process's own counter shows; it also counts anything
 * else that ran meanwhile, so it is read on an idle machine. Divided by the cores, it is the
 * shortest wall time the run could have taken had nothing waited.
 */
export function machineCpuSeconds(): number {
  let ms = 0;
  for (const c of cpus()) ms += c.times.user + c.times.nice + c.times.sys + c.times.irq;
  return ms / 1000;
}
