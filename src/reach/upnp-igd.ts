// A UPnP Internet Gateway Device client: SSDP discovery (M-SEARCH to 239.255.255.250:1900 on
// the LAN), the device description over HTTP, then the WANIPConnection / WANPPPConnection
// service's SOAP actions AddPortMapping, DeletePortMapping and GetExternalIPAddress. Our own
// small code over node:dgram and node:http: the few actions we need do not justify a
// dependency tree (libraries for this pull in XML parsers and more).
import { createSocket } from 'node:dgram';
import { request as httpRequest } from 'node:http';
import { ClawpeerError } from '../errors.js';

const SSDP_ADDRESS = '239.255.255.250';
const SSDP_PORT = 1900;
const SEARCH_TARGETS = [
  'urn:schemas-upnp-org:device:InternetGatewayDevice:1',
  'urn:schemas-upnp-org:device:InternetGatewayDevice:2',
  'urn:schemas-upnp-org:service:WANIPConnection:1',
];
/** A device description or SOAP answer larger than this is not a gateway we talk to. */
const MAX_HTTP_BYTES = 256 << 10;
const HTTP_TIMEOUT_MS = 3_000;

export interface IgdService {
  /** Where the description was (the SSDP LOCATION). */
  readonly location: string;
  readonly serviceType: string;
  readonly controlUrl: string;
  /** This host's address toward the gateway: the internal client of every mapping. */
  readonly localAddress: string;
}

/** Seen on the wire: a UPnP error from the gateway (718: conflict, 725: permanent leases only). */
export class UpnpError extends ClawpeerError {
  constructor(
    readonly upnpCode: number,
    description: string,
    action: string,
  ) {
    super('UNREACHABLE', `UPnP ${action}: error ${upnpCode} ${description}`);
  }
}

/**
 * Finds a gateway by SSDP within `timeoutMs`, then reads its description. Undefined when no
 * gateway answers (most networks): not an error.
 */
export async function discoverIgd(
  options: { timeoutMs?: number; signal?: AbortSignal; interfaceAddress?: string } = {},
): Promise<IgdService | undefined> {
  const locations = await searchLocations(options.timeoutMs ?? 2_000, options.signal, options.interfaceAddress);
  for (const location of locations) {
    try {
      const service = await describe(location, options.signal);
      if (service !== undefined) return service;
    } catch {
      // a device that does not answer or describes no WAN connection: try the next
    }
  }
  return undefined;
}

/** M-SEARCH: resolves with the LOCATION of the first answers (stops early at the first one). */
function searchLocations(
  timeoutMs: number,
  signal: AbortSignal | undefined,
  interfaceAddress: string | undefined,
): Promise<string[]> {
  return new Promise((resolve) => {
    const socket = createSocket('udp4');
    const found: string[] = [];
    let timer: NodeJS.Timeout | undefined;
    let settle: NodeJS.Timeout | undefined;
    const finish = (): void => {
      clearTimeout(timer);
      clearTimeout(settle);
      signal?.removeEventListener('abort', finish);
      try {
        socket.close();
      } catch {
        // closed already
      }
      resolve(found);
    };
    socket.on('error', finish);
    socket.on('message', (msg) => {
      const text = msg.toString('latin1');
      if (!/^HTTP\/1\.[01] 200/.test(text) && !/^NOTIFY /.test(text)) return;
      const location = /^location:\s*(\S+)\s*$/im.exec(text)?.[1];
      if (location === undefined || !/^http:\/\//i.test(location) || found.includes(location)) return;
      found.push(location);
      // Other answers (the other search targets) come within a moment: a short grace, then go.
      settle ??= setTimeout(finish, 100);
    });
    if (signal?.aborted) {
      finish();
      return;
    }
    signal?.addEventListener('abort', finish, { once: true });
    socket.bind(0, interfaceAddress, () => {
      try {
        socket.setMulticastTTL(2);
        if (interfaceAddress !== undefined) socket.setMulticastInterface(interfaceAddress);
      } catch {
        // keep the defaults
      }
      for (const st of SEARCH_TARGETS) {
        const search = `M-SEARCH * HTTP/1.1\r\nHOST: ${SSDP_ADDRESS}:${SSDP_PORT}\r\nMAN: "ssdp:discover"\r\nMX: 1\r\nST: ${st}\r\n\r\n`;
        socket.send(search, SSDP_PORT, SSDP_ADDRESS, () => undefined);
      }
      timer = setTimeout(finish, timeoutMs);
    });
  });
}

interface HttpAnswer {
  readonly status: number;
  readonly body: string;
  readonly localAddress: string;
}

function http(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string; signal?: AbortSignal | undefined },
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    // agent false: one connection per request, closed after it (gateways' HTTP servers are
    // small and often mishandle keep-alive; and no idle socket outlives the exchange).
    const req = httpRequest(
      url,
      {
        method: options.method ?? 'GET',
        headers: { Connection: 'close', ...options.headers },
        agent: false,
        timeout: HTTP_TIMEOUT_MS,
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_HTTP_BYTES) {
            req.destroy(new ClawpeerError('PROTOCOL', `UPnP: answer from ${url} larger than ${MAX_HTTP_BYTES} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
            localAddress: res.socket?.localAddress ?? '',
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () =>
      req.destroy(new ClawpeerError('TIMEOUT', `UPnP: ${url} did not answer in ${HTTP_TIMEOUT_MS} ms`)),
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

const tag = (xml: string, name: string): string | undefined =>
  new RegExp(`<(?:[\\w-]+:)?${name}\\b[^>]*>([\\s\\S]*?)</(?:[\\w-]+:)?${name}>`, 'i').exec(xml)?.[1]?.trim();

/** Reads a device description: the first WANIPConnection (or WANPPPConnection) service. */
async function describe(location: string, signal?: AbortSignal): Promise<IgdService | undefined> {
  const answer = await http(location, { signal });
  if (answer.status !== 200) return undefined;
  const base = tag(answer.body, 'URLBase') || location;
  const services = answer.body.match(/<service>[\s\S]*?<\/service>/gi) ?? [];
  // IP before PPP: a PPP service on a device that is not dialled up maps nothing.
  for (const kind of ['WANIPConnection', 'WANPPPConnection']) {
    for (const block of services) {
      const serviceType = tag(block, 'serviceType');
      const control = tag(block, 'controlURL');
      if (
        serviceType === undefined ||
        control === undefined ||
        !serviceType.startsWith(`urn:schemas-upnp-org:service:${kind}:`)
      )
        continue;
      return {
        location,
        serviceType,
        controlUrl: new URL(control, base).toString(),
        localAddress: answer.localAddress.replace(/^::ffff:/, ''),
      };
    }
  }
  return undefined;
}

const escapeXml = (s: string): string => s.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);

export class UpnpIgdClient {
  constructor(readonly service: IgdService) {}

  async externalAddress(signal?: AbortSignal): Promise<string> {
    const answer = await this.soap('GetExternalIPAddress', {}, signal);
    const address = tag(answer, 'NewExternalIPAddress');
    if (address === undefined || !/^\d{1,3}(\.\d{1,3}){3}$/.test(address))
      throw new ClawpeerError('PROTOCOL', `UPnP: gateway gave no usable external address (${String(address)})`);
    return address;
  }

  /** Maps external `externalPort` to this host's `internalPort`; lease 0 means until deleted. */
  async addPortMapping(
    protocol: 'udp' | 'tcp',
    externalPort: number,
    internalPort: number,
    leaseS: number,
    description: string,
    signal?: AbortSignal,
  ): Promise<void> {
    await this.soap(
      'AddPortMapping',
      {
        NewRemoteHost: '',
        NewExternalPort: String(externalPort),
        NewProtocol: protocol.toUpperCase(),
        NewInternalPort: String(internalPort),
        NewInternalClient: this.service.localAddress,
        NewEnabled: '1',
        NewPortMappingDescription: description,
        NewLeaseDuration: String(leaseS),
      },
      signal,
    );
  }

  async deletePortMapping(protocol: 'udp' | 'tcp', externalPort: number, signal?: AbortSignal): Promise<void> {
    await this.soap(
      'DeletePortMapping',
      { NewRemoteHost: '', NewExternalPort: String(externalPort), NewProtocol: protocol.toUpperCase() },
      signal,
    );
  }

  private async soap(action: string, args: Record<string, string>, signal?: AbortSignal): Promise<string> {
    const type = this.service.serviceType;
    const body =
      '<?xml version="1.0"?>\r\n<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/" s:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"><s:Body>' +
      `<u:${action} xmlns:u="${type}">` +
      Object.entries(args)
        .map(([k, v]) => `<${k}>${escapeXml(v)}</${k}>`)
        .join('') +
      `</u:${action}></s:Body></s:Envelope>\r\n`;
    const answer = await http(this.service.controlUrl, {
      method: 'POST',
      headers: {
        'Content-Type': 'text/xml; charset="utf-8"',
        SOAPAction: `"${type}#${action}"`,
        'Content-Length': String(Buffer.byteLength(body)),
      },
      body,
      signal,
    });
    if (answer.status === 200) return answer.body;
    const code = Number(tag(answer.body, 'errorCode') ?? NaN);
    if (Number.isInteger(code)) throw new UpnpError(code, tag(answer.body, 'errorDescription') ?? '', action);
    throw new ClawpeerError('UNREACHABLE', `UPnP ${action}: HTTP ${answer.status} from ${this.service.controlUrl}`);
  }
}
