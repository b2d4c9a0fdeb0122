// Benchmark for protocol/aead.ts: seal + open throughput of the data plane (DataSealer /
// DataOpener) for both suites at the record sizes chunks travel in, against the bare cipher.
//
// One operation = seal one record into a complete DATA frame, then open it again, as the sender
// and the receiver of one chunk do (the receiver's frame delimiting is bench/frame-codec.ts).
// Rates are plaintext MiB of seal+open per CPU-second of the process (robust on a shared
// machine where wall time is not; wall-clock rates are reported too).
// Baselines, same run, same sizes:
//   raw      node:crypto createCipheriv/createDecipheriv of the same suite with the same 56-byte
//            AAD and a 12-byte counter nonce (KeyObject made once, as DataSealer does), output
//            left where the cipher put it. ratio = ours / raw: what our framing costs (the header
//            and nonce encoding, the copy into the one-allocation frame, the replay checks).
//   sodium   libsodium-wrappers crypto_aead_chacha20poly1305_ietf (chacha20-poly1305 only;
//            libsodium has no portable AES-GCM): the wasm alternative PLATFORM.md compares with.
// Data: incompressible (crypto.randomBytes), one buffer per size. Implementations are
// interleaved within each run so drift on a shared machine hits them alike.
// Run: node .build-x/bench/aead.js  (writes bench/results/aead.json); main({ smoke: true }) runs
// 16 KiB only, briefly, and writes nothing.
import { createCipheriv, createDecipheriv, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import sodium from 'libsodium-wrappers';
import { DataOpener, DataSealer } from '../src/protocol/aead.js';
import { AEAD_SUITES, type AeadSuiteName } from '../src/protocol/capabilities.js';
import {
  AEAD_TAG_BYTES,
  CHUNK_ID_BYTES,
  DATA_HEADER_BYTES,
  FRAME_HEADER_BYTES,
  decodeDataHeader,
  type DataFrame,
} from '../src/protocol/frame-codec.js';
import {
  KiB,
  MiB,
  runAsScript,
  machineConditions,
  median,
  ratio,
  round,
  sampleRates,
  writeResult,
  type BenchConditions,
} from './common.js';

export interface AeadBenchOptions {
  /** 16 KiB records, one short run: checks the benchmark runs; writes nothing. */
  readonly smoke?: boolean;
  /** Progress to stderr. */
  readonly verbose?: boolean;
}

const RECORD_SIZES_BYTES = [16 * KiB, 64 * KiB, 256 * KiB, 1 * MiB];
const KEY_BYTES = 32;
const NONCE_BYTES = 12;

type ImplName = 'ours' | 'raw' | 'sodium';

export interface AeadRow {
  readonly suite: AeadSuiteName;
  readonly recordBytes: number;
  /** Median seal+open MiB per CPU-second of this process, per implementation (sodium: chacha20-poly1305 only). */
  readonly cpuMiBps: Partial<Record<ImplName, number>>;
  /** The same by wall clock (lower when other processes share the cores). */
  readonly wallMiBps: Partial<Record<ImplName, number>>;
  /** Every run's cpuMiBps, to show the spread. */
  readonly cpuMiBpsAll: Partial<Record<ImplName, number[]>>;
  /** ours / raw node:crypto: below 1 is the cost of the framing. */
  readonly oursToRaw: number;
  /** ours / libsodium (chacha20-poly1305 only). */
  readonly oursToSodium?: number;
}

export interface AeadBenchResult {
  readonly bench: 'aead';
  readonly smoke: boolean;
  readonly conditions: BenchConditions;
  readonly settings: Record<string, unknown>;
  readonly rows: AeadRow[];
}

/** One seal+open of `plaintext`; returns the opened plaintext (so a check can compare it). */
type SealOpen = (plaintext: Uint8Array) => Uint8Array;

/** The data plane as used: a complete DATA frame out of the sealer, a DataFrame view into the opener. */
function oursFor(suite: AeadSuiteName, key: Uint8Array): SealOpen {
  const sealer = new DataSealer(suite, key);
  const opener = new DataOpener(suite, key);
  const chunkId = new Uint8Array(randomBytes(CHUNK_ID_BYTES));
  let sequence = 0;
  return (plaintext) => {
    const header = { streamId: 1, sequence: sequence++, chunkId, compressed: false, chunkBytes: plaintext.length };
    const frame = sealer.seal(header, plaintext);
    // What the receiver's decoder hands over: the parsed header and views of the frame body.
    const body = frame.subarray(FRAME_HEADER_BYTES);
    const dataFrame: DataFrame = {
      type: 'data',
      header: decodeDataHeader(body),
      headerBytes: body.subarray(0, DATA_HEADER_BYTES),
      payload: body.subarray(DATA_HEADER_BYTES),
    };
    return opener.open(dataFrame, header);
  };
}

/** The bare cipher: same suite, AAD size and key object, no frame. */
function rawFor(suite: AeadSuiteName, keyBytes: Uint8Array): SealOpen {
  const key: KeyObject = createSecretKey(keyBytes);
  const aad = new Uint8Array(randomBytes(DATA_HEADER_BYTES));
  const nonce = new Uint8Array(NONCE_BYTES);
  const nonceView = new DataView(nonce.buffer);
  let counter = 0;
  const options = { authTagLength: AEAD_TAG_BYTES };
  return (plaintext) => {
    nonceView.setUint32(8, counter++);
    // One overload per suite in @types/node, hence the two spelled-out branches.
    const cipher =
      suite === 'aes-256-gcm' ? createCipheriv(suite, key, nonce, options) : createCipheriv(suite, key, nonce, options);
    cipher.setAAD(aad, { plaintextLength: plaintext.length });
    const ciphertext = cipher.update(plaintext);
    cipher.final();
    const tag = cipher.getAuthTag();
    const decipher =
      suite === 'aes-256-gcm'
        ? createDecipheriv(suite, key, nonce, options)
        : createDecipheriv(suite, key, nonce, options);
    decipher.setAAD(aad, { plaintextLength: ciphertext.length });
    decipher.setAuthTag(tag);
    const opened = decipher.update(ciphertext);
    decipher.final();
    return opened;
  };
}

/** libsodium's IETF ChaCha20-Poly1305 (wasm): ciphertext || tag, as on our wire. */
function sodiumFor(key: Uint8Array): SealOpen {
  const aad = new Uint8Array(randomBytes(DATA_HEADER_BYTES));
  const nonce = new Uint8Array(NONCE_BYTES);
  const nonceView = new DataView(nonce.buffer);
  let counter = 0;
  return (plaintext) => {
    nonceView.setUint32(8, counter++);
    const sealed = sodium.crypto_aead_chacha20poly1305_ietf_encrypt(plaintext, aad, null, nonce, key);
    return sodium.crypto_aead_chacha20poly1305_ietf_decrypt(null, sealed, aad, nonce, key);
  };
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.length).equals(Buffer.from(b.buffer, b.byteOffset, b.length));
}

export async function main(options: AeadBenchOptions = {}): Promise<AeadBenchResult> {
  const smoke = options.smoke === true;
  const log = (s: string): void => {
    if (options.verbose === true) process.stderr.write(`aead: ${s}\n`);
  };
  const sizes = smoke ? [16 * KiB] : RECORD_SIZES_BYTES;
  const sampling = smoke ? { runs: 1, minSampleMs: 5, warmupRuns: 0 } : { runs: 7, minSampleMs: 150, warmupRuns: 1 };
  await sodium.ready;
  const conditions = machineConditions();
  const key = new Uint8Array(randomBytes(KEY_BYTES));
  const rows: AeadRow[] = [];
  for (const suite of AEAD_SUITES) {
    for (const size of sizes) {
      const plaintext = new Uint8Array(randomBytes(size));
      const impls: [ImplName, SealOpen][] = [
        ['ours', oursFor(suite, key)],
        ['raw', rawFor(suite, key)],
        ...(suite === 'chacha20-poly1305' ? [['sodium', sodiumFor(key)] as [ImplName, SealOpen]] : []),
      ];
      // A benchmark of a broken cipher is worthless: every implementation must round-trip.
      for (const [name, sealOpen] of impls) {
        if (!sameBytes(sealOpen(plaintext), plaintext))
          throw new Error(`aead bench: ${name} ${suite} did not round-trip ${size} bytes`);
      }
      const cpuAll: Partial<Record<ImplName, number[]>> = {};
      const wallAll: Partial<Record<ImplName, number[]>> = {};
      for (let run = 0; run < sampling.runs; run++) {
        for (const [name, sealOpen] of impls) {
          const r = sampleRates(() => void sealOpen(plaintext), {
            runs: 1,
            minSampleMs: sampling.minSampleMs,
            warmupRuns: run === 0 ? sampling.warmupRuns : 0,
          });
          (cpuAll[name] ??= []).push(round(((r.cpuOpsPerSec[0] ?? Number.NaN) * size) / MiB, 1));
          (wallAll[name] ??= []).push(round(((r.wallOpsPerSec[0] ?? Number.NaN) * size) / MiB, 1));
        }
      }
      const cpu: Partial<Record<ImplName, number>> = {};
      const wall: Partial<Record<ImplName, number>> = {};
      for (const [name] of impls) {
        cpu[name] = round(median(cpuAll[name] ?? []), 1);
        wall[name] = round(median(wallAll[name] ?? []), 1);
      }
      const row: AeadRow = {
        suite,
        recordBytes: size,
        cpuMiBps: cpu,
        wallMiBps: wall,
        oursToRaw: ratio(cpu.ours ?? Number.NaN, cpu.raw ?? Number.NaN),
        ...(cpu.sodium === undefined ? {} : { oursToSodium: ratio(cpu.ours ?? Number.NaN, cpu.sodium) }),
        cpuMiBpsAll: cpuAll,
      };
      rows.push(row);
      log(
        `${suite} ${size / KiB} KiB: ours ${cpu.ours} MiB/s per CPU-s (wall ${wall.ours}), raw ${cpu.raw} (x${row.oursToRaw})${cpu.sodium === undefined ? '' : `, sodium ${cpu.sodium} (x${row.oursToSodium})`}`,
      );
    }
  }
  const result: AeadBenchResult = {
    bench: 'aead',
    smoke,
    conditions,
    settings: {
      data: 'incompressible (crypto.randomBytes), one buffer per record size, in memory',
      operation: 'seal one record + open it again (plaintext bytes counted once); single thread',
      ours: "DataSealer.seal -> complete DATA frame (5-byte frame header + 56-byte data header + ciphertext || tag); decodeDataHeader + DataOpener.open of the frame's views",
      raw: 'node:crypto createCipheriv/createDecipheriv, same suite, 56-byte AAD, 12-byte counter nonce, KeyObject made once',
      sodium: `libsodium-wrappers ${sodium.SODIUM_VERSION_STRING} crypto_aead_chacha20poly1305_ietf encrypt + decrypt (wasm), chacha20-poly1305 rows only`,
      sampling: `${sampling.runs} runs of >= ${sampling.minSampleMs} ms of process CPU time each per implementation, interleaved; medians reported`,
      rates:
        'cpuMiBps = plaintext MiB per CPU-second of this process (robust on a shared machine; ratios use it); wallMiBps = by clock',
      ratios:
        'from cpuMiBps: oursToRaw = ours / raw (framing overhead, higher is better, 1 = free); oursToSodium = ours / sodium',
    },
    rows,
  };
  if (!smoke) log(`wrote ${await writeResult('aead', result)}`);
  return result;
}

runAsScript(import.meta.url, async ({ smoke }) => (await main({ smoke, verbose: true })).rows);
