// Runs a bench plan: for each setting, a fresh workload pushed through clawpeer's own data plane
// (dialPeer + push, the same calls `clawpeer push` makes), timed, with the link's and the QUIC
// connection's view of what happened.
//
// Goals:
// - --simulate: everything on this machine. A listener on its own thread (listener-worker.ts:
//   NodeServer + serveSession, a temp home, fresh identities pinned both ways) behind an
//   impairment relay: UDP on its own worker thread for QUIC (its timers must not wait for the
//   endpoints' JavaScript), the TCP relay for the TLS fallback; one relay per link, shared by
//   the runs on it. Before the runs, the relay thread's own latency is measured and taken off
//   each UDP link's RTT (relay-floor.ts), then each distinct link is measured by the relay
//   self-check (relay/accuracy.ts) on the same worker placement the runs use; a link off by more
//   than 5% in RTT or rate, or 0.2 points in loss, is flagged (relayAccurate: false). How fast
//   files are created where the simulated peer writes is recorded (a slow disk is warned about).
// - --peer: a real paired peer, dialled at its pair address; runs push into the bench-specific
//   subpath clawpeer-bench/<timestamp>/run-<i> of its default share (left there: we cannot
//   delete on the peer; the report says where).
// - Per run: goodput (payload bytes / wall seconds of the whole push, as a user sees it, and of
//   the data phase alone: first chunk sent to transfer done), % of the simulated link rate,
//   application RTT (pings over the control channel before the push) and the transport's
//   smoothed RTT, QUIC lost packets and congestion window per connection, wire bytes, and the
//   relay's own drop counters.
// - --connections N stripes a run: the workload is laid out as N parts (byte ranges of the large
//   file as N files; the small files dealt into N directories), each pushed concurrently on its
//   own QUIC connection, so each has its own congestion window. They share the one simulated
//   bottleneck (the relay has one queue per direction). The receiver gets N part files.
// - The sync workload (simulate only) syncs a fresh folder with its own share of the listener
//   once, untimed, on a session of its own (one sync per session, as `clawpeer sync` does),
//   rewrites D files, and times the second sync on the run's session: seconds, reconcile bytes,
//   round trips, wire bytes.
// - A run that fails is recorded with its error; the bench goes on with the next setting.
// Non-goals: printing (cli/commands/bench.ts), formatting (report.ts), congestion-control
// choice (the quinn binding's CUBIC is fixed: no BBR to select here).
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileCreateMicros, machineConditions } from './machine.js';
import { measureRelayFloor, type RelayFloor } from './relay-floor.js';
import { ClawpeerError } from '../errors.js';
import { resolveConfig } from '../home/config.js';
import { dialPeer } from '../session/dialer.js';
import type { PeerSession } from '../session/session.js';
import { syncFolder, type SyncFolderResult } from '../folder-sync/sync-client.js';
import { push, type TransferResult } from '../push-pull/transfer-client.js';
import { formatImpairSpec } from '../relay/impair-spec.js';
import { TCP_RELAY_LIMITATION } from '../relay/tcp-relay.js';
import { udpBufferDrops } from '../transport/udp-buffers.js';
import { workloadBytes, workloadFiles, type BenchPlan, type BenchRunSetting } from './bench-plan.js';
import { prepareWorkload, type PreparedWorkload } from './workloads.js';
import type {
  BenchProgress,
  RunnerOptions,
  RelayCheckResult,
  BenchRunResult,
  BenchRunnerReport,
} from './bench-results.js';
import { connectionsOf, linkMeasures, linkPctOf, pingMs, round3 } from './run-measures.js';
import {
  checkSimulatedLink,
  peerEnvironment,
  RELAY_SEED,
  simulatedEnvironment,
  type Environment,
  type LinkHandle,
} from './bench-environment.js';

export const STRIPING_NOTE =
  '--connections N stripes a run over N independent QUIC connections, each with its own congestion window: ' +
  'the large file is written as N byte-range part files, small files are dealt into N directories, and each part is pushed ' +
  'concurrently on its own connection (the receiver keeps N part files; nothing reassembles them). All connections share the one simulated bottleneck. ' +
  'Simulated listener: each connection pushes into its own share (concurrent pushes into one share race on its chunk index: see writeFileAtomic); with --peer they all go to its default share.';

const loads = (): number[] => loadavg().map((x) => Math.round(x * 100) / 100);

function describeSetting(s: BenchRunSetting): string {
  return `${s.transport} ${s.link} W=${s.window} streams=${s.streams} conns=${s.connections}${s.repeat > 0 ? ` #${s.repeat + 1}` : ''}`;
}

interface RunContext {
  readonly plan: BenchPlan;
  readonly env: Environment;
  readonly options: RunnerOptions;
  readonly workDir: string;
  /** Removals put off until the bench ends (see removeAfterRun). */
  readonly deferred: Array<() => Promise<void>>;
}

/**
 * Removes a run's files now (one large file) or when the bench ends (many files). ext4 without
 * a journal (this disk) does not reuse an inode freed less than 60 s ago (5 min while its
 * inode-table block is dirty): its allocator reads and skips each one (recently_deleted()).
 * After thousands of deletes, every create paid that scan: 10,000 creates took ~250 µs each
 * instead of ~10 µs here. A single big file frees one inode, and deferring it would hold GiBs.
 */
async function removeAfterRun(ctx: RunContext, remove: () => Promise<void>): Promise<void> {
  if (ctx.plan.workload.kind === 'large') await remove();
  else ctx.deferred.push(remove);
}

async function runOne(ctx: RunContext, setting: BenchRunSetting): Promise<BenchRunResult> {
  const { plan, env, options } = ctx;
  const { log, signal } = options;
  const runs = plan.settings.length;
  const label = describeSetting(setting);
  const payloadTotal = workloadBytes(plan.workload);
  const progress = (phase: BenchProgress['phase'], bytes: number): void =>
    options.onProgress?.({ run: setting.index + 1, runs, label, phase, bytes, totalBytes: payloadTotal });
  const config = resolveConfig({ transport: setting.transport });
  const remotePath = `${plan.remoteBase}/run-${String(setting.index + 1).padStart(4, '0')}`;
  const base: Omit<
    BenchRunResult,
    | 'ok'
    | 'error'
    | 'effectiveWindow'
    | 'effectiveStreams'
    | 'seconds'
    | 'dataSeconds'
    | 'goodputBitsPerSec'
    | 'dataGoodputBitsPerSec'
    | 'linkPct'
    | 'revisionsPerSec'
    | 'pingMs'
    | 'transportRttMs'
    | 'lostPackets'
    | 'congestionWindowBytes'
    | 'wireBytes'
    | 'chunksSent'
    | 'chunksSkipped'
    | 'relay'
    | 'kernelUdpDrops'
    | 'connectionsUsed'
  > = {
    index: setting.index,
    repeat: setting.repeat,
    transport: setting.transport,
    link: setting.link,
    rttMs: setting.rttMs ?? null,
    lossPct: setting.lossPct ?? null,
    window: setting.window,
    streams: setting.streams,
    connections: setting.connections,
    sessionConnections: setting.sessionConnections,
    payloadBytes: payloadTotal,
    files: workloadFiles(plan.workload),
    reconcileBytes: null,
    roundTrips: null,
  };

  progress('preparing', 0);
  const workloadDir = await mkdtemp(path.join(ctx.workDir, 'workload-'));
  let workload: PreparedWorkload | undefined;
  let link: LinkHandle | undefined;
  const sessions: PeerSession[] = [];
  try {
    workload = await prepareWorkload(plan.workload, workloadDir, { connections: setting.connections, signal });
    link = await env.openLink(setting);
    const peer = env.peerAt(link.address);
    const countersBefore = await link.counters();
    const dropsBefore = udpBufferDrops();
    for (let k = 0; k < workload.parts.length; k++) {
      sessions.push(
        await dialPeer({
          identity: env.identity,
          peer,
          config,
          log: log.child('dial'),
          signal,
          connections: setting.sessionConnections,
        }),
      );
    }
    const first = sessions[0];
    if (first === undefined) throw new TypeError('no session');
    if (plan.warmupBytes > 0) await warmUp(ctx, sessions, `${remotePath}-warmup`, setting);
    const pings = await pingMs(first, config.idleTimeoutMs, signal);
    if (workload.kind === 'sync') {
      progress('scanning', 0);
      const { result: r, seconds } = await timedSync(ctx, setting, workload, first, () =>
        dialPeer({ identity: env.identity, peer, config, log: log.child('dial'), signal }),
      );
      progress('done', payloadTotal);
      const goodput = (payloadTotal * 8) / seconds;
      return {
        ...base,
        ok: r.inSync,
        error: r.inSync ? null : 'the timed sync did not converge',
        effectiveWindow: null,
        effectiveStreams: null,
        seconds: round3(seconds),
        dataSeconds: null,
        goodputBitsPerSec: Math.round(goodput),
        dataGoodputBitsPerSec: null,
        linkPct: linkPctOf(goodput, setting),
        revisionsPerSec: null,
        ...(await linkMeasures(sessions, pings, countersBefore, link, dropsBefore)),
        wireBytes: r.wireBytes,
        chunksSent: r.chunksSent,
        chunksSkipped: 0,
        connectionsUsed: connectionsOf(sessions),
        reconcileBytes: r.reconcileBytes,
        roundTrips: r.roundTrips,
      };
    }

    let sent = 0;
    let firstChunkAt: number | undefined;
    const onProgress = (p: { phase: string; bytes: number }, delta: number): void => {
      if (p.phase === 'sending') {
        firstChunkAt ??= performance.now();
        sent += delta;
        progress('sending', sent);
      } else if (p.phase === 'scanning') {
        progress('scanning', 0);
      }
    };
    const started = performance.now();
    const results: TransferResult[] = [];
    if (workload.kind === 'revisions-seq') {
      const write = workload.writeRevision;
      const part = workload.parts[0];
      if (write === undefined || part === undefined) throw new TypeError('revisions-seq workload without its page');
      for (let i = 0; i < workloadFiles(plan.workload); i++) {
        if (i > 0) await write(i);
        results.push(
          await push({
            session: first,
            share: '',
            remotePath,
            localPath: part.localPath,
            force: true,
            streams: setting.streams,
            window: setting.window,
            idleTimeoutMs: config.idleTimeoutMs,
            log: log.child('push'),
            signal,
          }),
        );
        sent += part.bytes;
        progress('sending', sent);
      }
    } else {
      const parts = workload.parts;
      results.push(
        ...(await Promise.all(
          parts.map((part, k) => {
            const session = sessions[k];
            if (session === undefined) throw new TypeError('missing session');
            let last = 0;
            return push({
              session,
              share: env.shareFor(k),
              remotePath: parts.length === 1 ? remotePath : `${remotePath}/conn-${k + 1}`,
              localPath: part.localPath,
              force: false,
              streams: setting.streams,
              window: setting.window,
              idleTimeoutMs: config.idleTimeoutMs,
              log: log.child('push'),
              signal,
              onProgress: (p) => {
                const delta = p.phase === 'sending' ? p.bytes - last : 0;
                if (p.phase === 'sending') last = p.bytes;
                onProgress(p, delta);
              },
            });
          }),
        )),
      );
    }
    const ended = performance.now();
    progress('done', sent);
    const seconds = (ended - started) / 1000;
    const dataSeconds =
      workload.kind === 'revisions-seq' || firstChunkAt === undefined ? null : (ended - firstChunkAt) / 1000;
    const bytes = results.reduce((a, r) => a + r.bytes, 0);
    const goodput = (bytes * 8) / seconds;
    const isRevisions = plan.workload.kind === 'revisions' || plan.workload.kind === 'revisions-seq';
    const chunksSkipped = results.reduce((a, r) => a + r.chunksSkipped, 0);
    if (chunksSkipped > 0)
      log.warn(
        'the receiver already held some chunks of a fresh random workload: this run moved less than its payload',
        { run: setting.index + 1, chunksSkipped },
      );
    return {
      ...base,
      ok: true,
      error: null,
      effectiveWindow: results[0]?.window ?? null,
      effectiveStreams: results.length === 0 ? null : Math.max(...results.map((r) => r.streams)),
      payloadBytes: bytes,
      seconds: round3(seconds),
      dataSeconds: dataSeconds === null ? null : round3(dataSeconds),
      goodputBitsPerSec: Math.round(goodput),
      dataGoodputBitsPerSec: dataSeconds === null || dataSeconds <= 0 ? null : Math.round((bytes * 8) / dataSeconds),
      linkPct: linkPctOf(goodput, setting),
      revisionsPerSec: isRevisions ? round3(workloadFiles(plan.workload) / seconds) : null,
      ...(await linkMeasures(sessions, pings, countersBefore, link, dropsBefore)),
      wireBytes: results.reduce((a, r) => a + r.wireBytes, 0),
      chunksSent: results.reduce((a, r) => a + r.chunksSent, 0),
      chunksSkipped,
      connectionsUsed: connectionsOf(sessions),
    };
  } catch (err) {
    if (signal.aborted) throw err;
    if (!(err instanceof ClawpeerError)) throw err;
    log.warn('bench run failed', { run: setting.index + 1, setting: label, code: err.code, error: err.message });
    return {
      ...base,
      ok: false,
      error: `${err.code}: ${err.message}`,
      effectiveWindow: null,
      effectiveStreams: null,
      seconds: 0,
      dataSeconds: null,
      goodputBitsPerSec: 0,
      dataGoodputBitsPerSec: null,
      linkPct: null,
      revisionsPerSec: null,
      pingMs: null,
      transportRttMs: [],
      lostPackets: null,
      congestionWindowBytes: null,
      wireBytes: 0,
      chunksSent: 0,
      chunksSkipped: 0,
      relay: null,
      kernelUdpDrops: null,
      connectionsUsed: null,
    };
  } finally {
    await Promise.all(sessions.map((s) => s.close().catch(() => undefined)));
    await link?.close().catch(() => undefined);
    await removeAfterRun(ctx, () => rm(workloadDir, { recursive: true, force: true }));
    await removeAfterRun(ctx, () => env.discard(remotePath).catch(() => undefined));
  }
}

/** QUIC connections of the run's sessions now (joined ones included). */
/**
 * The sync workload: the first sync (untimed) on a session of its own, as `clawpeer sync` dials
 * once per sync; then the change; then the timed sync on `session`.
 */
async function timedSync(
  ctx: RunContext,
  setting: BenchRunSetting,
  workload: PreparedWorkload,
  session: PeerSession,
  dial: () => Promise<PeerSession>,
): Promise<{ result: SyncFolderResult; seconds: number }> {
  const { log, signal } = ctx.options;
  const part = workload.parts[0];
  const change = workload.changeFiles;
  if (part === undefined || change === undefined) throw new TypeError('sync workload without its folder');
  const syncOn = (s: PeerSession): Promise<SyncFolderResult> =>
    syncFolder({
      session: s,
      dir: part.localPath,
      share: ctx.env.syncShareFor(setting.index),
      mode: 'two-way',
      nodeId: ctx.env.identity.nodeId,
      log: log.child('sync'),
      signal,
    });
  const seed = await dial();
  try {
    const initial = await syncOn(seed); // both sides hold the folder after it
    if (!initial.inSync) throw new ClawpeerError('INTERNAL', 'the untimed first sync did not converge');
  } finally {
    await seed.close().catch(() => undefined);
  }
  await change();
  const started = performance.now();
  const result = await syncOn(session);
  return { result, seconds: (performance.now() - started) / 1000 };
}

/** Pushes `plan.warmupBytes` of fresh random bytes on every session, untimed, so the timed push
 *  starts on connections past slow start (a long-lived sync connection), not cold ones. */
async function warmUp(
  ctx: RunContext,
  sessions: readonly PeerSession[],
  remotePath: string,
  setting: BenchRunSetting,
): Promise<void> {
  const { log, signal } = ctx.options;
  const dir = await mkdtemp(path.join(ctx.workDir, 'warmup-'));
  try {
    const w = await prepareWorkload({ kind: 'large', bytes: ctx.plan.warmupBytes * sessions.length }, dir, {
      connections: sessions.length,
      signal,
    });
    const idleTimeoutMs = resolveConfig({ transport: setting.transport }).idleTimeoutMs;
    await Promise.all(
      w.parts.map((part, k) => {
        const session = sessions[k];
        if (session === undefined) throw new TypeError('missing session');
        return push({
          session,
          share: ctx.env.shareFor(k),
          remotePath: `${remotePath}/conn-${k + 1}`,
          localPath: part.localPath,
          force: false,
          streams: setting.streams,
          window: setting.window,
          idleTimeoutMs,
          log: log.child('warmup'),
          signal,
        });
      }),
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
    await ctx.env.discard(remotePath).catch(() => undefined);
  }
}

/** Runs every setting of `plan` in order; see the module comment. */
export async function runBench(plan: BenchPlan, options: RunnerOptions): Promise<BenchRunnerReport> {
  const startedAt = new Date().toISOString();
  const t0 = performance.now();
  const loadAverageStart = loads();
  const conditions = machineConditions();
  const notes: string[] = [];
  if (plan.settings.some((s) => s.connections > 1)) notes.push(STRIPING_NOTE);
  if (plan.settings.some((s) => s.transport === 'tcp'))
    notes.push(
      `${TCP_RELAY_LIMITATION}; it runs in this process (no worker thread) and the relay self-check measures the UDP relay only`,
    );
  if (plan.workload.kind === 'revisions-seq')
    notes.push(
      'revisions-seq: each revision is its own push (request, manifest, want, one chunk, done) and waits for the previous one: the window cannot matter',
    );
  if (plan.workload.kind === 'revisions')
    notes.push(
      'revisions: every revision is its own 4 KiB-chunk file in one push; the sender keeps up to W unacknowledged per stream (the sliding window), the receiver acks each once written and verified',
    );
  if (plan.warmupBytes > 0)
    notes.push(
      `warm connections: before each timed push, ${plan.warmupBytes} bytes were pushed untimed on every connection (out of slow start, as a long-lived connection would be); QUIC loss and cwnd include the warm-up`,
    );
  notes.push(
    "congestion control: the quinn binding's CUBIC is fixed (no BBR to select); node:quic, which has a cc option, is not in this Node build",
  );
  notes.push(
    'compression: zstd negotiated when both sides have it (the default); the workloads are random bytes, so every chunk goes raw untried (its sampled byte entropy is near 8 bits), as with --no-compress',
  );
  notes.push(
    "data phase: first DATA frame sent to transfer done; with early chunks (a peer of this version) the first window leaves with the manifest, so it includes the Want's round trip",
  );

  const workRoot = options.workDir ?? tmpdir();
  const workDir = await mkdtemp(path.join(workRoot, 'clawpeer-bench-'));
  const relayChecks: RelayCheckResult[] = [];
  const deferred: Array<() => Promise<void>> = [];
  let env: Environment | undefined;
  let relayFloor: RelayFloor | null = null;
  let fileCreate: BenchRunnerReport['conditions']['fileCreate'] = null;
  try {
    if (plan.target.kind === 'simulate') {
      fileCreate = { dir: workRoot, medianMicros: fileCreateMicros(workDir) };
      if (options.skipRelayCheck !== true) {
        options.onProgress?.({
          run: 0,
          runs: plan.settings.length,
          label: 'relay floor: its own forwarding latency',
          phase: 'relay-check',
          bytes: 0,
          totalBytes: 0,
        });
        const rttProbes = options.accuracyProbe?.rttProbes;
        relayFloor = await measureRelayFloor({
          seed: RELAY_SEED,
          ...(rttProbes === undefined ? {} : { probes: rttProbes }),
          signal: options.signal,
        });
        if (relayFloor.compensationMs > 0)
          notes.push(
            `relay floor: a relay thread delaying ${relayFloor.referenceRttMs} ms added ${relayFloor.compensationMs} ms more to a direct loopback round trip (${relayFloor.relayedMs} ms vs ${relayFloor.referenceRttMs} + ${relayFloor.directMs} ms); each UDP link's relay was started with that much less RTT, and the self-check measured the result against the configured RTT`,
          );
        for (const [i, spec] of plan.links.entries()) {
          options.onProgress?.({
            run: 0,
            runs: plan.settings.length,
            label: `relay self-check ${i + 1}/${plan.links.length}: ${formatImpairSpec(spec)}`,
            phase: 'relay-check',
            bytes: 0,
            totalBytes: 0,
          });
          relayChecks.push(
            await checkSimulatedLink(spec, options.accuracyProbe, options.signal, relayFloor.compensationMs),
          );
        }
      }
      env = await simulatedEnvironment(plan, workDir, options.log, relayFloor?.compensationMs ?? 0);
      notes.push(
        "simulated peer: a listener on its own thread of this process (its own event loop beside the sender's, as on another machine, but sharing this machine's cores)",
      );
    } else {
      if (options.peer === undefined) throw new TypeError('--peer plan without a resolved peer');
      env = peerEnvironment(options.peer);
      notes.push(
        `pushed into ${plan.remoteBase}/run-NNNN of the peer's default share; left there (remove it on the peer when done)`,
      );
    }
    const runs: BenchRunResult[] = [];
    const ctx: RunContext = { plan, env, options, workDir, deferred };
    for (const setting of plan.settings) {
      if (options.signal.aborted)
        throw new ClawpeerError('ABORTED', `bench aborted before run ${setting.index + 1} of ${plan.settings.length}`);
      runs.push(await runOne(ctx, setting));
    }
    return {
      conditions: { ...conditions, loadAverageStart, loadAverageEnd: loads(), fileCreate },
      plan,
      relayChecks,
      relayAccurate: relayChecks.every((c) => c.ok),
      relayFloor,
      runs,
      remoteBase: plan.remoteBase,
      notes,
      startedAt,
      wallSeconds: round3((performance.now() - t0) / 1000),
    };
  } finally {
    for (const remove of deferred) await remove();
    await env?.close().catch(() => undefined);
    await rm(workDir, { recursive: true, force: true });
  }
}
