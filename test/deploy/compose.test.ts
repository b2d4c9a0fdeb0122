// The deployment files, checked without a Docker engine (there is none here): the compose file
// parses and wires two paired peers (and the optional impaired link), the Dockerfile's COPY
// sources exist and survive .dockerignore, the scripts parse, the systemd unit is sound, and
// the entrypoint really pairs two nodes through a shared ids directory when run with the CLI.
import t from 'tap';
import { execFile, spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { parseImpairSpec } from '../../src/relay/impair-spec.js';
import { CLI } from '../e2e/cli-harness.js';
import { generateIdentity } from '../../src/crypto/identity.js';
import { createIdentity } from '../../src/home/identity-store.js';
import { PeerStore } from '../../src/home/peer-store.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const read = (rel: string): string => readFileSync(join(ROOT, rel), 'utf8');

type Json = Record<string, unknown>;
const obj = (v: unknown, what: string): Json => {
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new Error(`${what} is not a mapping: ${JSON.stringify(v)}`);
  return v as Json;
};
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : []);

// --- docker-compose.yml -------------------------------------------------------------------------

// strict + uniqueKeys: a duplicated key is an error, as in `docker compose config`; merge: the
// `<<: *node` anchors compose supports.
const compose = obj(
  parseYaml(read('docker-compose.yml'), { merge: true, strict: true, uniqueKeys: true }),
  'compose file',
);
const services = obj(compose['services'], 'services');
const NODES = ['alice', 'bob'] as const;

/** "HOST_IP:HOST:CONTAINER/proto" or "HOST:CONTAINER/proto" -> its parts. */
function parsePort(spec: string): { hostIp?: string; host: string; container: string; protocol: string } {
  const [addr, protocol = 'tcp'] = spec.split('/');
  const parts = (addr ?? '').split(':');
  const container = parts.pop() ?? '';
  const host = parts.pop() ?? '';
  return { ...(parts.length > 0 ? { hostIp: parts.join(':') } : {}), host, container, protocol };
}

t.test('compose: alice and bob are built from the repo Dockerfile', async (t) => {
  t.same(
    Object.keys(services)
      .filter((s) => (NODES as readonly string[]).includes(s))
      .sort(),
    ['alice', 'bob'],
  );
  for (const name of NODES) {
    const svc = obj(services[name], name);
    const build = obj(svc['build'], `${name}.build`);
    t.equal(build['context'], '.', `${name} builds from the repo root`);
    t.ok(
      existsSync(join(ROOT, typeof build['dockerfile'] === 'string' ? build['dockerfile'] : 'Dockerfile')),
      `${name}'s Dockerfile exists`,
    );
    t.equal(svc['init'], true, `${name} runs under an init that forwards signals and reaps children`);
  }
});

t.test('compose: each node has its own data volume and shares the ids volume', async (t) => {
  const declared = Object.keys(obj(compose['volumes'], 'volumes'));
  const dataVolumes = new Set<string>();
  for (const name of NODES) {
    const svc = obj(services[name], name);
    const mounts = strings(svc['volumes']).map((v) => v.split(':'));
    const data = mounts.find((m) => m[1] === '/data');
    t.ok(data !== undefined, `${name} mounts a volume at /data (CLAWPEER_HOME)`);
    t.ok(declared.includes(data?.[0] ?? ''), `${name}'s data volume is a declared named volume`);
    dataVolumes.add(data?.[0] ?? '');
    t.ok(
      mounts.some((m) => m[0] === 'ids' && m[1] === '/ids'),
      `${name} mounts the shared ids volume`,
    );
  }
  t.equal(dataVolumes.size, NODES.length, 'no two nodes share a CLAWPEER_HOME');
  t.ok(declared.includes('ids'));
});

t.test('compose: each node publishes 7700 over UDP (QUIC) and TCP (fallback), host ports distinct', async (t) => {
  const hostPorts: string[] = [];
  for (const name of NODES) {
    const ports = strings(obj(services[name], name)['ports']).map(parsePort);
    for (const protocol of ['udp', 'tcp']) {
      const p = ports.find((x) => x.container === '7700' && x.protocol === protocol);
      t.ok(p !== undefined, `${name} publishes 7700/${protocol}`);
      if (p !== undefined) hostPorts.push(`${p.hostIp ?? ''}:${p.host}/${protocol}`);
    }
  }
  t.equal(new Set(hostPorts).size, hostPorts.length, `host side of the ports does not clash: ${hostPorts.join(' ')}`);
});

t.test('compose: nodes pair with each other by name on one network, with a health check', async (t) => {
  const networks = NODES.map((n) => strings(obj(services[n], n)['networks']));
  t.ok(
    networks[0]!.length > 0 && networks[0]!.every((net) => networks[1]!.includes(net)),
    'alice and bob share a network',
  );
  for (const name of NODES) {
    const svc = obj(services[name], name);
    const env = obj(svc['environment'], `${name}.environment`);
    t.equal(env['CLAWPEER_NAME'], name, 'the node publishes its id under its service name (the DNS name peers dial)');
    const other = NODES.find((n) => n !== name)!;
    t.same(String(env['CLAWPEER_PEERS']).split(/\s+/), [other], `${name} waits for ${other}'s id`);
    t.match(String(env['CLAWPEER_PAIR_WAIT_S']), /^\d+$/, 'the wait for the peer id is bounded');
    const test = strings(obj(svc['healthcheck'], `${name}.healthcheck`)['test']);
    t.equal(test[0], 'CMD', 'exec form, no shell needed');
    t.same(test.slice(1, 3), ['clawpeer', 'doctor']);
    t.ok(
      test.includes('--expect-listener') && test.includes('--no-peers'),
      'health = our own listener holds the port; peers being down is not our health',
    );
  }
});

t.test('compose: the impaired profile relays to bob through a simulated WAN', async (t) => {
  const relay = Object.entries(services).find(([, s]) => strings(obj(s, 'service')['profiles']).includes('impaired'));
  t.ok(relay !== undefined, 'a service in profile "impaired"');
  if (relay === undefined) return;
  const [name, svcRaw] = relay;
  const svc = obj(svcRaw, name);
  t.notOk(strings(obj(services['alice'], 'alice')['profiles']).length > 0, 'alice and bob run without a profile');
  const cmd = strings(svc['command']);
  t.equal(cmd[0], 'relay');
  const arg = (flag: string): string | undefined => cmd[cmd.indexOf(flag) + 1];
  t.equal(arg('--listen'), '0.0.0.0:7800');
  t.equal(arg('--to'), 'bob:7700', 'forwards to bob by service name');
  const spec = parseImpairSpec(arg('--impair') ?? '');
  t.match(spec, { rttMs: 50, lossPct: 1, rateBitsPerSec: 100e6 }, "the spec parses with the relay's own parser");
  t.ok(strings(svc['depends_on']).includes('bob'), 'bob exists (resolvable) before the relay resolves it');
  t.ok(
    strings(svc['networks']).some((n) => strings(obj(services['alice'], 'alice')['networks']).includes(n)),
    'alice can reach it',
  );
  t.equal(
    obj(svc['healthcheck'], 'relay healthcheck')['disable'],
    true,
    'the node health check does not apply to a relay',
  );
});

// --- Dockerfile and .dockerignore -------------------------------------------------------------

interface Instruction {
  readonly op: string;
  readonly args: string;
}

/** Instructions with continuation lines joined and comments dropped. */
function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('#') || (line === '' && pending === '')) continue;
    pending += (pending === '' ? '' : ' ') + line.replace(/\\$/, '').trim();
    if (line.endsWith('\\')) continue;
    const m = /^(\S+)\s*(.*)$/.exec(pending);
    if (m !== null) out.push({ op: m[1]!.toUpperCase(), args: m[2]! });
    pending = '';
  }
  return out;
}

/** A .dockerignore pattern as a regex over slash-separated context paths (a subset: *, ?, **). */
function ignoreRegex(pattern: string): RegExp {
  /* eslint-disable no-control-regex -- NUL stands in for `*` while the pattern is translated */
  const body = pattern
    .replace(/^\/+/, '')
    .replace(/\/+$/, '')
    .split('')
    .map((c) => (c === '*' ? '\u0000' : c === '?' ? '[^/]' : /[.+^${}()|[\]\\]/.test(c) ? `\\${c}` : c))
    .join('')
    .replace(/\u0000\u0000\//g, '(?:.*/)?')
    .replace(/\u0000\u0000/g, '.*')
    .replace(/\u0000/g, '[^/]*');
  /* eslint-enable no-control-regex */
  return new RegExp(`^${body}(?:/.*)?$`); // a matched directory excludes everything under it
}

const dockerfile = parseDockerfile(read('Dockerfile'));
const ignored = read('.dockerignore')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l !== '' && !l.startsWith('#'));
const isIgnored = (path: string): boolean => ignored.some((p) => !p.startsWith('!') && ignoreRegex(p).test(path));

t.test('dockerignore matcher (the subset used here)', async (t) => {
  t.ok(ignoreRegex('node_modules').test('node_modules/yaml/index.js'));
  t.ok(ignoreRegex('.build-*').test('.build-deploy/x.js'));
  t.notOk(ignoreRegex('.build-*').test('src/.build-x'));
  t.ok(ignoreRegex('**/identity.key').test('identity.key'));
  t.ok(ignoreRegex('**/identity.key').test('a/b/identity.key'));
  t.notOk(ignoreRegex('test').test('src/test.ts'));
});

t.test('Dockerfile: node 20 bookworm, npm install (not ci), build, non-root, ports, entrypoint', async (t) => {
  const ops = dockerfile.map((i) => i.op);
  const froms = dockerfile.filter((i) => i.op === 'FROM').map((i) => i.args.split(/\s+/)[0]);
  t.ok(
    froms.length > 0 && froms.every((f) => f === 'node:20-bookworm-slim'),
    `every stage is node:20-bookworm-slim (${froms.join(', ')})`,
  );
  const runs = dockerfile.filter((i) => i.op === 'RUN').map((i) => i.args);
  t.ok(
    runs.some((r) => /\bnpm install --no-audit --no-fund\b/.test(r)),
    'npm install --no-audit --no-fund',
  );
  t.notOk(
    runs.some((r) => /\bnpm ci\b/.test(r)),
    "no npm ci (see README: it fails on registries missing other platforms' packages)",
  );
  t.ok(
    runs.some((r) => /\bnpm run build\b/.test(r)),
    'npm run build',
  );
  const users = dockerfile.filter((i) => i.op === 'USER').map((i) => i.args.trim());
  t.ok(users.length > 0, 'sets a USER');
  t.notOk(['root', '0', '0:0'].includes(users.at(-1) ?? 'root'), `runs as ${users.at(-1) ?? '?'}, not root`);
  t.ok(
    ops.lastIndexOf('USER') > ops.lastIndexOf('RUN'),
    'no RUN after switching to the unprivileged user relies on root',
  );
  const exposed = dockerfile.filter((i) => i.op === 'EXPOSE').flatMap((i) => i.args.split(/\s+/));
  t.ok(
    exposed.includes('7700/udp') && exposed.includes('7700/tcp'),
    `EXPOSE 7700/udp and 7700/tcp (${exposed.join(' ')})`,
  );
  const env = dockerfile
    .filter((i) => i.op === 'ENV')
    .map((i) => i.args)
    .join(' ');
  t.match(env, /CLAWPEER_HOME=\/data\b/, 'CLAWPEER_HOME is the /data volume');
  t.ok(dockerfile.some((i) => i.op === 'HEALTHCHECK' && /clawpeer.*doctor.*--expect-listener/.test(i.args)));
  const entrypoint = dockerfile.find((i) => i.op === 'ENTRYPOINT');
  const cmd = dockerfile.find((i) => i.op === 'CMD');
  t.same(
    JSON.parse(cmd?.args ?? 'null'),
    ['listen', '--host', '0.0.0.0', '--port', '7700'],
    'default command: listen on all interfaces, port 7700',
  );
  const ep = JSON.parse(entrypoint?.args ?? 'null') as string[];
  t.ok(Array.isArray(ep) && ep.length === 1, 'exec-form ENTRYPOINT (so the process gets signals)');
  // The entrypoint is whatever the script was copied to.
  const copied = dockerfile.find((i) => i.op === 'COPY' && i.args.startsWith('deploy/docker-entrypoint.sh'));
  t.ok(copied !== undefined, 'the entrypoint script is copied into the image');
  const dest = copied?.args.split(/\s+/).at(-1) ?? '';
  t.ok(dest.endsWith(`/${ep[0] ?? ''}`) || dest === ep[0], `ENTRYPOINT ${ep[0] ?? ''} is the copied script (${dest})`);
});

t.test('Dockerfile: every COPY source from the context exists and is not excluded by .dockerignore', async (t) => {
  const copies = dockerfile.filter((i) => i.op === 'COPY' || i.op === 'ADD');
  let checked = 0;
  for (const c of copies) {
    const words = c.args.split(/\s+/);
    if (words.some((w) => w.startsWith('--from='))) continue; // from another stage
    const operands = words.filter((w) => !w.startsWith('--'));
    for (const src of operands.slice(0, -1)) {
      checked++;
      const path = src.replace(/^\.\//, '').replace(/\/$/, '');
      t.ok(existsSync(join(ROOT, path)), `COPY source ${src} exists`);
      t.notOk(isIgnored(path), `COPY source ${src} is not excluded by .dockerignore`);
    }
  }
  t.ok(checked >= 5, `checked ${checked} sources`);
  for (const secret of ['identity.key', 'home/identity.key', 'node_modules', '.git', 'dist'])
    t.ok(isIgnored(secret), `${secret} stays out of the build context`);
});

t.test('Dockerfile: the build stage copies every file `npm run build` needs before it runs it', async (t) => {
  const build = String(obj(obj(JSON.parse(read('package.json')), 'package.json')['scripts'], 'scripts')['build']);
  // The files the build script names (`node scripts/x.mjs`, `tsc -p tsconfig.json`).
  const needed = [...build.matchAll(/(?:^|\s)((?:[\w.-]+\/)*[\w.-]+\.(?:mjs|cjs|js|json))(?=\s|$)/g)].map((m) => m[1]!);
  t.ok(
    needed.includes('tsconfig.json') && needed.some((f) => f.startsWith('scripts/')),
    `the build names its files (${needed.join(', ')})`,
  );
  const stage = dockerfile.slice(
    0,
    dockerfile.findIndex((i, n) => i.op === 'FROM' && n > 0),
  );
  const runAt = stage.findIndex((i) => i.op === 'RUN' && /\bnpm run build\b/.test(i.args));
  t.ok(runAt > 0, 'the first stage runs npm run build');
  const copiedBefore = stage
    .slice(0, runAt)
    .filter((i) => i.op === 'COPY')
    .flatMap((i) => {
      const operands = i.args.split(/\s+/).filter((w) => !w.startsWith('--'));
      return operands.slice(0, -1).map((src) => src.replace(/^\.\//, '').replace(/\/$/, ''));
    });
  for (const file of needed) {
    t.ok(
      copiedBefore.some((src) => file === src || file.startsWith(`${src}/`)),
      `${file} is copied into the build stage before npm run build`,
    );
  }
});

// --- scripts ----------------------------------------------------------------------------------

t.test('entrypoint script: exists, executable, bash syntax', async (t) => {
  const file = join(ROOT, 'deploy/docker-entrypoint.sh');
  const info = await stat(file);
  t.ok((info.mode & 0o111) === 0o111, `executable by everyone (mode ${(info.mode & 0o777).toString(8)})`);
  t.match(read('deploy/docker-entrypoint.sh').split('\n')[0], /^#!\/usr\/bin\/env bash$|^#!\/bin\/bash$/);
  await t.resolves(run('bash', ['-n', file]), 'bash -n');
});

t.test('every deploy shell script parses', async (t) => {
  const scripts = (await readdir(join(ROOT, 'deploy'))).filter((f) => f.endsWith('.sh'));
  t.ok(scripts.length > 0);
  for (const s of scripts) {
    const shell = /^#!.*\bbash\b/.test(read(`deploy/${s}`)) ? 'bash' : 'sh';
    await t.resolves(run(shell, ['-n', join(ROOT, 'deploy', s)]), `${shell} -n ${s}`);
  }
});

// --- systemd unit -----------------------------------------------------------------------------

/** systemd's INI dialect: [Section], Key=Value (repeatable), # and ; comments, \ continuations. */
function parseUnit(text: string): Map<string, Map<string, string[]>> {
  const sections = new Map<string, Map<string, string[]>>();
  let current: Map<string, string[]> | undefined;
  const lines = text.replace(/\\\n/g, ' ').split('\n');
  lines.forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) return;
    const section = /^\[([A-Za-z]+)\]$/.exec(line);
    if (section !== null) {
      current = new Map();
      sections.set(section[1]!, current);
      return;
    }
    const kv = /^([A-Za-z][A-Za-z0-9]*)=(.*)$/.exec(line);
    if (kv === null || current === undefined)
      throw new Error(`line ${i + 1} is not Key=Value inside a section: ${JSON.stringify(line)}`);
    const values = current.get(kv[1]!) ?? [];
    values.push(kv[2]!.trim());
    current.set(kv[1]!, values);
  });
  return sections;
}

t.test('systemd unit: parses, runs clawpeer listen hardened, stops gracefully', async (t) => {
  const unit = parseUnit(read('deploy/clawpeer.service'));
  t.same([...unit.keys()], ['Unit', 'Service', 'Install']);
  const svc = unit.get('Service')!;
  const one = (k: string): string | undefined => svc.get(k)?.at(-1);
  t.match(one('ExecStart'), /^\/usr\/bin\/env clawpeer listen\b.*--port 7700\b/);
  t.equal(one('User'), 'clawpeer');
  const home = /^CLAWPEER_HOME=(\S+)$/.exec(
    svc.get('Environment')?.find((e) => e.startsWith('CLAWPEER_HOME=')) ?? '',
  )?.[1];
  t.equal(home, '/var/lib/clawpeer');
  t.ok(
    (one('ReadWritePaths') ?? '').split(/\s+/).includes(home ?? '?'),
    'the home is writable under ProtectSystem=strict',
  );
  t.equal(one('ProtectSystem'), 'strict');
  t.equal(one('NoNewPrivileges'), 'yes');
  t.equal(one('AmbientCapabilities'), '', 'no ambient capabilities');
  t.equal(one('CapabilityBoundingSet'), '', 'no capabilities at all');
  t.equal(one('Restart'), 'on-failure');
  t.equal(one('KillSignal'), 'SIGINT', 'clawpeer shuts down gracefully on SIGINT');
  t.equal(one('TimeoutStopSec'), '10');
  t.equal(unit.get('Install')?.get('WantedBy')?.[0], 'multi-user.target');
});

const hasAnalyze = await run('systemd-analyze', ['--version']).then(
  () => true,
  () => false,
);
t.test(
  'systemd unit: systemd-analyze verify accepts it',
  { skip: hasAnalyze ? false : 'systemd-analyze not installed' },
  async (t) => {
    // verify wants the file name to be the unit name.
    const dir = await mkdtemp(join(tmpdir(), 'clawpeer-unit-'));
    const file = join(dir, 'clawpeer.service');
    await writeFile(file, read('deploy/clawpeer.service'));
    const r = await run('systemd-analyze', ['verify', file]).then(
      (ok) => ({ ok: true, out: ok.stderr }),
      (err: unknown) => ({ ok: false, out: (err as { stderr?: string }).stderr ?? '' }),
    );
    t.ok(r.ok, r.out);
    t.notMatch(r.out, /clawpeer\.service:\d+/, `no warnings about lines of the unit: ${r.out}`);
  },
);

// --- the entrypoint, run for real (no Docker: the same script with the CLI on PATH) -----------

interface EntrypointRun {
  readonly ready: Json;
  stderr(): string;
  /** SIGTERM (graceful: the listener's shutdown grace applies) or SIGKILL to the whole group. */
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<number | null>;
}

/** Generous: the entrypoint runs the CLI 4-5 times before listening, on a possibly busy machine. */
const ENTRYPOINT_READY_TIMEOUT_MS = 60_000;

async function startEntrypoint(bin: string, env: Record<string, string>): Promise<EntrypointRun> {
  // detached: its own process group, so a stuck run is killed with whatever it started.
  const child = spawn(
    join(ROOT, 'deploy/docker-entrypoint.sh'),
    ['listen', '--host', '127.0.0.1', '--port', '0', '--json'],
    {
      env: { ...process.env, PATH: `${bin}:${process.env['PATH'] ?? ''}`, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  );
  const killGroup = (signal: NodeJS.Signals): void => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, signal);
    } catch {
      // already gone
    }
  };
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((res) => child.on('close', (code) => res(code)));
  const ready = await new Promise<Json>((resolve, reject) => {
    const timer = setTimeout(() => {
      killGroup('SIGKILL');
      reject(new Error(`entrypoint not listening in ${ENTRYPOINT_READY_TIMEOUT_MS} ms; stderr: ${stderr}`));
    }, ENTRYPOINT_READY_TIMEOUT_MS);
    createInterface({ input: child.stdout }).once('line', (line) => {
      clearTimeout(timer);
      resolve(JSON.parse(line) as Json);
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`entrypoint exited ${String(code)} before listening; stderr: ${stderr}`));
    });
  });
  return {
    ready,
    stderr: () => stderr,
    stop: async (signal = 'SIGKILL') => {
      if (child.exitCode === null && child.signalCode === null) {
        if (signal === 'SIGKILL') killGroup('SIGKILL');
        else child.kill(signal);
      }
      const timer = setTimeout(() => killGroup('SIGKILL'), 10_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** A `clawpeer` on PATH, as in the image (there a symlink to bin/clawpeer.cjs). */
async function cliOnPath(dir: string): Promise<string> {
  const bin = join(dir, 'bin');
  await mkdir(bin);
  await writeFile(
    join(bin, 'clawpeer'),
    `#!/bin/sh
exec "${process.execPath}" "${CLI}" "$@"
`,
  );
  await chmod(join(bin, 'clawpeer'), 0o755);
  return bin;
}

async function waitForFile(file: string, timeoutMs: number): Promise<void> {
  for (let waitedMs = 0; !existsSync(file); waitedMs += 50) {
    if (waitedMs > timeoutMs) throw new Error(`${file} did not appear in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

t.test(
  'entrypoint: creates a key on first start, keeps it after, publishes ids, pairs both ways, execs the listener',
  async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'clawpeer-entrypoint-'));
    const bin = await cliOnPath(dir);
    const ids = join(dir, 'ids');
    await mkdir(ids);
    const env = (name: string, peer: string): Record<string, string> => ({
      CLAWPEER_HOME: join(dir, name),
      CLAWPEER_IDS_DIR: ids,
      CLAWPEER_NAME: name,
      CLAWPEER_PEERS: peer,
      CLAWPEER_PAIR_WAIT_S: '30',
      CLAWPEER_PORT: '7700',
    });
    // alice is a restart: her volume already holds a key, and a pin of "bob" from before bob's
    // volume was recreated (so bob now has a new id under the same name). bob is a first start.
    const aliceKey = await createIdentity(join(dir, 'alice', 'identity.key'));
    const staleBobId = generateIdentity().nodeId;
    await new PeerStore(join(dir, 'alice', 'peers.json')).add(staleBobId, 'bob', 'bob:7700');

    // alice has to wait for bob's id; bob, started once alice published hers, finds it at once.
    const alice = startEntrypoint(bin, env('alice', 'bob'));
    alice.catch(() => undefined); // awaited below; do not let an early failure go unhandled
    await waitForFile(join(ids, 'alice.id'), ENTRYPOINT_READY_TIMEOUT_MS);
    const bob = await startEntrypoint(bin, env('bob', 'alice'));
    const a = await alice;
    t.teardown(async () => {
      await a.stop();
      await bob.stop();
    });
    const bobId = String(bob.ready['id']);
    t.equal(a.ready['id'], aliceKey.nodeId, 'a restart keeps the key in the volume');
    t.match(bobId, /^12D3KooW/);
    t.not(bobId, staleBobId);
    t.equal((await stat(join(dir, 'bob', 'identity.key'))).mode & 0o777, 0o600, 'the key made on first start is 0600');
    t.equal((await readFile(join(ids, 'alice.id'), 'utf8')).trim(), aliceKey.nodeId, 'alice published her id');
    t.equal((await readFile(join(ids, 'bob.id'), 'utf8')).trim(), bobId, 'bob published his');
    t.match(await new PeerStore(join(dir, 'alice', 'peers.json')).list(), [
      { id: bobId, name: 'bob', addr: 'bob:7700' },
    ]);
    t.match(await new PeerStore(join(dir, 'bob', 'peers.json')).list(), [
      { id: aliceKey.nodeId, name: 'alice', addr: 'alice:7700' },
    ]);
    t.match(a.stderr(), /waiting for the id of: bob/);
    t.match(a.stderr(), new RegExp(`re-paired with bob: its id changed to ${bobId}`), 'the stale pin was replaced');
    t.notMatch(a.stderr() + bob.stderr(), /PRIVATE KEY/, 'the key never reaches the logs');
    // exec: the signal reaches clawpeer itself, which stops cleanly.
    t.equal(await a.stop('SIGTERM'), 0, 'SIGTERM stops the listener with exit 0');
  },
);

t.test('entrypoint: other commands pass straight to clawpeer; the wait for peers is bounded', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-entrypoint-'));
  const bin = await cliOnPath(dir);
  const base = {
    ...process.env,
    PATH: `${bin}:${process.env['PATH'] ?? ''}`,
    CLAWPEER_HOME: join(dir, 'home'),
    CLAWPEER_IDS_DIR: join(dir, 'ids'),
  };
  const version = await run(join(ROOT, 'deploy/docker-entrypoint.sh'), ['--version'], { env: base });
  t.match(version.stdout, /^\d+\.\d+\.\d+/, 'arguments other than listen reach clawpeer unchanged');
  t.notOk(existsSync(join(dir, 'home', 'identity.key')), 'and create no identity');
  const bad = await run(join(ROOT, 'deploy/docker-entrypoint.sh'), ['listen'], {
    env: { ...base, CLAWPEER_NAME: 'no/slash' },
  }).then(
    () => 0,
    (err: unknown) => (err as { code?: number }).code ?? -1,
  );
  t.equal(bad, 2, 'an unusable CLAWPEER_NAME is refused (exit 2) before anything is created');
  t.notOk(existsSync(join(dir, 'home', 'identity.key')));
  await mkdir(join(dir, 'ids'));
  await createIdentity(join(dir, 'home', 'identity.key'));
  const gaveUp = await startEntrypoint(bin, {
    CLAWPEER_HOME: join(dir, 'home'),
    CLAWPEER_IDS_DIR: join(dir, 'ids'),
    CLAWPEER_NAME: 'carol',
    CLAWPEER_PEERS: 'nobody',
    CLAWPEER_PAIR_WAIT_S: '1',
  });
  t.teardown(() => gaveUp.stop());
  t.match(
    gaveUp.stderr(),
    /gave up after 1s waiting for: nobody/,
    'listens after the bounded wait even though the peer never showed up',
  );
});

t.test('compose and systemd: a rendezvous server, on UDP P and P+1, with its caps', async (t) => {
  const svc = obj(services['rendezvous'], 'rendezvous');
  t.same(strings(svc['profiles']), ['rendezvous'], 'only when asked for');
  const cmd = strings(svc['command']);
  t.equal(cmd[0], 'rendezvous');
  t.equal(cmd[cmd.indexOf('--listen') + 1], '0.0.0.0:7800');
  t.same(
    strings(svc['ports'])
      .map(parsePort)
      .map((p) => `${p.host}:${p.container}/${p.protocol}`),
    ['7800:7800/udp', '7801:7801/udp'],
    'both UDP ports published',
  );
  const unit = parseUnit(read('deploy/clawpeer-rendezvous.service'));
  const exec = unit.get('Service')?.get('ExecStart')?.at(-1) ?? '';
  t.match(exec, /^\/usr\/bin\/env clawpeer rendezvous --listen 0\.0\.0\.0:7800\b/);
  for (const flag of ['--relay-rate', '--relay-peers', '--requests-per-ip'])
    t.match(exec, flag, `the unit sets ${flag}`);
  t.equal(unit.get('Service')?.get('CapabilityBoundingSet')?.at(-1), '', 'no capabilities');
});
