// The NAT lab itself: each kind of NAT behaves as its name says, seen from a reflector on the
// public segment (test/lab/lab-probe.ts): the mapping one socket gets toward two destinations
// (the same for endpoint-independent mapping, a new one for symmetric) and whether a packet from
// a third endpoint reaches that mapping (filtering). And the lab leaves no namespace behind.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createLab, labSkipReason, NAT_KINDS, waitForLine, type NatKind } from './netlab.js';

const PROBE = fileURLToPath(new URL('./lab-probe.js', import.meta.url));
const REFLECTOR_PORT = 40_000;

// Without miniupnpd the other four kinds are still checked.
const upnpMissing = labSkipReason(['upnp']);
const kinds = NAT_KINDS.filter((k) => k !== 'upnp' || upnpMissing === undefined);
const skip = labSkipReason(kinds);
if (upnpMissing !== undefined && skip === undefined) t.comment(`no upnp home: ${upnpMissing}`);
if (skip !== undefined) {
  t.comment(`skipping the NAT lab: ${skip}`);
  t.pass(`skipped: ${skip}`, { skip });
} else {
  const lab = await createLab(kinds);
  t.teardown(() => lab.close());
  const reflector = lab.spawnIn(lab.pub.ns, process.execPath, [
    PROBE,
    'reflect',
    lab.pub.address,
    String(REFLECTOR_PORT),
  ]);
  await waitForLine(reflector, /listening/, 10_000, 'the reflector');

  interface Probe {
    local: number;
    mapA: string | null;
    mapB: string | null;
    unsolicited: boolean;
  }
  const probes = new Map<NatKind, Probe>();
  await Promise.all(
    lab.homes.map(async (home) => {
      const r = await lab.run(home.hosts[0]!.ns, process.execPath, [
        PROBE,
        'probe',
        lab.pub.address,
        String(REFLECTOR_PORT),
      ]);
      if (r.code !== 0) throw new Error(`probe in ${home.kind} failed: ${r.stderr}`);
      probes.set(home.kind, JSON.parse(r.stdout) as Probe);
    }),
  );
  const homeOf = (kind: NatKind) => lab.homes.find((h) => h.kind === kind)!;

  t.test('none: the host is seen at its own address and port, and anyone reaches it', async (t) => {
    const p = probes.get('none')!;
    const own = `${homeOf('none').hosts[0]!.address}:${p.local}`;
    t.same([p.mapA, p.mapB], [own, own]);
    t.equal(p.unsolicited, true);
  });

  t.test('eim: one public mapping for every destination, and a third endpoint reaches it', async (t) => {
    const p = probes.get('eim')!;
    t.match(p.mapA, new RegExp(`^${homeOf('eim').publicAddress.replace(/\./g, '\\.')}:\\d+$`), 'seen at the NAT');
    t.equal(p.mapB, p.mapA, 'the same mapping toward a second destination');
    t.equal(p.unsolicited, true, 'full cone: unsolicited packets pass');
  });

  for (const kind of kinds.filter((k) => k === 'port-restricted' || k === 'upnp')) {
    t.test(`${kind}: one public mapping for every destination, but a third endpoint is filtered`, async (t) => {
      const p = probes.get(kind)!;
      t.match(p.mapA, new RegExp(`^${homeOf(kind).publicAddress.replace(/\./g, '\\.')}:\\d+$`), 'seen at the NAT');
      t.equal(p.mapB, p.mapA, 'the same mapping toward a second destination');
      t.equal(p.unsolicited, false, 'a packet from an endpoint never contacted is dropped');
    });
  }

  t.test('symmetric: a new mapping per destination, and a third endpoint is filtered', async (t) => {
    const p = probes.get('symmetric')!;
    t.match(p.mapA, new RegExp(`^${homeOf('symmetric').publicAddress.replace(/\./g, '\\.')}:\\d+$`), 'seen at the NAT');
    t.match(p.mapB, /:\d+$/);
    t.not(p.mapB, p.mapA, 'another port toward a second destination');
    t.equal(p.unsolicited, false);
  });

  t.test('closing the lab deletes every namespace it made', async (t) => {
    await lab.close();
    const left = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l.startsWith(`${lab.name}-`));
    t.same(left, []);
  });
}
