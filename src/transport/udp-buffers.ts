// Linux's UDP socket-buffer settings (net.core.{r,w}mem_{max,default}) and drop counters: what
// QUIC's sockets get and lose. One reader for the transport (which sizes a listener's socket),
// `doctor` (which judges the limits) and the bench (which records them).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * QUIC asks for multi-MiB socket buffers and the kernel silently clamps them to
 * net.core.{r,w}mem_max; below ~4 MiB a fast or long link overflows the receive buffer in
 * bursts and throughput collapses into loss recovery.
 */
export const MIN_UDP_BUFFER_BYTES = 4 << 20; // 4 MiB
/** What the fix sets: 7.5 MB, the value quic-go and quinn users settle on for >1 Gbit/s. */
export const RECOMMENDED_UDP_BUFFER_BYTES = 7_500_000;

export type NetCoreBufferKey = 'rmem_max' | 'wmem_max' | 'rmem_default' | 'wmem_default';

/** The procfs file of net.core.`key`. */
export function netCoreFile(key: NetCoreBufferKey, procDir = '/proc'): string {
  return join(procDir, 'sys', 'net', 'core', key);
}

/** net.core.`key` in bytes; throws (naming the file) when it is unreadable or not a byte count. */
export function readNetCoreBytes(key: NetCoreBufferKey, procDir = '/proc'): number {
  const file = netCoreFile(key, procDir);
  const text = readFileSync(file, 'utf8').trim();
  if (!/^\d{1,15}$/.test(text)) throw new Error(`${file} holds ${JSON.stringify(text.slice(0, 40))}, not a byte count`);
  return Number(text);
}

/**
 * Datagrams this host's kernel dropped for a full UDP socket buffer so far (Udp RcvbufErrors +
 * SndbufErrors in /proc/net/snmp): machine-wide, so a difference over a run counts every
 * process's drops. Null where unreadable (not Linux).
 */
export function udpBufferDrops(procDir = '/proc'): number | null {
  let text: string;
  try {
    text = readFileSync(join(procDir, 'net', 'snmp'), 'utf8');
  } catch {
    return null;
  }
  const rows = text.split('\n').filter((l) => l.startsWith('Udp: '));
  const names = rows[0]?.split(/\s+/) ?? [];
  const values = rows[1]?.split(/\s+/) ?? [];
  const at = (name: string): number => Number(values[names.indexOf(name)]);
  const drops = at('RcvbufErrors') + at('SndbufErrors');
  return Number.isFinite(drops) ? drops : null;
}
