// A listener serves its shared folders from the first session it accepts. It bound its port
// first and started the folder service after, so a peer's sync of a folder right after a start
// (a peer whose listener retried it at once) got SHARE_UNKNOWN while the service still read
// config.json; now the folders' shares are in place before the listener accepts anything.
//
// Deterministic: A's config.json is a FIFO, so A's folder service blocks reading it until the
// test writes it. While it blocks, A's port must not be bound yet; then a sync of the folder
// from B right after the start works.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { constants } from 'node:fs';
import { mkdir, open, readFile, rename, writeFile, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { resolveConfig } from '../../src/home/config.js';
import { DEFAULT_REACH_CONFIG } from '../../src/home/config-file.js';
import { resolveHome } from '../../src/home/home.js';
import { startHomeListener } from '../../src/listener/home-listener.js';
import { silentLogger } from '../../src/logger.js';
import { initNode, pairAdd, runCli, tempHome } from './cli-harness.js';

/** Binds UDP 127.0.0.1:`port` for a moment: false when something holds it. */
async function udpFree(port: number): Promise<boolean> {
  const s = createSocket('udp4');
  const free = await new Promise<boolean>((resolve) => {
    s.once('error', () => resolve(false));
    s.bind(port, '127.0.0.1', () => resolve(true));
  });
  if (free) await new Promise<void>((resolve) => s.close(() => resolve()));
  return free;
}

async function freeUdpPort(): Promise<number> {
  const s = createSocket('udp4');
  const port = await new Promise<number>((resolve) => s.bind(0, '127.0.0.1', () => resolve(s.address().port)));
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** Opens the FIFO's write end once a reader has it open (before that, ENXIO). */
async function writerOnceRead(fifo: string): Promise<FileHandle> {
  const started = Date.now();
  for (;;) {
    try {
      return await open(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENXIO' || Date.now() - started > 20_000) throw err;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}

t.test("a peer's sync of a folder right after the listener starts finds its share", async (t) => {
  const a = await initNode('start-a');
  const b = await initNode('start-b');
  const work = await tempHome('start-dirs');
  const dirA = path.join(work, 'a');
  const dirB = path.join(work, 'b');
  await mkdir(dirA);
  await mkdir(dirB);
  await writeFile(path.join(dirA, 'hello.txt'), 'hello\n');
  const port = await freeUdpPort();
  await pairAdd(a.home, b.id, 'b');
  await pairAdd(b.home, a.id, 'a', `127.0.0.1:${port}`);
  await writeFile(path.join(b.home, 'config.json'), JSON.stringify({ lanDiscovery: false }));
  const config = JSON.stringify({
    lanDiscovery: false,
    folders: [{ id: 'docs', path: dirA, with: ['b'] }],
  });
  const configFile = path.join(a.home, 'config.json');
  execFileSync('mkfifo', [configFile]);

  const stop = new AbortController();
  const starting = startHomeListener({
    home: resolveHome(a.home),
    reach: () => Promise.resolve({ ...DEFAULT_REACH_CONFIG, lanDiscovery: false }),
    config: resolveConfig({ transport: 'quic' }),
    host: '127.0.0.1',
    port,
    shares: [],
    allow: [],
    init: false,
    log: silentLogger,
    signal: stop.signal,
  });
  starting.catch(() => undefined); // awaited below
  const listener = await (async () => {
    const fifo = await writerOnceRead(configFile); // the folder service reads config.json now
    try {
      const accepting = !(await udpFree(port));
      t.notOk(accepting, 'nothing is accepted while the folder service has not read its folders');
      if (accepting) {
        const early = await runCli(['--home', b.home, 'sync', dirB, 'a:docs']);
        t.notMatch(early.stderr, /no share named/, `a sync then: exit ${early.code}; ${early.stderr}`);
      }
      await fifo.write(config);
    } finally {
      await fifo.close();
    }
    // What the service reads from now on (it follows the file) is a plain file of the same folders.
    await writeFile(`${configFile}.new`, config);
    await rename(`${configFile}.new`, configFile);
    return starting;
  })();
  t.teardown(async () => {
    stop.abort();
    await listener.close();
  });

  const sync = await runCli(['--home', b.home, 'sync', dirB, 'a:docs']);
  t.equal(sync.code, 0, `the first sync after the start works; stderr: ${sync.stderr}`);
  t.equal(await readFile(path.join(dirB, 'hello.txt'), 'utf8').catch(() => ''), 'hello\n', 'the folder arrived');
});
