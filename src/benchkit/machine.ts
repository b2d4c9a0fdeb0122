// The machine a measurement was taken on: every benchmark result carries it, because a number
// without its machine, runtime, load and date is worthless.
import { readNetCoreBytes, type NetCoreBufferKey } from '../transport/udp-buffers.js';
import { arch, cpus, loadavg, platform, release, totalmem } from 'node:os';

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
  readonly udpBuffers: { readonly rmemMax: number | null; readonly wmemMax: number | null; readonly rmemDefault: number | null; readonly wmemDefault: number | null };
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
    udpBuffers: { rmemMax: sysctlBytes('rmem_max'), wmemMax: sysctlBytes('wmem_max'), rmemDefault: sysctlBytes('rmem_default'), wmemDefault: sysctlBytes('wmem_default') },
  };
}

