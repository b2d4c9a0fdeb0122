// Benchmark for transport/: handshake latency and one-stream bulk throughput of every backend
// this runtime has, against a plain node:tls TLS 1.3 socket measured in the same run.
//
// Handshake: median wall time of N sequential connects on 127.0.0.1 (connect() call until the
// authenticated Connection resolves; the baseline until 'secureConnect'). Throughput: one
// stream carrying BULK bytes of incompressible data (an 8 MiB crypto.randomBytes block sent
// repeatedly), timed from the first write until the receiver has read every byte and the FIN;
// median of RUNS runs, each on a fresh connection. Ratios are backend / TLS baseline.
// The baseline uses a throwaway self-signed Ed25519 certificate made with the openssl CLI.
// Run: node .build-x/bench/transport.js  (writes bench/results/transport.json);
// main({ smoke: true }) moves 4 MiB, does 2 handshakes, and writes nothing.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { arch, cpus, platform, release, tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tls from 'node:tls';
import { generateIdentity } from '../src/crypto/identity.js';
import { MemoryBackend } from '../src/transport/memory.js';
import { NodeQuicBackend } from '../src/transport/node-quic.js';
import { QuinnBackend } from '../src/transport/quinn.js';
import { QUINN_TUNING_DEFAULTS } from '../src/transport/quinn-connection.js';
import type { TransportBackend } from '../src/transport/types.js';
import { runAsScript, KiB, median, MiB, writeJsonFile, writeResult } from './common.js';

export interface TransportBenchOptions {
  /** 4 MiB and 2 handshakes: checks the benchmark runs; writes nothing unless outFile is set. */
  readonly smoke?: boolean;
  readonly outFile?: string;
  /** Progress to stderr. */
  readonly verbose?: boolean;
}

const BLOCK_BYTES = 8 * MiB;
const WRITE_BYTES = 256 * KiB;
const READ_BYTES = 256 * KiB;

interface Row {
  readonly name: string;
  readonly settings: Record<string, unknown>;
  readonly handshakeMsMedian: number;
  readonly handshakeMsAll: number[];
  readonly throughputMiBpsMedian: number;
  readonly throughputMiBpsAll: number[];
  handshakeRatioToTls?: number;
  throughputRatioToTls?: number;
}

const round = (x: number, digits = 2): number => Math.round(x * 10 ** digits) / 10 ** digits;

async function benchBackend(
  name: string,
  backend: TransportBackend,
  settings: Record<string, unknown>,
  cfg: { bulkBytes: number; handshakes: number; runs: number },
  block: Buffer,
): Promise<Row> {
  const serverId = generateIdentity();
  const clientId = generateIdentity();
  const listener = await backend.listen({ host: '127.0.0.1', port: 0, identity: serverId });
  try {
    const handshakeMs: number[] = [];
    for (let i = 0; i < cfg.handshakes + 1; i++) {
      const accepted = listener.accept();
      const t0 = performance.now();
      const client = await backend.connect({ host: '127.0.0.1', port: listener.address.port, identity: clientId });
      const ms = performance.now() - t0;
      if (i > 0) handshakeMs.push(ms); // the first connect warms up (native load, cert build)
      const server = await accepted;
      await client.close();
      await server?.close();
    }
    const rates: number[] = [];
    for (let r = 0; r < cfg.runs; r++) {
      const accepted = listener.accept();
      const client = await backend.connect({ host: '127.0.0.1', port: listener.address.port, identity: clientId });
      const server = await accepted;
      if (server === null) throw new Error(`${name}: listener closed`);
      const t0 = performance.now();
      const out = await client.openStream();
      const writing = (async () => {
        for (let sent = 0; sent < cfg.bulkBytes;) {
          const off = sent % BLOCK_BYTES;
          const n = Math.min(WRITE_BYTES, cfg.bulkBytes - sent, BLOCK_BYTES - off);
          await out.write(block.subarray(off, off + n));
          sent += n;
        }
        await out.finish();
      })();
      const inbound = await server.acceptStream();
      if (inbound === null) throw new Error(`${name}: no stream`);
      let got = 0;
      for (;;) {
        const chunk = await inbound.read(READ_BYTES);
        if (chunk === null) break;
        got += chunk.length;
      }
      const seconds = (performance.now() - t0) / 1000;
      await writing;
      if (got !== cfg.bulkBytes) throw new Error(`${name}: received ${got} of ${cfg.bulkBytes} bytes`);
      rates.push(cfg.bulkBytes / MiB / seconds);
      await client.close();
      await server.close();
    }
    return {
      name,
      settings,
      handshakeMsMedian: round(median(handshakeMs), 3),
      handshakeMsAll: handshakeMs.map((x) => round(x, 3)),
      throughputMiBpsMedian: round(median(rates), 1),
      throughputMiBpsAll: rates.map((x) => round(x, 1)),
    };
  } finally {
    await listener.close();
  }
}

/** Plain node:tls TLS 1.3 over TCP: the baseline every backend is compared with. */
async function benchTlsBaseline(
  cfg: { bulkBytes: number; handshakes: number; runs: number },
  block: Buffer,
): Promise<Row> {
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-bench-tls-'));
  try {
    const keyFile = join(dir, 'key.pem');
    const certFile = join(dir, 'cert.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ed25519',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=clawpeer-bench',
        '-keyout',
        keyFile,
        '-out',
        certFile,
      ],
      { stdio: 'ignore' },
    );
    const key = await readFile(keyFile);
    const cert = await readFile(certFile);
    const versions = { minVersion: 'TLSv1.3', maxVersion: 'TLSv1.3' } as const;
    let onBytes: ((n: number) => void) | undefined;
    let onEnd: (() => void) | undefined;
    const server = tls.createServer({ key, cert, ...versions }, (socket) => {
      socket.on('data', (d: Buffer) => onBytes?.(d.length));
      socket.on('end', () => {
        onEnd?.();
        socket.end();
      });
      socket.on('error', () => {});
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    const connect = (): Promise<tls.TLSSocket> =>
      new Promise((resolve, reject) => {
        const s = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ...versions }, () => resolve(s));
        s.once('error', reject);
      });
    try {
      const handshakeMs: number[] = [];
      for (let i = 0; i < cfg.handshakes + 1; i++) {
        const t0 = performance.now();
        const s = await connect();
        if (i > 0) handshakeMs.push(performance.now() - t0);
        s.destroy();
      }
      const rates: number[] = [];
      for (let r = 0; r < cfg.runs; r++) {
        const s = await connect();
        let got = 0;
        const done = new Promise<void>((resolve) => {
          onBytes = (n) => (got += n);
          onEnd = resolve;
        });
        const t0 = performance.now();
        for (let sent = 0; sent < cfg.bulkBytes;) {
          const off = sent % BLOCK_BYTES;
          const n = Math.min(WRITE_BYTES, cfg.bulkBytes - sent, BLOCK_BYTES - off);
          if (!s.write(block.subarray(off, off + n))) await new Promise((resolve) => s.once('drain', resolve));
          sent += n;
        }
        s.end();
        await done;
        const seconds = (performance.now() - t0) / 1000;
        if (got !== cfg.bulkBytes) throw new Error(`tls baseline: received ${got} of ${cfg.bulkBytes}`);
        rates.push(cfg.bulkBytes / MiB / seconds);
        s.destroy();
      }
      return {
        name: 'node:tls TLS 1.3 baseline',
        settings: { cert: 'self-signed Ed25519 (openssl CLI)', socket: 'node net defaults' },
        handshakeMsMedian: round(median(handshakeMs), 3),
        handshakeMsAll: handshakeMs.map((x) => round(x, 3)),
        throughputMiBpsMedian: round(median(rates), 1),
        throughputMiBpsAll: rates.map((x) => round(x, 1)),
      };
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The TLS-over-TCP backend if src/transport/tls.ts exists and exports `tlsBackend`. */
async function loadTcpBackend(): Promise<TransportBackend | undefined> {
  try {
    const specifier = '../src/transport/tls.js';
    const mod = (await import(specifier)) as { tlsBackend?: TransportBackend };
    return mod.tlsBackend?.available() === true ? mod.tlsBackend : undefined;
  } catch {
    return undefined;
  }
}

export async function main(options: TransportBenchOptions = {}): Promise<Record<string, unknown>> {
  const smoke = options.smoke === true;
  const cfg = smoke
    ? { bulkBytes: 4 * MiB, handshakes: 2, runs: 1 }
    : { bulkBytes: 256 * MiB, handshakes: 20, runs: 3 };
  const log = (msg: string): void => {
    if (options.verbose === true) process.stderr.write(`${msg}\n`);
  };
  const block = randomBytes(BLOCK_BYTES);
  const candidates: [string, TransportBackend | undefined, Record<string, unknown>][] = [
    ['quic (quinn, tuned)', new QuinnBackend(), { ...QUINN_TUNING_DEFAULTS }],
    // The binding's libp2p defaults, to show what the tuning buys.
    [
      'quic (quinn, libp2p defaults)',
      new QuinnBackend({ streamWindowBytes: 10_000_000, connectionWindowBytes: 15_000_000, udpBufferBytes: 500_000 }),
      { streamWindowBytes: 10_000_000, connectionWindowBytes: 15_000_000, udpBufferBytes: 500_000 },
    ],
    ['tcp (TLS + mux backend)', await loadTcpBackend(), {}],
    ['node-quic', new NodeQuicBackend(), {}],
    ['memory (real-time, 0 ms link)', new MemoryBackend(), { segmentBytes: 16 * KiB, streamWindowBytes: MiB }],
  ];
  log(`baseline: node:tls, ${cfg.bulkBytes / MiB} MiB x ${cfg.runs}`);
  const baseline = await benchTlsBaseline(cfg, block);
  const rows: Row[] = [];
  const skipped: { name: string; reason: string }[] = [];
  for (const [name, backend, settings] of candidates) {
    if (backend === undefined || !backend.available()) {
      skipped.push({
        name,
        reason:
          backend === undefined
            ? 'src/transport/tls.ts missing or without tlsBackend'
            : 'not available on this runtime',
      });
      continue;
    }
    log(`${name}: ${cfg.bulkBytes / MiB} MiB x ${cfg.runs}`);
    const row = await benchBackend(name, backend, settings, cfg, block);
    row.handshakeRatioToTls = round(row.handshakeMsMedian / baseline.handshakeMsMedian, 3);
    row.throughputRatioToTls = round(row.throughputMiBpsMedian / baseline.throughputMiBpsMedian, 3);
    rows.push(row);
  }
  const result = {
    benchmark: 'transport',
    date: new Date().toISOString(),
    machine: {
      cpu: cpus()[0]?.model ?? 'unknown',
      cores: cpus().length,
      os: `${platform()} ${release()} ${arch()}`,
      node: process.version,
    },
    conditions: {
      network: 'loopback 127.0.0.1, one process (client and server share the event loop and 2 cores)',
      data: `incompressible: an ${BLOCK_BYTES / MiB} MiB crypto.randomBytes block repeated`,
      bulkBytes: cfg.bulkBytes,
      writeBytes: WRITE_BYTES,
      readBytes: READ_BYTES,
      streams: 1,
      runs: cfg.runs,
      handshakes: cfg.handshakes,
      handshakeMeasure:
        'connect() call until the authenticated connection resolves (first connect excluded as warm-up)',
      ratios: 'backend / node:tls TLS 1.3 baseline (handshake: lower is better; throughput: higher is better)',
    },
    baseline,
    backends: rows,
    skipped,
  };
  if (options.outFile !== undefined) log(`wrote ${await writeJsonFile(options.outFile, result)}`);
  else if (!smoke) log(`wrote ${await writeResult('transport', result)}`);
  return result;
}

runAsScript(import.meta.url, ({ smoke }) => main({ smoke, verbose: true }));
