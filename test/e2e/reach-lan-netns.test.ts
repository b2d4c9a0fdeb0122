// LAN discovery across a real (virtual) link: two network namespaces joined by a veth pair,
// 198.18.0.1/24 and 198.18.0.2/24 (the benchmarking range). A listens on all addresses; B,
// with no address pinned, finds it by broadcast on 198.18.0.255 and pings it over path lan.
// Needs root and `ip`; skips saying why otherwise. The namespaces are made and deleted here.
import t from 'tap';
import { execFileSync, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { CLI, initNode, jsonLines } from './cli-harness.js';

const suffix = `${process.pid % 100000}`;
const nsA = `cplanA${suffix}`;
const nsB = `cplanB${suffix}`;

function why(): string | false {
  if (process.platform !== 'linux') return 'network namespaces are Linux only';
  if (process.getuid?.() !== 0) return 'needs root to make network namespaces';
  try {
    execFileSync('ip', ['-V'], { stdio: 'ignore' });
  } catch {
    return 'needs iproute2 (`ip`)';
  }
  return false;
}

const ip = (...args: string[]): void => void execFileSync('ip', args, { stdio: 'pipe' });
const inNs = (ns: string, ...args: string[]): string[] => ['netns', 'exec', ns, ...args];

function run(
  ns: string,
  args: readonly string[],
  timeoutMs = 20_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('ip', inNs(ns, process.execPath, CLI, ...args), { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${args.join(' ')} timed out; stderr: ${stderr}`));
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const skip = why();
if (skip !== false) {
  t.comment(`skipped: ${skip}`);
  t.pass(`skipped: ${skip}`);
} else {
  t.test('a peer with no address is found across a veth link by broadcast', async (t) => {
    t.teardown(() => {
      for (const ns of [nsA, nsB]) {
        try {
          ip('netns', 'del', ns);
        } catch {
          // already gone
        }
      }
    });
    ip('netns', 'add', nsA);
    ip('netns', 'add', nsB);
    ip('link', 'add', `va${suffix}`, 'netns', nsA, 'type', 'veth', 'peer', 'name', `vb${suffix}`, 'netns', nsB);
    ip(...inNs(nsA, 'ip', 'addr', 'add', '198.18.0.1/24', 'brd', '198.18.0.255', 'dev', `va${suffix}`));
    ip(...inNs(nsB, 'ip', 'addr', 'add', '198.18.0.2/24', 'brd', '198.18.0.255', 'dev', `vb${suffix}`));
    for (const [ns, dev] of [
      [nsA, `va${suffix}`],
      [nsB, `vb${suffix}`],
    ] as const) {
      ip(...inNs(ns, 'ip', 'link', 'set', dev, 'up'));
      ip(...inNs(ns, 'ip', 'link', 'set', 'lo', 'up'));
    }
    const a = await initNode('ns-a');
    const b = await initNode('ns-b');
    await run(nsA, ['--home', a.home, 'pair', 'add', b.id, '--name', 'bob']);
    await run(nsB, ['--home', b.home, 'pair', 'add', a.id, '--name', 'alice']);
    const listener = spawn(
      'ip',
      inNs(nsA, process.execPath, CLI, '--home', a.home, 'listen', '--host', '0.0.0.0', '--port', '7700', '--json'),
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    t.teardown(() => listener.kill('SIGKILL'));
    await new Promise<void>((resolve, reject) => {
      createInterface({ input: listener.stdout }).once('line', () => resolve());
      listener.once('close', (code) => reject(new Error(`listener exited ${String(code)}`)));
    });
    const r = await run(nsB, ['--home', b.home, 'ping', 'alice', '--count', '1', '--json']);
    t.equal(r.code, 0, r.stderr);
    t.match(
      jsonLines(r.stdout).find((l) => l['event'] === 'pong'),
      { path: 'lan' },
    );
    t.match(
      jsonLines(r.stdout).find((l) => l['event'] === 'summary'),
      { path: 'lan' },
    );
  });
}
