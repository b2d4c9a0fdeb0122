// Port mapping against a real gateway: miniupnpd (UPnP-IGD and NAT-PMP) on the NAT of a lab home.
// For each protocol (PCP, NAT-PMP, UPnP), startPortMapping (run in the home by port-map-agent.ts) maps a UDP and a
// TCP port; the external address is the NAT's outside one; a datagram and a TCP connection
// from the public segment reach the home's sockets; close deletes the gateway's rules. On a
// network without a gateway it finds nothing, quietly.
import t from 'tap';
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { silentLogger } from '../../src/logger.js';
import { startListenerPortMapping } from '../../src/reach/listener-port-mapping.js';
import { createLab, labSkipReason, type Lab } from './netlab.js';

const AGENT = fileURLToPath(new URL('./port-map-agent.js', import.meta.url));
const PROBE = fileURLToPath(new URL('./lab-probe.js', import.meta.url));

interface Agent {
  readonly child: ChildProcess;
  next(event: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  stderr(): string;
}

function startAgent(lab: Lab, ns: string, protocols: string, lifetimeS = 3600, port = 0): Agent {
  const child = lab.spawnIn(ns, process.execPath, [AGENT, protocols, String(lifetimeS), String(port)], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const events: Record<string, unknown>[] = [];
  const waiters: (() => void)[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    events.push(JSON.parse(line) as Record<string, unknown>);
    for (const w of waiters.splice(0)) w();
  });
  const next = async (event: string, timeoutMs = 15_000): Promise<Record<string, unknown>> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = events.findIndex((e) => e['event'] === event);
      if (i >= 0) return events.splice(i, 1)[0]!;
      if (Date.now() > deadline) throw new Error(`agent: no ${event} event in ${timeoutMs} ms; stderr:\n${stderr}`);
      await new Promise<void>((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, 200);
      });
    }
  };
  return { child, next, stderr: () => stderr };
}

const skip = labSkipReason(['upnp']);
if (skip !== undefined) {
  t.comment(`skipping the port-mapping lab: ${skip}`);
  t.pass(`skipped: ${skip}`, { skip });
} else {
  const lab = await createLab(['upnp', 'none'], { hostsPerHome: 2 });
  t.teardown(() => lab.close());
  const home = lab.homes[0]!;
  const nat = home.nat!;
  // On the public host, where nothing answers PCP, NAT-PMP or SSDP: started first, as it waits
  // out the timeouts while the other cases run.
  const noGatewayStarted = Date.now();
  const noGateway = startAgent(lab, lab.homes[1]!.hosts[0]!.ns, 'pcp,nat-pmp,upnp');
  let noGatewayReadyMs: number | undefined;
  noGateway.child.stdout!.on('data', (d: Buffer) => {
    if (noGatewayReadyMs === undefined && d.toString().includes('"mapped"'))
      noGatewayReadyMs = Date.now() - noGatewayStarted;
  });
  const gatewayRules = async (): Promise<string> =>
    (await lab.run(nat.ns, 'nft', ['list', 'table', 'inet', 'miniupnpd'])).stdout;

  for (const protocol of ['pcp', 'nat-pmp', 'upnp'] as const) {
    t.test(`${protocol}: a mapping on miniupnpd carries traffic from outside, and close removes it`, async (t) => {
      const agent = startAgent(lab, home.hosts[0]!.ns, protocol);
      t.teardown(() => agent.child.kill('SIGKILL'));
      const mapped = await agent.next('mapped');
      t.equal(mapped['via'], protocol, `mapped through ${protocol}; log:\n${agent.stderr()}`);
      const addresses = mapped['addresses'] as { host: string; port: number; role: string; source: string }[];
      t.match(
        addresses,
        [{ host: nat.outside, role: 'listen', source: 'mapped' }],
        "the NAT's outside address, source mapped",
      );
      t.match(addresses[0]?.host, /^203\.0\.113\.\d+$/);
      const external = addresses[0]!.port;
      t.match(await gatewayRules(), new RegExp(`dport ${external}\\b`), 'miniupnpd forwards the port');

      const sent = await lab.run(lab.pub.ns, process.execPath, [
        PROBE,
        'send',
        nat.outside,
        String(external),
        `hello over ${protocol}`,
      ]);
      t.equal(sent.code, 0, sent.stderr);
      const datagram = await agent.next('datagram', 5_000);
      t.equal(
        datagram['text'],
        `hello over ${protocol}`,
        'a datagram from the public segment reaches the inner socket',
      );
      t.match(datagram['from'], /^203\.0\.113\.1:\d+$/, 'from the sender as it is (no source rewrite)');

      const status = mapped['status'] as { tcpExternalPort?: number };
      t.equal(status.tcpExternalPort, external, 'TCP got the same external port');
      const tcp = await lab.run(
        lab.pub.ns,
        process.execPath,
        [
          '-e',
          `require('net').connect(${external}, '${nat.outside}').on('data', (d) => { process.stdout.write(d); process.exit(0); }).on('error', (e) => { console.error(e.message); process.exit(1); })`,
        ],
        5_000,
      );
      t.equal(tcp.stdout, 'clawpeer tcp\n', `a TCP connection from outside reaches the inner server ${tcp.stderr}`);

      agent.child.stdin!.write('close\n');
      await agent.next('closed', 5_000);
      t.notMatch(await gatewayRules(), new RegExp(`dport ${external}\\b`), 'close deleted the mapping on the gateway');
    });
  }

  t.test('a short lifetime is renewed (PCP) before it runs out', async (t) => {
    const agent = startAgent(lab, home.hosts[0]!.ns, 'pcp', 2);
    t.teardown(() => agent.child.kill('SIGKILL'));
    const mapped = await agent.next('mapped');
    const external = (mapped['addresses'] as { port: number }[])[0]?.port;
    t.ok(external, `mapped; log:\n${agent.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 3_500)); // past the first lifetime
    t.match(agent.stderr(), /port mapping renewed.*lifetimeS=2\b/, 'renewed at half the granted lifetime');
    const sent = await lab.run(lab.pub.ns, process.execPath, [
      PROBE,
      'send',
      nat.outside,
      String(external),
      'still mapped',
    ]);
    t.equal(sent.code, 0);
    t.equal((await agent.next('datagram', 5_000))['text'], 'still mapped', 'the mapping outlived its first lifetime');
    agent.child.stdin!.write('close\n');
    await agent.next('closed', 5_000);
  });

  t.test('upnp: two hosts behind one gateway asking for the same port: the second gets another', async (t) => {
    const port = 41_000;
    const first = startAgent(lab, home.hosts[0]!.ns, 'upnp', 3600, port);
    t.teardown(() => first.child.kill('SIGKILL'));
    const one = ((await first.next('mapped'))['addresses'] as { port: number }[])[0];
    t.equal(one?.port, port, `the first host got the port it asked for; log:\n${first.stderr()}`);
    const second = startAgent(lab, home.hosts[1]!.ns, 'upnp', 3600, port);
    t.teardown(() => second.child.kill('SIGKILL'));
    const two = ((await second.next('mapped'))['addresses'] as { port: number }[])[0];
    t.ok(
      two !== undefined && two.port !== port,
      `the second moved to another external port (${String(two?.port)}); log:\n${second.stderr()}`,
    );
    for (const [agent, external, text] of [
      [first, port, 'to the first'],
      [second, two!.port, 'to the second'],
    ] as const) {
      await lab.run(lab.pub.ns, process.execPath, [PROBE, 'send', nat.outside, String(external), text]);
      t.equal((await agent.next('datagram', 5_000))['text'], text, `${text} host`);
    }
    for (const agent of [first, second]) {
      agent.child.stdin!.write('close\n');
      await agent.next('closed', 5_000);
    }
    t.notMatch(await gatewayRules(), /dport \d+/, 'both deleted');
  });

  t.test("a listener's mappings: its QUIC/TCP port (role listen) and its traversal socket (role mux)", async (t) => {
    const agent = startAgent(lab, home.hosts[0]!.ns, 'listener');
    t.teardown(() => agent.child.kill('SIGKILL'));
    const mapped = await agent.next('mapped');
    const addresses = mapped['addresses'] as { host: string; port: number; role: string; source: string }[];
    t.match(
      addresses,
      [
        { host: nat.outside, role: 'listen', source: 'mapped' },
        { host: nat.outside, role: 'mux', source: 'mapped' },
      ],
      `both mapped; log:\n${agent.stderr()}`,
    );
    await lab.run(lab.pub.ns, process.execPath, [
      PROBE,
      'send',
      nat.outside,
      String(addresses[1]!.port),
      'to the traversal socket',
    ]);
    t.match(await agent.next('datagram', 5_000), { socket: 'mux', text: 'to the traversal socket' });
    agent.child.stdin!.write('close\n');
    await agent.next('closed', 5_000);
    t.notMatch(await gatewayRules(), /dport \d+/, 'both deleted');
  });

  t.test('a listener bound to loopback maps nothing', async (t) => {
    t.equal(
      startListenerPortMapping({ bound: [{ transport: 'quic', host: '127.0.0.1', port: 7700 }], log: silentLogger }),
      undefined,
    );
    t.equal(
      startListenerPortMapping({ bound: [{ transport: 'tcp', host: '0.0.0.0', port: 7700 }], log: silentLogger }),
      undefined,
      'nor one without QUIC',
    );
  });

  t.test('without a gateway: nothing mapped, no error, ready in seconds', async (t) => {
    const agent = noGateway;
    t.teardown(() => agent.child.kill('SIGKILL'));
    const mapped = await agent.next('mapped', 20_000);
    t.same(mapped['addresses'], []);
    t.equal(mapped['via'], null);
    t.ok(
      noGatewayReadyMs !== undefined && noGatewayReadyMs < 15_000,
      `gave up in time (${String(noGatewayReadyMs)} ms)`,
    );
    agent.child.stdin!.write('close\n');
    await agent.next('closed', 5_000);
  });
}
