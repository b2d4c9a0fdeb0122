// The LAN cell (issue 28): two homes on one LAN behind a NAT find each other by LAN discovery
// alone: a rendezvous is named but down. `pair add` without an address, then `ping` goes over
// the path `lan`, and a push arrives intact.
import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { initNode } from '../e2e/cli-harness.js';
import { cliIn, reachCliSkipReason, startIn, type LabProcess } from './lab-cli.js';
import { createLab, labSkipReason } from './netlab.js';

const skip = labSkipReason(['port-restricted']) ?? reachCliSkipReason({ rendezvousCommand: false });

if (skip !== undefined) {
  t.comment(`skipping the LAN cell: ${skip}`);
  t.pass(`skipped: ${skip}`, { skip });
} else {
  const lab = await createLab(['port-restricted'], { hostsPerHome: 2 });
  const running: LabProcess[] = [];
  t.teardown(async () => {
    for (const p of running) await p.stop();
    await lab.close();
  });
  const [hostA, hostB] = lab.homes[0]!.hosts;
  const down = `${lab.pub.address}:7800`; // nothing listens there
  const a = await initNode('lan-a');
  const b = await initNode('lan-b');
  const isListening = (l: Record<string, unknown>): boolean => l['event'] === 'listening';
  for (const [host, node] of [
    [hostA!, a],
    [hostB!, b],
  ] as const) {
    running.push(
      await startIn(
        lab,
        host.ns,
        ['--home', node.home, '--rendezvous', down, 'listen', '--host', '0.0.0.0', '--port', '7700', '--json'],
        { isReady: isListening },
      ),
    );
  }

  t.test('paired by id alone, the two find each other on the LAN with the rendezvous down', async (t) => {
    t.equal(
      (await cliIn(lab, hostA!.ns, ['--home', a.home, '--rendezvous', down, 'pair', 'add', b.id, '--name', 'bob']))
        .code,
      0,
    );
    t.equal(
      (await cliIn(lab, hostB!.ns, ['--home', b.home, '--rendezvous', down, 'pair', 'add', a.id, '--name', 'alice']))
        .code,
      0,
    );
    const ping = await cliIn(
      lab,
      hostA!.ns,
      ['--home', a.home, '--rendezvous', down, 'ping', 'bob', '--count', '2', '--json'],
      30_000,
    );
    t.equal(ping.code, 0, ping.stderr);
    const pongs = ping.json.filter((l) => l['event'] === 'pong');
    t.equal(pongs.length, 2);
    t.equal(pongs[0]?.['path'], 'lan', 'found by LAN discovery');

    const work = await mkdtemp(path.join(tmpdir(), 'clawpeer-lan-'));
    const file = path.join(work, 'lan.bin');
    const bytes = randomBytes(4 << 20);
    await writeFile(file, bytes);
    const push = await cliIn(
      lab,
      hostA!.ns,
      ['--home', a.home, '--rendezvous', down, 'push', file, 'bob', '--json'],
      60_000,
    );
    t.equal(push.code, 0, push.stderr);
    const landed = await readFile(path.join(b.home, 'inbox', 'lan.bin'));
    t.equal(
      createHash('sha256').update(landed).digest('hex'),
      createHash('sha256').update(bytes).digest('hex'),
      'the push arrived intact',
    );
  });

  t.test('a short code pairs a new node on the LAN with the rendezvous down, no address typed', async (t) => {
    const c = await initNode('lan-c'); // a joiner on host B beside bob's listener; it needs none of its own
    const invite = await cliIn(
      lab,
      hostA!.ns,
      ['--home', a.home, '--rendezvous', down, 'pair', 'invite', '--no-wait', '--name', 'carol', '--json'],
      60_000,
    );
    t.equal(invite.code, 0, invite.stderr);
    const code = String(invite.json[0]?.['code']);
    const joined = await cliIn(
      lab,
      hostB!.ns,
      ['--home', c.home, '--rendezvous', down, 'pair', 'join', code, '--name', 'alice', '--json'],
      60_000,
    );
    t.equal(joined.code, 0, joined.stderr);
    t.match(joined.json.at(-1), { event: 'paired', id: a.id, name: 'alice' });
    const work = await mkdtemp(path.join(tmpdir(), 'clawpeer-lan-code-'));
    const file = path.join(work, 'by-code.txt');
    await writeFile(file, 'paired on the LAN by a short code\n');
    const push = await cliIn(
      lab,
      hostB!.ns,
      ['--home', c.home, '--rendezvous', down, 'push', file, 'alice', '--json'],
      60_000,
    );
    t.equal(push.code, 0, push.stderr);
    // The pairing pinned the address the LAN answered with: dialled as pinned, it is 'direct'.
    t.match(push.json.at(-1), { event: 'done', path: /^(lan|direct)$/ });
    t.equal(await readFile(path.join(a.home, 'inbox', 'by-code.txt'), 'utf8'), 'paired on the LAN by a short code\n');
  });
}
