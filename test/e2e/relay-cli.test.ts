// `clawpeer relay` through the real CLI, as a user runs it: a UDP echo behind the relay, a client
// socket in front, datagrams through with rtt=20ms, then SIGINT/SIGTERM and a clean exit with
// final statistics. Usage errors name the bad flag.
import { spawn, type ChildProcess } from 'node:child_process';
import dgram from 'node:dgram';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import t from 'tap';
import { startUdpEcho, type UdpEcho } from '../../src/relay/accuracy.js';
import { CLI, jsonLines, runCli } from './cli-harness.js';

/** startUdpEcho answers datagrams whose first byte is its "echo" kind (1) and that are >= 6 bytes. */
const ECHO_KIND = 1;
const DATAGRAMS = 5;
const READY_TIMEOUT_MS = 15_000;

interface RunningRelay {
  readonly child: ChildProcess;
  /** The first stdout line. */
  readonly ready: string;
  /** Stdout lines after the ready line, so far. */
  lines(): string[];
  stderr(): string;
  /** Sends `signal`, resolves with the exit code once stdout is drained. */
  stop(signal: NodeJS.Signals): Promise<number | null>;
}

function startRelayCli(args: readonly string[]): Promise<RunningRelay> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'relay', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    const lines: string[] = [];
    let ready: string | undefined;
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const closed = new Promise<number | null>((res) => child.on('close', (code) => res(code)));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`relay not ready in ${READY_TIMEOUT_MS} ms; stderr: ${stderr}`));
    }, READY_TIMEOUT_MS);
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (ready !== undefined) {
        lines.push(line);
        return;
      }
      ready = line;
      clearTimeout(timer);
      resolve({
        child,
        ready: line,
        lines: () => lines,
        stderr: () => stderr,
        stop: (signal) => {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal);
          return closed;
        },
      });
    });
    void closed.then((code) => {
      clearTimeout(timer);
      if (ready === undefined)
        reject(new Error(`relay exited ${String(code)} before its ready line; stderr: ${stderr}`));
    });
  });
}

/** Sends `count` echo datagrams to `port` and waits for all of them to come back (or `timeoutMs`). */
async function echoThrough(
  port: number,
  count: number,
  timeoutMs = 10_000,
): Promise<{ replies: Buffer[]; sent: Buffer[]; elapsedMs: number }> {
  const socket = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const replies: Buffer[] = [];
  const sent: Buffer[] = [];
  const t0 = performance.now();
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${replies.length} of ${count} datagrams came back within ${timeoutMs} ms`)),
        timeoutMs,
      );
      socket.on('message', (msg) => {
        replies.push(msg);
        if (replies.length === count) {
          clearTimeout(timer);
          resolve();
        }
      });
      for (let i = 0; i < count; i++) {
        const d = Buffer.alloc(32, 0x40 + i);
        d[0] = ECHO_KIND;
        d[1] = 0;
        d.writeUInt32BE(i, 2);
        sent.push(d);
        socket.send(d, port, '127.0.0.1');
      }
    });
  } finally {
    socket.close();
  }
  return { replies, sent, elapsedMs: performance.now() - t0 };
}

let echo: UdpEcho;
t.before(async () => {
  echo = await startUdpEcho('127.0.0.1');
});
t.teardown(() => echo.close());

t.test('--json: datagrams go through with rtt=20ms, SIGINT prints final stats and exits 0', async (t) => {
  const relay = await startRelayCli([
    '--listen',
    '127.0.0.1:0',
    '--to',
    `127.0.0.1:${echo.address.port}`,
    '--impair',
    'rtt=20ms',
    '--json',
  ]);
  t.teardown(() => relay.stop('SIGKILL'));
  const ready = JSON.parse(relay.ready) as Record<string, unknown>;
  t.match(ready, {
    event: 'relaying',
    protocol: 'udp',
    host: '127.0.0.1',
    to: `127.0.0.1:${echo.address.port}`,
    spec: 'rtt=20ms',
    seed: 1,
  });
  const port = Number(ready['port']);
  t.ok(port > 0, 'port 0 picked a real port');

  const { replies, sent, elapsedMs } = await echoThrough(port, DATAGRAMS);
  const byContent = (a: Buffer, b: Buffer): number => Buffer.compare(a, b);
  t.same(
    replies.map((b) => b.toString('hex')).sort(),
    [...sent].sort(byContent).map((b) => b.toString('hex')),
    'every datagram came back unchanged',
  );
  // A lower bound only (load can only add delay): the relay adds 10 ms each way, released at most ~1 ms early.
  t.ok(elapsedMs >= 15, `the round trip took the added delay (${elapsedMs.toFixed(1)} ms >= 15 ms)`);

  t.equal(await relay.stop('SIGINT'), 0, `exit 0; stderr: ${relay.stderr()}`);
  const events = jsonLines(relay.lines().join('\n'));
  t.equal(events.length, 1, 'one line after the ready line');
  const stopped = events[0] ?? {};
  t.match(stopped, { event: 'stopped', protocol: 'udp', stats: { spec: 'rtt=20ms', flowsOpened: 1 } });
  t.match(stopped['stats'], {
    counters: {
      toServer: { received: DATAGRAMS, forwarded: DATAGRAMS, droppedLoss: 0 },
      toClient: { received: DATAGRAMS, forwarded: DATAGRAMS, droppedLoss: 0 },
    },
  });
});

t.test(
  'human output: the ready line names both addresses and the canonical spec; SIGTERM exits 0 with stats',
  async (t) => {
    const relay = await startRelayCli([
      '--listen',
      '127.0.0.1:0',
      '--to',
      `127.0.0.1:${echo.address.port}`,
      '--impair',
      'RTT=0.02s, loss=0%',
      '--seed',
      '7',
    ]);
    t.teardown(() => relay.stop('SIGKILL'));
    const m = /^relaying 127\.0\.0\.1:(\d+) -> 127\.0\.0\.1:(\d+) with rtt=20ms$/.exec(relay.ready);
    t.ok(m !== null, `ready line: ${relay.ready}`);
    t.equal(Number(m?.[2]), echo.address.port);
    const { replies } = await echoThrough(Number(m?.[1]), 2);
    t.equal(replies.length, 2);
    t.equal(await relay.stop('SIGTERM'), 0, `exit 0; stderr: ${relay.stderr()}`);
    const out = relay.lines().join('\n');
    t.match(out, /^stopped relaying 127\.0\.0\.1:\d+ -> 127\.0\.0\.1:\d+ \(rtt=20ms\)$/m);
    t.match(out, /^to target: 2 received, 2 forwarded, 0 lost/m);
    t.match(out, /^to clients: 2 received, 2 forwarded, 0 lost/m);
  },
);

t.test('--tcp relays a TCP byte stream both ways and reports connections on SIGINT', async (t) => {
  const server = net.createServer((s) => s.pipe(s));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const serverPort = (server.address() as net.AddressInfo).port;
  const relay = await startRelayCli([
    '--listen',
    '127.0.0.1:0',
    '--to',
    `127.0.0.1:${serverPort}`,
    '--impair',
    'rtt=20ms,rate=10mbit',
    '--tcp',
    '--json',
  ]);
  t.teardown(() => relay.stop('SIGKILL'));
  const ready = JSON.parse(relay.ready) as Record<string, unknown>;
  t.match(ready, {
    event: 'relaying',
    protocol: 'tcp',
    spec: 'rtt=20ms,rate=10mbit',
    limitation: /cannot model packet loss/,
  });
  const payload = Buffer.alloc(64 * 1024, 0x5a);
  const echoed = await new Promise<Buffer>((resolve, reject) => {
    const socket = net.connect(Number(ready['port']), '127.0.0.1');
    const got: Buffer[] = [];
    let bytes = 0;
    socket.on('data', (d: Buffer) => {
      got.push(d);
      bytes += d.length;
      if (bytes >= payload.length) {
        socket.end();
        resolve(Buffer.concat(got));
      }
    });
    socket.on('error', reject);
    socket.write(payload);
  });
  t.ok(echoed.equals(payload), '64 KiB came back unchanged');
  t.equal(await relay.stop('SIGINT'), 0, `exit 0; stderr: ${relay.stderr()}`);
  t.match(jsonLines(relay.lines().join('\n')).at(-1), {
    event: 'stopped',
    protocol: 'tcp',
    stats: { connectionsAccepted: 1, connectFailures: 0 },
  });
});

t.test('usage errors name the bad flag and exit 2', async (t) => {
  const to = `127.0.0.1:${echo.address.port}`;
  const cases: [string, string[], RegExp][] = [
    ['bad --to', ['--listen', '127.0.0.1:0', '--to', 'nowhere', '--impair', 'none'], /--to address "nowhere"/],
    ['bad --listen', ['--listen', '127.0.0.1', '--to', to, '--impair', 'none'], /--listen address "127\.0\.0\.1"/],
    [
      'bad --impair',
      ['--listen', '127.0.0.1:0', '--to', to, '--impair', 'rtt=fast'],
      /--impair: impairment spec: rtt=fast/,
    ],
    [
      'loss with --tcp',
      ['--listen', '127.0.0.1:0', '--to', to, '--impair', 'loss=1%', '--tcp'],
      /--impair "loss=1%" with --tcp/,
    ],
    [
      'bad --seed',
      ['--listen', '127.0.0.1:0', '--to', to, '--impair', 'none', '--seed', '-1'],
      /--seed must be an integer/,
    ],
    ['missing --impair', ['--listen', '127.0.0.1:0', '--to', to], /impair/],
  ];
  // In parallel: each is a CLI start (~1 s on a loaded 2-core machine), none binds a port.
  const results = await Promise.all(cases.map(([, args]) => runCli(['relay', ...args, '--json'])));
  for (const [i, [name, , message]] of cases.entries()) {
    const r = results[i];
    if (r === undefined) throw new Error('missing result');
    t.equal(r.code, 2, `${name}: exit 2`);
    t.match(r.stderr, message, `${name}: ${r.stderr.trim()}`);
    t.match(jsonLines(r.stdout).at(-1), { event: 'error', code: 'USAGE' }, `${name}: JSON error record`);
  }
});
