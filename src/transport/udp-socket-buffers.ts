// Socket buffers for a UDP socket that native code created: the quinn binding's Server binds its
// socket without the buffer sizes its config carries (its Client applies them), so a listener's
// socket gets net.core.rmem_default (208 KiB on stock Linux) and the kernel drops datagrams in
// bursts: 76-103 per 100-revision bench run at 5 ms RTT here, none with 4 MiB.
//
// Node can set SO_RCVBUF/SO_SNDBUF only on sockets it created. A child process can set them on
// ours: the socket's descriptor is handed to it as fd 3, and options set on that descriptor apply
// to the one socket both share. The child wraps fd 3, sets both sizes and exits before its event
// loop first runs, so it never reads a datagram meant for the parent.
//
// Linux only: the descriptor is found through /proc (the local port names the socket in
// /proc/net/udp{,6}; its inode names the descriptor in /proc/self/fd).
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';

export interface SocketBufferSizes {
  /** What the kernel reports (Linux doubles a request and clamps it to net.core.{r,w}mem_max). */
  readonly recv: number;
  readonly send: number;
}

/** How long the child may take (it is a Node start-up, ~50 ms here). */
const CHILD_TIMEOUT_MS = 5_000;

// Runs in the child: wrap fd 3 (bind with an fd opens it, without binding anything), set, report.
const CHILD_SCRIPT = [
  "const dgram = require('node:dgram');",
  'const socket = dgram.createSocket(process.argv[2]);',
  'socket.bind({ fd: 3 });',
  'const bytes = Number(process.argv[1]);',
  'if (bytes > 0) { socket.setRecvBufferSize(bytes); socket.setSendBufferSize(bytes); }',
  'process.stdout.write(JSON.stringify({ recv: socket.getRecvBufferSize(), send: socket.getSendBufferSize() }));',
  'process.exit(0);',
].join('\n');

/** Inodes of the UDP sockets bound to `port` (any local address), from /proc/net/udp{,6}. */
function udpSocketInodes(port: number, procDir: string): Set<string> {
  const inodes = new Set<string>();
  const portHex = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  for (const table of ['udp', 'udp6']) {
    let text: string;
    try {
      text = readFileSync(`${procDir}/net/${table}`, 'utf8');
    } catch {
      continue; // no IPv6 on this host
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
      if (fields.length > 9 && fields[1]?.endsWith(portHex) === true && fields[9] !== undefined) inodes.add(fields[9]);
    }
  }
  return inodes;
}

/**
 * The descriptor in this process of the UDP socket bound to `port`, or undefined when there is
 * none or this is not Linux (no /proc).
 */
export function findUdpSocketFd(port: number, procDir = '/proc'): number | undefined {
  if (process.platform !== 'linux') return undefined;
  const inodes = udpSocketInodes(port, procDir);
  if (inodes.size === 0) return undefined;
  let fds: string[];
  try {
    fds = readdirSync(`${procDir}/self/fd`);
  } catch {
    return undefined;
  }
  for (const fd of fds) {
    let target: string;
    try {
      target = readlinkSync(`${procDir}/self/fd/${fd}`);
    } catch {
      continue; // closed since the listing
    }
    const m = /^socket:\[(\d+)\]$/.exec(target);
    if (m?.[1] !== undefined && inodes.has(m[1])) return Number(fd);
  }
  return undefined;
}

/**
 * Sets SO_RCVBUF and SO_SNDBUF of the UDP socket behind descriptor `fd` of this process to
 * `bytes` (0: only reads them) and returns what the kernel reports. Rejects with the child's
 * error when it cannot (the socket keeps its buffers).
 */
export function setUdpSocketBuffers(fd: number, family: 4 | 6, bytes: number): Promise<SocketBufferSizes> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', CHILD_SCRIPT, String(bytes), family === 6 ? 'udp6' : 'udp4'], {
      stdio: ['ignore', 'pipe', 'pipe', fd],
      timeout: CHILD_TIMEOUT_MS,
    });
    let out = '';
    let err = '';
    child.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      try {
        const sizes = JSON.parse(out) as SocketBufferSizes;
        if (code === 0 && Number.isInteger(sizes.recv) && Number.isInteger(sizes.send)) {
          resolve({ recv: sizes.recv, send: sizes.send });
          return;
        }
      } catch {
        // reported below
      }
      const why = signal !== null ? `killed by ${signal}` : `exit ${String(code)}`;
      reject(
        new Error(
          `setting the buffers of UDP socket fd ${fd} failed (${why}): ${err.trim().split('\n').slice(-1)[0] ?? ''}`,
        ),
      );
    });
  });
}
