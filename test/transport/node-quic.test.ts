// node:quic backend: the compliance suite where the runtime has node:quic; elsewhere (every
// official Node binary so far) a clean skip, plus the checks that the absence is reported well.
import t from 'tap';
import { generateIdentity } from '../../src/crypto/identity.js';
import { isClawpeerError } from '../../src/errors.js';
import { NodeQuicBackend } from '../../src/transport/node-quic.js';
import { transportCompliance } from './compliance.js';

const present = new NodeQuicBackend().available();

transportCompliance('node-quic', () => new NodeQuicBackend(), {
  skip: present ? false : `this Node ${process.version} has no node:quic (process.features.quic is not true)`,
});

void t.test(
  'without node:quic, listen and connect fail with TRANSPORT_UNAVAILABLE',
  { skip: present ? 'node:quic is present' : false },
  async (t) => {
    const backend = new NodeQuicBackend();
    t.equal(backend.available(), false);
    const identity = generateIdentity();
    for (const attempt of [
      () => backend.listen({ host: '127.0.0.1', port: 0, identity }),
      () => backend.connect({ host: '127.0.0.1', port: 9, identity }),
    ]) {
      let err: unknown;
      try {
        await attempt();
      } catch (e) {
        err = e;
      }
      t.ok(isClawpeerError(err, 'TRANSPORT_UNAVAILABLE'), `TRANSPORT_UNAVAILABLE (got ${String(err)})`);
      t.match(String(err), /has no node:quic/, 'the message says why');
    }
  },
);
