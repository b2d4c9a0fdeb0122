// HOST:PORT parsing for --addr and pair entries. IPv6 literals go in brackets: [::1]:7700.
import { ClawpeerError } from '../errors.js';
import type { HostPort } from '../transport/types.js';

export function parseHostPort(text: string, what = 'address'): HostPort {
  const m = /^\[([0-9A-Fa-f:.]+)\]:(\d{1,5})$/.exec(text) ?? /^([^:\s[\]]+):(\d{1,5})$/.exec(text);
  const port = m === null ? NaN : Number(m[2]);
  if (m === null || m[1] === undefined || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new ClawpeerError(
      'USAGE',
      `invalid ${what} ${JSON.stringify(text)}: expected HOST:PORT with a port 1-65535 (IPv6 as [::1]:7700)`,
    );
  }
  return { host: m[1], port };
}

export function formatHostPort(addr: HostPort): string {
  return addr.host.includes(':') ? `[${addr.host}]:${addr.port}` : `${addr.host}:${addr.port}`;
}
