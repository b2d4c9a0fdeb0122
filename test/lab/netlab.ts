// A NAT lab in network namespaces, built and torn down by the test that uses it: a public
// segment (a bridge in the "pub" namespace, 203.0.113.1/24) and homes, each behind a NAT of
// one kind (or, kind `none`, on the public segment itself). Root only; every address is from
// the documentation and benchmarking ranges, so no packet can reach a real network. Layout,
// addresses and the kinds: test/lab/README.md.
import { execFile, execFileSync, spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * `none`: a public address; `eim`: endpoint-independent mapping and filtering (full cone);
 * `port-restricted`: Linux's default masquerade (mapping kept per source port, filtering by
 * remote address and port); `symmetric`: `masquerade random`, a new port per remote endpoint;
 * `upnp`: port-restricted plus miniupnpd (UPnP-IGD, NAT-PMP) on the NAT.
 */
export type NatKind = 'none' | 'eim' | 'port-restricted' | 'symmetric' | 'upnp';
export const NAT_KINDS: readonly NatKind[] = ['none', 'eim', 'port-restricted', 'symmetric', 'upnp'];

export const PUBLIC_NET = '203.0.113';
export const PUBLIC_ADDRESS = `${PUBLIC_NET}.1`;
/** The port the reflector's STUN answers on, for miniupnpd's own external-address check. */
export const STUN_PORT = 3478;
/** Each home's LAN, by index: documentation and benchmarking ranges only. */
const HOME_NETS = ['198.18.1', '198.51.100', '192.0.2', '198.18.2', '198.18.3'];

export interface LabHost {
  readonly ns: string;
  readonly address: string;
}

export interface LabHome {
  readonly kind: NatKind;
  readonly hosts: readonly LabHost[];
  /** The NAT namespace and its addresses; absent for kind `none`. */
  readonly nat?: { readonly ns: string; readonly outside: string; readonly inside: string };
  /** The address the public segment sees this home's packets from. */
  readonly publicAddress: string;
}

export interface Lab {
  readonly name: string;
  readonly pub: LabHost;
  readonly homes: readonly LabHome[];
  /** Starts a process in a namespace; the lab kills it (SIGKILL) on close if it still runs. */
  spawnIn(ns: string, command: string, args: readonly string[], options?: SpawnOptions): ChildProcess;
  /** Runs a command in a namespace to its end. */
  run(
    ns: string,
    command: string,
    args: readonly string[],
    timeoutMs?: number,
  ): Promise<{ code: number | null; stdout: string; stderr: string }>;
  /** The miniupnpd of a `upnp` home (its log so far), if one runs. */
  gatewayLog(home: number): string;
  close(): Promise<void>;
}

/** Why the lab cannot run here, or undefined when it can. */
export function labSkipReason(kinds: readonly NatKind[] = NAT_KINDS): string | undefined {
  if (process.platform !== 'linux') return 'the NAT lab needs Linux network namespaces';
  if (process.getuid?.() !== 0) return 'the NAT lab needs root (ip netns, nftables)';
  const missing = ['ip', 'nft', ...(kinds.includes('upnp') ? ['miniupnpd'] : [])].filter((c) => !onPath(c));
  if (missing.length > 0)
    return `the NAT lab needs ${missing.join(', ')} (Debian: iproute2, nftables, miniupnpd-nftables)`;
  return undefined;
}

function onPath(command: string): boolean {
  for (const dir of (process.env['PATH'] ?? '').split(':').concat(['/usr/sbin', '/sbin'])) {
    try {
      execFileSync('test', ['-x', join(dir, command)]);
      return true;
    } catch {
      // not in this one
    }
  }
  return false;
}

const live = new Set<() => void>();
let exitHooked = false;
function hookExit(): void {
  if (exitHooked) return;
  exitHooked = true;
  // A test that crashes or is stopped must not leave namespaces behind.
  process.once('exit', () => {
    for (const cleanup of [...live]) cleanup();
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      for (const cleanup of [...live]) cleanup();
      process.exit(128 + (signal === 'SIGINT' ? 2 : signal === 'SIGTERM' ? 15 : 1));
    });
  }
}

let labs = 0;

/**
 * Deletes the namespaces of labs whose process is gone: a test killed with SIGKILL (the test
 * runner's timeout) cannot clean up after itself. The name carries the pid, so only dead
 * processes' labs are touched.
 */
/** Where `ip netns exec` finds files it mounts over /etc for the namespace `ns`. */
function netnsEtc(ns: string): string {
  return join('/etc/netns', ns);
}

function sweepDeadLabs(): void {
  let list: string;
  try {
    list = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' });
  } catch {
    return;
  }
  for (const line of list.split('\n')) {
    const m = /^(nl([0-9a-z]+)_\d+-[a-z0-9]+)\b/.exec(line);
    if (m === null) continue;
    const pid = Number.parseInt(m[2]!, 36);
    if (pid === process.pid || processAlive(pid)) continue;
    try {
      execFileSync('ip', ['netns', 'del', m[1]!], { stdio: 'ignore' });
    } catch {
      // another sweep got it
    }
    rmSync(netnsEtc(m[1]!), { recursive: true, force: true });
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function sh(command: string, args: readonly string[], input?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = execFile(command, args, { timeout: 10_000 }, (err, _stdout, stderr) => {
      if (err) reject(new Error(`${command} ${args.join(' ')}: ${stderr.trim() || err.message}`));
      else resolve();
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}

/** Options: `hostsPerHome` puts that many hosts on each home's LAN (default 1). */
export async function createLab(kinds: readonly NatKind[], options: { hostsPerHome?: number } = {}): Promise<Lab> {
  if (kinds.length > HOME_NETS.length) throw new Error(`at most ${HOME_NETS.length} homes`);
  const hostsPerHome = options.hostsPerHome ?? 1;
  sweepDeadLabs();
  // Unique per process and lab: parallel test files build labs of their own.
  const name = `nl${process.pid.toString(36)}_${labs++}`;
  const namespaces: string[] = [];
  const children = new Set<ChildProcess>();
  const gatewayLogs = new Map<number, () => string>();
  const scratch = mkdtempSync(join(tmpdir(), `clawpeer-${name}-`));

  const cleanupSync = (): void => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    for (const ns of namespaces.splice(0).reverse()) {
      try {
        execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
      } catch {
        // gone already
      }
      rmSync(netnsEtc(ns), { recursive: true, force: true });
    }
    rmSync(scratch, { recursive: true, force: true });
    live.delete(cleanupSync);
  };
  hookExit();
  live.add(cleanupSync);

  const addNs = async (suffix: string): Promise<string> => {
    const ns = `${name}-${suffix}`;
    await sh('ip', ['netns', 'add', ns]);
    namespaces.push(ns);
    await sh('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
    // `ip netns exec` mounts /etc/netns/NS/resolv.conf over /etc/resolv.conf: a resolver on the
    // namespace's own loopback, where nothing answers. Without it a lookup (glibc resolves
    // 0.0.0.0's name on some paths) went toward the host's resolver, out of the lab's ranges, and
    // waited 5-10 s for a reply that never came, holding a libuv pool thread all that time.
    mkdirSync(netnsEtc(ns), { recursive: true });
    writeFileSync(join(netnsEtc(ns), 'resolv.conf'), 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n');
    return ns;
  };
  const ipIn = (ns: string, ...args: string[]): Promise<void> => sh('ip', ['-n', ns, ...args]);
  /** A veth pair from one namespace to another, named inside each. */
  const veth = async (nsA: string, ifA: string, nsB: string, ifB: string): Promise<void> => {
    await sh('ip', ['link', 'add', ifA, 'netns', nsA, 'type', 'veth', 'peer', 'name', ifB, 'netns', nsB]);
  };
  const spawnIn = (
    ns: string,
    command: string,
    args: readonly string[],
    spawnOptions: SpawnOptions = {},
  ): ChildProcess => {
    const child = spawn('ip', ['netns', 'exec', ns, command, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...spawnOptions,
    });
    children.add(child);
    child.once('exit', () => children.delete(child));
    return child;
  };

  try {
    const pubNs = await addNs('pub');
    await ipIn(pubNs, 'link', 'add', 'br0', 'type', 'bridge');
    await ipIn(pubNs, 'link', 'set', 'br0', 'up');
    await ipIn(pubNs, 'addr', 'add', `${PUBLIC_ADDRESS}/24`, 'dev', 'br0');
    // pub routes for the public hosts of kind none, and answers ARP for them on the bridge.
    await sh('ip', ['netns', 'exec', pubNs, 'sysctl', '-qw', 'net.ipv4.ip_forward=1', 'net.ipv4.conf.br0.proxy_arp=1']);
    const homes: LabHome[] = [];
    for (const [i, kind] of kinds.entries()) {
      const hosts: LabHost[] = [];
      if (kind === 'none') {
        for (let j = 0; j < hostsPerHome; j++) {
          const ns = await addNs(`h${i}${j}`);
          const address = `${PUBLIC_NET}.${20 + 10 * i + j}`;
          // Routed through pub, not bridged: two public hosts share no link (as on the
          // internet), so LAN discovery's broadcasts do not reach across.
          await veth(ns, 'eth0', pubNs, `p${i}${j}`);
          await ipIn(pubNs, 'link', 'set', `p${i}${j}`, 'up');
          await ipIn(pubNs, 'route', 'add', `${address}/32`, 'dev', `p${i}${j}`);
          await ipIn(ns, 'addr', 'add', `${address}/32`, 'dev', 'eth0');
          await ipIn(ns, 'link', 'set', 'eth0', 'up');
          await ipIn(ns, 'route', 'add', PUBLIC_ADDRESS, 'dev', 'eth0');
          await ipIn(ns, 'route', 'add', 'default', 'via', PUBLIC_ADDRESS);
          hosts.push({ ns, address });
        }
        homes.push({ kind, hosts, publicAddress: hosts[0]!.address });
        continue;
      }
      const net = HOME_NETS[i]!;
      const natNs = await addNs(`nat${i}`);
      const outside = `${PUBLIC_NET}.${2 + i}`;
      const inside = `${net}.1`;
      // Routed through pub, not bridged: pub is a router between the NATs (a hop that lowers the
      // TTL, as on the internet), so a short-lived punch opens its own NAT and dies before the peer's.
      await veth(natNs, 'out', pubNs, `p${i}`);
      await ipIn(pubNs, 'link', 'set', `p${i}`, 'up');
      await ipIn(pubNs, 'route', 'add', `${outside}/32`, 'dev', `p${i}`);
      await ipIn(natNs, 'addr', 'add', `${outside}/32`, 'dev', 'out');
      await ipIn(natNs, 'link', 'set', 'out', 'up');
      await ipIn(natNs, 'route', 'add', PUBLIC_ADDRESS, 'dev', 'out');
      await ipIn(natNs, 'route', 'add', `${PUBLIC_NET}.0/24`, 'via', PUBLIC_ADDRESS);
      // The LAN: a bridge in the NAT namespace, so several hosts share one segment (LAN discovery).
      await ipIn(natNs, 'link', 'add', 'in', 'type', 'bridge');
      await ipIn(natNs, 'addr', 'add', `${inside}/24`, 'dev', 'in');
      await ipIn(natNs, 'link', 'set', 'in', 'up');
      for (let j = 0; j < hostsPerHome; j++) {
        const ns = await addNs(`h${i}${j}`);
        const address = `${net}.${10 + j}`;
        await veth(ns, 'eth0', natNs, `l${j}`);
        await ipIn(natNs, 'link', 'set', `l${j}`, 'master', 'in', 'up');
        await ipIn(ns, 'addr', 'add', `${address}/24`, 'dev', 'eth0');
        await ipIn(ns, 'link', 'set', 'eth0', 'up');
        await ipIn(ns, 'route', 'add', 'default', 'via', inside);
        hosts.push({ ns, address });
      }
      await sh('ip', ['netns', 'exec', natNs, 'sysctl', '-qw', 'net.ipv4.ip_forward=1']);
      await sh('ip', ['netns', 'exec', natNs, 'nft', '-f', '-'], natRules(kind, hosts[0]!.address));
      homes.push({ kind, hosts, nat: { ns: natNs, outside, inside }, publicAddress: outside });
    }
    const lab: Lab = {
      name,
      pub: { ns: pubNs, address: PUBLIC_ADDRESS },
      homes,
      spawnIn,
      run: (ns, command, args, timeoutMs = 30_000) =>
        new Promise((resolve) => {
          execFile(
            'ip',
            ['netns', 'exec', ns, command, ...args],
            { timeout: timeoutMs, maxBuffer: 16 << 20 },
            (err, stdout, stderr) => {
              const code = err === null ? 0 : typeof err.code === 'number' ? err.code : null;
              resolve({ code, stdout, stderr });
            },
          );
        }),
      gatewayLog: (home) => gatewayLogs.get(home)?.() ?? '',
      close: async () => {
        const exits = [...children].map(
          (c) =>
            new Promise<void>((resolve) =>
              c.exitCode !== null || c.signalCode !== null ? resolve() : c.once('exit', () => resolve()),
            ),
        );
        for (const c of children) c.kill('SIGTERM');
        await Promise.race([Promise.all(exits), new Promise((resolve) => setTimeout(resolve, 2_000))]);
        cleanupSync();
      },
    };
    for (const [i, home] of homes.entries()) {
      if (home.kind !== 'upnp' || home.nat === undefined) continue;
      gatewayLogs.set(i, await startGateway(lab, home, join(scratch, `gw${i}`)));
    }
    return lab;
  } catch (err) {
    cleanupSync();
    throw err;
  }
}

/** The NAT namespace's nftables ruleset for a kind; `out` faces the public segment. */
function natRules(kind: NatKind, host: string): string {
  const base =
    'table ip nat {\n  chain pre { type nat hook prerouting priority -100; }\n  chain post { type nat hook postrouting priority 100; }\n}\n';
  switch (kind) {
    case 'port-restricted':
    case 'upnp': // miniupnpd adds its own table and chains (startGateway)
      return base + 'add rule ip nat post oifname "out" masquerade\n';
    case 'symmetric':
      return base + 'add rule ip nat post oifname "out" masquerade random\n';
    case 'eim':
      // Full cone: the source port kept whatever the destination, and every inbound port
      // forwarded to the (one) host, so anyone may send to a mapping once it exists.
      return (
        base +
        'add rule ip nat post oifname "out" masquerade persistent\n' +
        `add rule ip nat pre iifname "out" meta l4proto { udp, tcp } dnat to ${host}\n`
      );
    case 'none':
      throw new Error('no NAT for kind none');
  }
}

/** The port miniupnpd serves its description and SOAP control on. */
export const GATEWAY_HTTP_PORT = 5000;

/**
 * Starts miniupnpd (UPnP-IGD and NAT-PMP) on a home's NAT. miniupnpd refuses to forward ports
 * when its outside address is a reserved one (as every lab address is) unless STUN says that
 * address is reachable from outside: so a STUN answer (the reflector of lab-probe.ts on the
 * public address) runs first. Resolves once miniupnpd listens; returns its log so far.
 */
async function startGateway(lab: Lab, home: LabHome, dir: string): Promise<() => string> {
  const nat = home.nat!;
  const net = nat.inside.replace(/\.1$/, '');
  await sh(
    'ip',
    ['netns', 'exec', nat.ns, 'nft', '-f', '-'],
    [
      'table inet miniupnpd {',
      '  chain forward { type filter hook forward priority 0; policy accept; jump miniupnpd; }',
      '  chain miniupnpd { }',
      '  chain prerouting { type nat hook prerouting priority -100; policy accept; jump prerouting_miniupnpd; }',
      '  chain postrouting { type nat hook postrouting priority 100; policy accept; jump postrouting_miniupnpd; }',
      '  chain prerouting_miniupnpd { }',
      '  chain postrouting_miniupnpd { }',
      '}',
      '',
    ].join('\n'),
  );
  const stun = lab.spawnIn(lab.pub.ns, process.execPath, [
    new URL('./lab-probe.js', import.meta.url).pathname,
    'reflect',
    lab.pub.address,
    String(STUN_PORT),
  ]);
  await waitForLine(stun, /listening/, 10_000, 'the STUN reflector');
  mkdirSync(dir, { recursive: true });
  const conf = join(dir, 'miniupnpd.conf');
  writeFileSync(
    conf,
    [
      'ext_ifname=out',
      'listening_ip=in',
      `http_port=${GATEWAY_HTTP_PORT}`,
      'enable_natpmp=yes',
      'enable_upnp=yes',
      'secure_mode=yes',
      'system_uptime=yes',
      'min_lifetime=2', // so a test can watch a renewal (the default floor is 120 s)
      'ext_perform_stun=yes',
      `ext_stun_host=${lab.pub.address}`,
      `ext_stun_port=${STUN_PORT}`,
      'upnp_table_name=miniupnpd',
      'upnp_nat_table_name=miniupnpd',
      'upnp_forward_chain=miniupnpd',
      'upnp_nat_chain=prerouting_miniupnpd',
      'upnp_nat_postrouting_chain=postrouting_miniupnpd',
      `uuid=${randomUUID()}`,
      `allow 1024-65535 ${net}.0/24 1024-65535`,
      'deny 0-65535 0.0.0.0/0 0-65535',
      '',
    ].join('\n'),
  );
  const gw = lab.spawnIn(nat.ns, 'miniupnpd', ['-f', conf, '-d', '-P', join(dir, 'miniupnpd.pid')]);
  let log = '';
  gw.stdout?.on('data', (d: Buffer) => (log += d.toString()));
  gw.stderr?.on('data', (d: Buffer) => (log += d.toString()));
  await waitForLine(gw, /Listening for NAT-PMP/, 15_000, 'miniupnpd', true);
  // STUN ran before that line; miniupnpd says when it judged the outside address usable.
  if (/Port forwarding is impossible|restrictive/i.test(log) && !/full-cone|unrestricted/i.test(log))
    throw new Error(`miniupnpd will not forward ports:\n${log}`);
  stun.kill('SIGTERM');
  return () => log;
}

/** Waits for a line matching `re` on the child's stdout (or stderr too). */
export function waitForLine(
  child: ChildProcess,
  re: RegExp,
  timeoutMs: number,
  what: string,
  stderrToo = false,
): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (d: Buffer): void => {
      seen += d.toString();
      const line = seen.split('\n').find((l) => re.test(l));
      if (line !== undefined) {
        done();
        resolve(line);
      }
    };
    const onExit = (code: number | null): void => {
      done();
      reject(new Error(`${what} exited (${String(code)}) before ${String(re)}:\n${seen}`));
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`${what}: no ${String(re)} in ${timeoutMs} ms:\n${seen}`));
    }, timeoutMs);
    const done = (): void => {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.stderr?.off('data', onData);
      child.off('exit', onExit);
    };
    child.stdout?.on('data', onData);
    if (stderrToo) child.stderr?.on('data', onData);
    child.once('exit', onExit);
  });
}
