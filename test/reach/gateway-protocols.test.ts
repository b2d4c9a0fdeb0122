// The PCP and NAT-PMP clients against a scripted gateway on 127.0.0.1:5351: the answers a real
// gateway gives in trouble (refusals, a NAT-PMP-only gateway asked in PCP), and answers that
// must be ignored (another mapping's nonce). The happy paths run against miniupnpd in
// test/lab/port-mapping.test.ts.
import t from 'tap';
import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { ClawpeerError } from '../../src/errors.js';
import { NatPmpClient } from '../../src/reach/nat-pmp.js';
import { PcpClient, PcpVersionError } from '../../src/reach/pcp.js';
import { isPrivateIPv4 } from '../../src/reach/port-mapping.js';

type Answer = (request: Buffer, from: RemoteInfo, reply: (b: Buffer) => void) => void;
let answer: Answer = () => undefined;
const gateway: Socket = createSocket('udp4');
const bound = await new Promise<boolean>((resolve) => {
  gateway.once('error', () => resolve(false));
  gateway.bind(5351, '127.0.0.1', () => resolve(true));
});
if (!bound) {
  t.pass('skipped: 127.0.0.1:5351 is taken', { skip: '127.0.0.1:5351 is taken' });
} else {
  gateway.on('message', (msg, from) => answer(msg, from, (b) => gateway.send(b, from.port, from.address)));
  t.teardown(() => gateway.close());

  /** A PCP MAP answer echoing the request's nonce, protocol and internal port. */
  const pcpAnswer = (request: Buffer, result: number, externalPort: number): Buffer => {
    const out = Buffer.alloc(60);
    out[0] = 2;
    out[1] = 0x81;
    out[3] = result;
    out.writeUInt32BE(request.readUInt32BE(4), 4);
    request.copy(out, 24, 24, 42);
    out.writeUInt16BE(externalPort, 42);
    Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 203, 0, 113, 9]).copy(out, 44);
    return out;
  };

  t.test('PCP: a mapping, with the nonce kept for renewal', async (t) => {
    answer = (req, _from, reply) => reply(pcpAnswer(req, 0, 40_001));
    const client = new PcpClient('127.0.0.1');
    t.teardown(() => client.close());
    const m = await client.map('udp', 7700, 7700, 60);
    t.match(m, { externalAddress: '203.0.113.9', externalPort: 40_001, lifetimeS: 60, internalPort: 7700 });
    const again = await client.map('udp', 7700, m.externalPort, 60, m.nonce);
    t.same(again.nonce, m.nonce);
  });

  t.test('PCP: an answer for another nonce is ignored; a refusal is an error that says why', async (t) => {
    answer = (req, _from, reply) => {
      const stray = pcpAnswer(req, 0, 1);
      stray[24] = stray[24]! ^ 0xff; // another mapping's nonce
      reply(stray);
      reply(pcpAnswer(req, 2, 0));
    };
    const client = new PcpClient('127.0.0.1');
    t.teardown(() => client.close());
    await t.rejects(client.map('tcp', 7700, 7700, 60), { message: /not authorized/ });
  });

  t.test('PCP to a NAT-PMP-only gateway: PcpVersionError, so the caller falls back', async (t) => {
    answer = (req, _from, reply) => reply(Buffer.from([0, 128 + req[1]!, 0, 1, 0, 0, 0, 0]));
    const client = new PcpClient('127.0.0.1');
    t.teardown(() => client.close());
    const err = await client.map('udp', 7700, 7700, 60).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(err instanceof PcpVersionError, String(err));
  });

  t.test('NAT-PMP: external address and mapping; result codes become errors naming them', async (t) => {
    answer = (req, _from, reply) => {
      if (req[1] === 0) {
        reply(Buffer.from([0, 128, 0, 0, 0, 0, 0, 1, 203, 0, 113, 7]));
        return;
      }
      const out = Buffer.alloc(16);
      out[1] = 128 + req[1]!;
      out.writeUInt16BE(req.readUInt16BE(4) === 7701 ? 4 : 0, 2); // 7701: out of resources
      out.writeUInt16BE(req.readUInt16BE(4), 8);
      out.writeUInt16BE(50_000, 10);
      out.writeUInt32BE(req.readUInt32BE(8), 12);
      reply(out);
    };
    const client = new NatPmpClient('127.0.0.1');
    t.teardown(() => client.close());
    t.equal(await client.externalAddress(), '203.0.113.7');
    t.match(await client.map('tcp', 7700, 7700, 120), { externalPort: 50_000, lifetimeS: 120, protocol: 'tcp' });
    await t.rejects(client.map('udp', 7701, 7701, 120), { message: /out of resources/ });
  });

  t.test('silence: a timeout after four tries (~3.75 s), and abort stops at once', async (t) => {
    let tries = 0;
    answer = () => {
      tries++;
    };
    const client = new NatPmpClient('127.0.0.1');
    t.teardown(() => client.close());
    const err = await client.externalAddress().then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(err instanceof ClawpeerError && err.code === 'TIMEOUT', String(err));
    t.equal(tries, 4);
    const abort = new AbortController();
    const pending = client.externalAddress(abort.signal);
    abort.abort();
    await t.rejects(pending, { code: 'ABORTED' });
  });

  t.test('a private or carrier-NAT external address is not worth announcing', async (t) => {
    for (const a of ['10.1.2.3', '192.168.1.1', '172.16.0.1', '100.64.0.1', '127.0.0.1', '0.0.0.0'])
      t.ok(isPrivateIPv4(a), a);
    for (const a of ['203.0.113.2', '8.8.8.8', '172.32.0.1', '100.128.0.1']) t.notOk(isPrivateIPv4(a), a);
  });
}
