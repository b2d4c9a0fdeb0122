// `clawpeer send` left running for a test of `receive` (send-receive.test.ts, receive-offer.test.ts):
// its first --json line (the code), then how it ended.
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { CLI } from './cli-harness.js';

export interface Sending {
  readonly child: ChildProcess;
  readonly first: Promise<Record<string, unknown>>;
  readonly end: Promise<{ code: number | null; lines: Record<string, unknown>[]; stderr: string }>;
}

/** `send --json` with `args`, killed at the test's end if still running. */
export function sending(args: readonly string[]): Sending {
  const child = spawn(process.execPath, [CLI, ...args, '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => child.kill('SIGKILL'));
  const lines: Record<string, unknown>[] = [];
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const rl = createInterface({ input: child.stdout });
  const first = new Promise<Record<string, unknown>>((resolve, reject) => {
    rl.on('line', (line) => {
      lines.push(JSON.parse(line) as Record<string, unknown>);
      if (lines.length === 1) resolve(lines[0]!);
    });
    child.once('close', () => reject(new Error(`send ended before printing a code: ${stderr}`)));
  });
  const end = new Promise<{ code: number | null; lines: Record<string, unknown>[]; stderr: string }>((resolve) =>
    child.once('close', (code) => resolve({ code, lines, stderr })),
  );
  return { child, first, end };
}
