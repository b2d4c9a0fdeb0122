// Runs the real CLI (bin/clawpeer.cjs over the compiled dist/) as a user would, with its own
// CLAWPEER home per node. Used by the end-to-end tests.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createIdentity } from '../../src/home/identity-store.js';
import { PeerStore } from '../../src/home/peer-store.js';

export const CLI = fileURLToPath(new URL('../../../bin/clawpeer.cjs', import.meta.url));

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export async function tempHome(label: string): Promise<string> {
  return mkdtemp(join(tmpdir(), `clawpeer-${label}-`));
}

/**
 * With CLAWPEER_TEST_TIMINGS=1, each CLI run and listener start is logged to stderr with its wall
 * time (the runner's summary then names the slow files; these lines say what in them is slow).
 */
const TIMINGS = process.env['CLAWPEER_TEST_TIMINGS'] === '1';
function logTiming(what: string, args: readonly string[], started: number): void {
  if (TIMINGS)
    process.stderr.write(
      `# ${what} ${String(Date.now() - started)} ms: ${args
        .filter((a) => !a.startsWith('/'))
        .join(' ')
        .slice(0, 120)}\n`,
    );
}

/** `stdin`: bytes piped to the command (default: no standard input at all). */
export function runCli(
  args: readonly string[],
  options: { timeoutMs?: number; env?: NodeJS.ProcessEnv; stdin?: Uint8Array } = {},
): Promise<CliResult> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { ...process.env, ...options.env },
      stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    if (options.stdin !== undefined) child.stdin?.end(options.stdin);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `clawpeer ${args.join(' ')} did not finish in ${options.timeoutMs ?? 30_000} ms\nstdout: ${stdout}\nstderr: ${stderr}`,
        ),
      );
    }, options.timeoutMs ?? 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      logTiming('cli', args, started);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Parses NDJSON stdout, failing loudly on any non-JSON line (the --json contract). */
export function jsonLines(stdout: string): Record<string, unknown>[] {
  return stdout
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/**
 * A home with a new identity, made in this process (what `clawpeer init` does, without a CLI's
 * start: the tests of `init` itself run the CLI, or use initNodeViaCli).
 */
export async function initNode(label: string): Promise<{ home: string; id: string }> {
  const home = await tempHome(label);
  const identity = await createIdentity(join(home, 'identity.key'));
  return { home, id: identity.nodeId };
}

/**
 * Pins peer `id` under `name` (and `addr`) in `home`, in this process: what `clawpeer pair add`
 * does (whose own tests run the CLI), without a CLI's start.
 */
export async function pairAdd(home: string, id: string, name: string, addr?: string): Promise<void> {
  await new PeerStore(join(home, 'peers.json')).add(id, name, addr);
}

/** A home made by `clawpeer init --json`, its id read from what it printed. */
export async function initNodeViaCli(label: string): Promise<{ home: string; id: string }> {
  const home = await tempHome(label);
  const r = await runCli(['--home', home, 'init', '--json']);
  if (r.code !== 0) throw new Error(`init failed: ${r.stderr}`);
  const id = jsonLines(r.stdout)[0]?.['id'];
  if (typeof id !== 'string') throw new Error(`init printed no id: ${r.stdout}`);
  return { home, id };
}

export interface RunningListener {
  readonly child: ChildProcess;
  readonly host: string;
  readonly port: number;
  readonly id: string;
  readonly ready: Record<string, unknown>;
  /** stderr so far (logs; the last MiB or more of a long run). */
  stderr(): string;
  /** stdout lines after the ready line. */
  lines(): string[];
  /** Resolves with the exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>;
  /** Sends a signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface ListenerOptions {
  /** UDP/TCP port on 127.0.0.1 (default 0: any). */
  readonly port?: number;
  /** Added to this process's environment. */
  readonly env?: NodeJS.ProcessEnv;
  /** How long to wait for the ready line (default 20 s). */
  readonly timeoutMs?: number;
}

/** Starts `clawpeer listen --json` on 127.0.0.1 and waits for its ready line. */
export function startListener(
  home: string,
  extra: readonly string[] = [],
  options: ListenerOptions = {},
): Promise<RunningListener> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [CLI, '--home', home, 'listen', '--host', '127.0.0.1', '--port', String(options.port ?? 0), '--json', ...extra],
      {
        env: { ...process.env, ...options.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    const lines: string[] = [];
    const exited = new Promise<number | null>((res) => child.on('close', (code) => res(code)));
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (stderr.length > 4 << 20) stderr = stderr.slice(-(1 << 20)); // bounded: a long run logs a lot
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`listener not ready in ${timeoutMs} ms; stderr: ${stderr}`));
    }, timeoutMs);
    let ready: Record<string, unknown> | undefined;
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (ready !== undefined) {
        lines.push(line);
        return;
      }
      clearTimeout(timer);
      logTiming('listener ready', extra, started);
      ready = JSON.parse(line) as Record<string, unknown>;
      const r = ready;
      resolve({
        child,
        host: String(r['host']),
        port: Number(r['port']),
        id: String(r['id']),
        ready: r,
        stderr: () => stderr,
        lines: () => lines,
        exited,
        stop: async (signal: NodeJS.Signals = 'SIGINT') => {
          const stopping = Date.now();
          if (child.exitCode === null && child.signalCode === null) child.kill(signal);
          const code = await exited;
          logTiming(`listener stop (${signal})`, extra, stopping);
          return code;
        },
      });
    });
    void exited.then((code) => {
      clearTimeout(timer);
      if (ready === undefined) reject(new Error(`listener exited ${String(code)} before ready; stderr: ${stderr}`));
    });
  });
}
