// Hostile clients for the budget suites (budget-*.test.ts): B's paired key, speaking the real
// protocol (dialer, PeerSession, control messages) with lying fields. Also a small program (run
// as `node budget-kit.js pull <home> <port> <request.json>`) that sends one pull request and
// then waits, so a test can SIGKILL a client mid-request and watch what the listener does.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { manifestRoot } from '../../src/chunking/manifest.js';
import { resolveConfig, type NodeConfig } from '../../src/home/config.js';
import { dialPeer } from '../../src/session/dialer.js';
import { loadIdentity } from '../../src/home/identity-store.js';
import { PeerStore } from '../../src/home/peer-store.js';
import { resolvePeer } from '../../src/home/peer-resolve.js';
import { pingPeer } from '../../src/session/ping.js';
import type { PeerSession } from '../../src/session/session.js';
import { silentLogger } from '../../src/logger.js';
import type { ManifestEntry, TransferRequestMessage } from '../../src/protocol/messages.js';

/** A session of the client home `home` with its peer "alice" at 127.0.0.1:`port`. */
export async function dialAs(
  home: string,
  port: number,
  config: NodeConfig = resolveConfig({ transport: 'quic' }),
): Promise<PeerSession> {
  const identity = await loadIdentity(path.join(home, 'identity.key'));
  const peer = await resolvePeer(new PeerStore(path.join(home, 'peers.json')), 'alice', `127.0.0.1:${port}`);
  return dialPeer({ identity, peer, config, log: silentLogger });
}

/** True when the listener at `port` answers one ping from `home` (a fresh connection). */
export async function pingOk(home: string, port: number): Promise<boolean> {
  const session = await dialAs(home, port);
  try {
    for await (const p of pingPeer(session, { count: 1, intervalMs: 0, timeoutMs: 10_000 }))
      if (p.seq === 1) return true;
    return false;
  } catch {
    return false;
  } finally {
    await session.close().catch(() => undefined);
  }
}

/** A file entry of `chunks` chunks of `chunkBytes` each, all announcing one id (the listener cannot tell before data). */
export function fileEntry(relPath: string, chunks: number, chunkBytes: number): ManifestEntry {
  const chunkIds = new Uint8Array(chunks * 32);
  for (let i = 0; i < chunkIds.length; i += 32) chunkIds[i] = 7;
  // A root that matches the chunk list (the listener checks it before staging); cheap for up to a few thousand chunks.
  const root =
    chunks <= 4096
      ? manifestRoot(Array.from({ length: chunks }, () => ({ id: chunkIds.subarray(0, 32), length: chunkBytes })))
      : new Uint8Array(32).fill(9);
  return {
    path: relPath,
    kind: 'file',
    size: chunks * chunkBytes,
    mode: 0o644,
    mtimeMs: 1_700_000_000_000,
    linkTarget: '',
    root,
    chunkIds,
    chunkLengths: new Array<number>(chunks).fill(chunkBytes),
  };
}

/** The listener process's CPU time so far, seconds (utime + stime of /proc/PID/stat). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from 3 (state) on
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (CLK_TCK 100)
}

/** Runs this module as a program: a client that sends `request` (a pull) and waits to be killed. */
export function spawnHostilePull(
  home: string,
  port: number,
  request: Omit<TransferRequestMessage, 'type' | 'transferId'>,
): { child: ChildProcess; sent: Promise<void> } {
  const self = fileURLToPath(import.meta.url);
  // Through a file: a 100,000-path list is too long for a command line.
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'clawpeer-hostile-')), 'request.json');
  writeFileSync(file, JSON.stringify(request));
  const child = spawn(process.execPath, [self, 'pull', home, String(port), file], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const sent = new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (b: Buffer) => {
      out += b.toString();
      if (out.includes('sent')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`hostile client exited (${String(code)}) before sending`)));
  });
  return { child, sent };
}

async function main(): Promise<void> {
  const [mode, home, port, file] = process.argv.slice(2);
  if (mode !== 'pull' || home === undefined || port === undefined || file === undefined)
    throw new Error('usage: budget-kit.js pull HOME PORT REQUEST_FILE');
  const json = readFileSync(file, 'utf8');
  // TLS over TCP: a killed process's socket is reset by the kernel, so the listener learns at once.
  const session = await dialAs(home, Number(port), resolveConfig({ transport: 'tcp' }));
  const request = JSON.parse(json) as Omit<TransferRequestMessage, 'type' | 'transferId'>;
  await session.control.send({ type: 'transfer-request', transferId: session.allocateTransferId(), ...request });
  process.stdout.write('sent\n');
  setInterval(() => undefined, 60_000); // wait for the SIGKILL; the listener's answer is never read
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await main();
