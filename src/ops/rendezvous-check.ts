// doctor's rendezvous check: does the named rendezvous answer, and what NAT is this node behind
// (reach/nat-kind.ts). No rendezvous named is fine: nothing leaves the machine unless one is.
import { isClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import { probeNatKind, type NatKind, type NatProbe } from '../reach/nat-kind.js';
import { formatAddress } from '../reach/rendezvous-client.js';
import type { HostPort } from '../transport/types.js';

/** doctor.ts's CheckResult (not imported: doctor imports this module). */
interface CheckResult {
  readonly name: string;
  readonly status: 'ok' | 'warn' | 'fail';
  readonly detail: string;
  readonly fix?: string;
}

const NAT_WORDS: Record<NatKind, string> = {
  none: 'no NAT (a public address): peers can dial this node directly',
  'endpoint-independent': 'NAT with endpoint-independent mapping: hole punching works',
  symmetric:
    'symmetric NAT (a new mapping per destination): punching mostly fails, connections to peers behind NAT will be relayed',
};

export async function checkRendezvous(o: {
  rendezvous: HostPort | undefined;
  log: Logger;
  signal?: AbortSignal;
  probe?: (rv: HostPort) => Promise<NatProbe>;
}): Promise<CheckResult> {
  const name = 'rendezvous';
  if (o.rendezvous === undefined)
    return { name, status: 'ok', detail: 'no rendezvous named: peers are reached by address or on the LAN only' };
  const where = formatAddress(o.rendezvous);
  let probe: NatProbe;
  try {
    probe = await (
      o.probe ?? ((rendezvous) => probeNatKind({ rendezvous, log: o.log, ...(o.signal ? { signal: o.signal } : {}) }))
    )(o.rendezvous);
  } catch (err) {
    if (!isClawpeerError(err)) throw err;
    return {
      name,
      status: 'fail',
      detail: `rendezvous ${where} does not answer: ${err.message}`,
      fix: `check the address, that \`clawpeer rendezvous\` runs there, and that UDP ${o.rendezvous.port} and ${o.rendezvous.port + 1} are open to it`,
    };
  }
  const seen = formatAddress(probe.reflexive[0]);
  const detail = `rendezvous ${where} answers in ${probe.rttMs} ms and sees this node as ${seen}; ${NAT_WORDS[probe.kind]}`;
  return probe.kind === 'symmetric'
    ? {
        name,
        status: 'warn',
        detail,
        fix: 'enable UPnP/NAT-PMP on the router (portMapping), or forward the listen port, for a direct path',
      }
    : { name, status: 'ok', detail };
}
