// The UDP drop counters the bench reads around a run, from a fake /proc.
import t from 'tap';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { udpBufferDrops } from '../../src/transport/udp-buffers.js';

t.test(
  'udp buffer drops: RcvbufErrors + SndbufErrors from the Udp rows of /proc/net/snmp; null when unreadable',
  async (t) => {
    const procDir = await mkdtemp(join(tmpdir(), 'clawpeer-proc-'));
    t.teardown(() => rm(procDir, { recursive: true, force: true }));
    await mkdir(join(procDir, 'net'), { recursive: true });
    await writeFile(
      join(procDir, 'net', 'snmp'),
      'Ip: Forwarding DefaultTTL\nIp: 1 64\n' +
        'Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors\n' +
        'Udp: 429928 0 4269 427360 4269 5 0 0 0\n' +
        'UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors\n' +
        'UdpLite: 0 0 0 0 100 100 0 0 0\n',
    );
    t.equal(udpBufferDrops(procDir), 4274, 'UdpLite rows are not counted');
    t.equal(udpBufferDrops(join(procDir, 'missing')), null);
  },
);
