// The real CLI inside the NAT lab: clawpeer homes made on the host's file system, processes run
// in a lab namespace (a listener, a rendezvous, a one-shot command). Used by the matrix and the
// LAN cell, which need the reach features (rendezvous, LAN discovery, pairing without --addr).
import { execFileSync, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { CLI } from '../e2e/cli-harness.js';
import type { Lab } from './netlab.js';

/**
 * Why the CLI cannot run the reach cells yet (a build without them), or undefined. The LAN
 * cell needs only the --rendezvous option (to name one that is down); the matrix needs the
 * rendezvous command too.
 */
export function reachCliSkipReason(
  needs: { rendezvousCommand: boolean } = { rendezvousCommand: true },
): string | undefined {
  let help: string;
  try {
    help = execFileSync(process.execPath, [CLI, '--help'], { encoding: 'utf8' });
  } catch (err) {
    return `clawpeer --help failed: ${String(err)}`;
  }
  const missing = [
    !needs.rendezvousCommand || /^\s*clawpeer rendezvous\b/m.test(help) ? '' : 'the rendezvous command',
    /--rendezvous\b/.test(help) ? '' : 'the --rendezvous option',
  ].filter((m) => m !== '');
  return missing.length === 0
    ? undefined
    : `this build of clawpeer lacks ${missing.join(' and ')} (issue 28's reach branches)`;
}

export interface LabProcess {
  readonly child: ChildProcess;
  /** The first JSON line (the ready line). */
  readonly ready: Record<string, unknown>;
  stderr(): string;
  lines(): string[];
  stop(): Promise<void>;
}

function collect(child: ChildProcess): { stderr: () => string; lines: string[] } {
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
    if (stderr.length > 4 << 20) stderr = stderr.slice(-(1 << 20));
  });
  return { stderr: () => stderr, lines: [] };
}

/**
 * Starts a long-running clawpeer command in a namespace and waits for its first stdout line
 * matching `isReady` (JSON). `readyOptional`: a process that prints nothing while it serves
 * (a rendezvous may not) counts as ready after that many ms alive.
 */
export function startIn(
  lab: Lab,
  ns: string,
  args: readonly string[],
  options: { timeoutMs?: number; isReady?: (line: Record<string, unknown>) => boolean; readyOptionalMs?: number } = {},
): Promise<LabProcess> {
  const child = lab.spawnIn(ns, process.execPath, [CLI, ...args]);
  const { stderr, lines } = collect(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
    const killer = setTimeout(() => child.kill('SIGKILL'), 3_000);
    await exited;
    clearTimeout(killer);
  };
  return new Promise((resolve, reject) => {
    let ready: Record<string, unknown> | undefined;
    const done = (value: Record<string, unknown>): void => {
      if (ready !== undefined) return;
      ready = value;
      clearTimeout(timer);
      clearTimeout(optional);
      resolve({ child, ready: value, stderr, lines: () => lines, stop });
    };
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(`clawpeer ${args.join(' ')} not ready in ${options.timeoutMs ?? 20_000} ms; stderr:\n${stderr()}`),
      );
    }, options.timeoutMs ?? 20_000);
    const optional =
      options.readyOptionalMs === undefined ? undefined : setTimeout(() => done({}), options.readyOptionalMs);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      lines.push(line);
      if (ready !== undefined) return;
      let parsed: Record<string, unknown>;
      try {
        parsed = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return;
      }
      if (options.isReady === undefined || options.isReady(parsed)) done(parsed);
    });
    void exited.then(() => {
      if (ready !== undefined) return;
      clearTimeout(timer);
      clearTimeout(optional);
      reject(
        new Error(
          `clawpeer ${args.join(' ')} exited (${String(child.exitCode ?? child.signalCode)}) before ready; stderr:\n${stderr()}`,
        ),
      );
    });
  });
}

/** Runs one clawpeer command in a namespace to its end. */
export async function cliIn(
  lab: Lab,
  ns: string,
  args: readonly string[],
  timeoutMs = 60_000,
): Promise<{ code: number | null; stdout: string; stderr: string; json: Record<string, unknown>[] }> {
  const r = await lab.run(ns, process.execPath, [CLI, ...args], timeoutMs);
  const json = r.stdout.split('\n').flatMap((l) => {
    try {
      return [JSON.parse(l) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
  return { ...r, json };
}
