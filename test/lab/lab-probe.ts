// A small UDP tool the NAT lab runs inside its namespaces (node lab-probe.js MODE ...):
//   reflect HOST PORT       on the public segment: PORT and PORT+1 answer each datagram with the
//                           address they saw it from (JSON), and STUN binding requests with
//                           XOR-MAPPED-ADDRESS (what miniupnpd asks); asked to `poke`, PORT+2
//                           (never contacted) sends to an address: an unsolicited packet.
//   probe HOST PORT         in a home: from one socket, asks PORT and PORT+1 what they saw (the
//                           mapping per destination), then has PORT+2 poke the first mapping;
//                           prints {local, mapA, mapB, unsolicited} as one JSON line.
//   send HOST PORT TEXT     sends TEXT five times, 100 ms apart (a datagram from outside).
// Prints JSON lines on stdout; exits 2 on bad arguments.
import { createSocket, type Socket } from 'node:dgram';

const [mode, host, portText, text] = process.argv.slice(2);
const port = Number(portText);
if (host === undefined || !Number.isInteger(port) || port <= 0 || port > 65533) {
  process.stderr.write('usage: lab-probe.js reflect|probe|send HOST PORT [TEXT]\n');
  process.exit(2);
}

function bind(socketPort: number, address?: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = createSocket('udp4');
    socket.once('error', reject);
    socket.bind(socketPort, address, () => resolve(socket));
  });
}

/** A STUN Binding Success answer (RFC 5389) carrying XOR-MAPPED-ADDRESS and MAPPED-ADDRESS. */
function stunAnswer(request: Buffer, address: string, fromPort: number): Buffer {
  const ip = address.split('.').map(Number);
  const out = Buffer.alloc(20 + 12 + 12);
  out.writeUInt16BE(0x0101, 0);
  out.writeUInt16BE(24, 2);
  request.copy(out, 4, 4, 20); // cookie and transaction id
  // XOR-MAPPED-ADDRESS: port and address xored with the bytes 4..7 as the request carried them.
  out.writeUInt16BE(0x0020, 20);
  out.writeUInt16BE(8, 22);
  out[25] = 1;
  out.writeUInt16BE(fromPort ^ out.readUInt16BE(4), 26);
  for (let i = 0; i < 4; i++) out[28 + i] = ip[i]! ^ out[4 + i]!;
  out.writeUInt16BE(0x0001, 32);
  out.writeUInt16BE(8, 34);
  out[37] = 1;
  out.writeUInt16BE(fromPort, 38);
  for (let i = 0; i < 4; i++) out[40 + i] = ip[i]!;
  return out;
}

async function reflect(): Promise<void> {
  const [a, b, c] = await Promise.all([bind(port, host), bind(port + 1, host), bind(port + 2, host)]);
  for (const socket of [a, b]) {
    socket.on('message', (msg, from) => {
      if (msg.length >= 20 && msg.readUInt16BE(0) === 0x0001) {
        socket.send(stunAnswer(msg, from.address, from.port), from.port, from.address);
        return;
      }
      let request: { op?: string; to?: string };
      try {
        request = JSON.parse(msg.toString()) as { op?: string; to?: string };
      } catch {
        return;
      }
      if (request.op === 'seen')
        socket.send(JSON.stringify({ seen: `${from.address}:${from.port}` }), from.port, from.address);
      if (request.op === 'poke' && typeof request.to === 'string') {
        const [toHost, toPort] = request.to.split(':');
        c.send(JSON.stringify({ poke: true }), Number(toPort), toHost);
      }
    });
  }
  process.stdout.write(JSON.stringify({ event: 'listening', host, port }) + '\n');
}

/** Sends `request` until an answer comes (three tries); the answer's JSON, or undefined. */
function ask(socket: Socket, request: object, toPort: number): Promise<Record<string, unknown> | undefined> {
  return new Promise((resolve) => {
    let tries = 0;
    const send = (): void => {
      if (tries++ === 3) {
        finish(undefined);
        return;
      }
      socket.send(JSON.stringify(request), toPort, host);
      timer = setTimeout(send, 300);
    };
    const onMessage = (msg: Buffer): void => {
      try {
        const answer = JSON.parse(msg.toString()) as Record<string, unknown>;
        if ('seen' in answer) finish(answer);
      } catch {
        // not ours
      }
    };
    const finish = (answer: Record<string, unknown> | undefined): void => {
      clearTimeout(timer);
      socket.off('message', onMessage);
      resolve(answer);
    };
    let timer: NodeJS.Timeout;
    socket.on('message', onMessage);
    send();
  });
}

async function probe(): Promise<void> {
  const socket = await bind(0);
  const mapA = (await ask(socket, { op: 'seen' }, port))?.['seen'];
  const mapB = (await ask(socket, { op: 'seen' }, port + 1))?.['seen'];
  const unsolicited = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 700);
    socket.on('message', (msg) => {
      if (msg.toString().includes('"poke"')) {
        clearTimeout(timer);
        resolve(true);
      }
    });
    if (typeof mapA === 'string') socket.send(JSON.stringify({ op: 'poke', to: mapA }), port, host);
  });
  process.stdout.write(
    JSON.stringify({ local: socket.address().port, mapA: mapA ?? null, mapB: mapB ?? null, unsolicited }) + '\n',
  );
  socket.close();
}

async function send(): Promise<void> {
  const socket = await bind(0);
  for (let i = 0; i < 5; i++) {
    socket.send(text ?? 'hello', port, host);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  socket.close();
}

if (mode === 'reflect') await reflect();
else if (mode === 'probe') await probe();
else if (mode === 'send') await send();
else {
  process.stderr.write(`lab-probe.js: unknown mode ${String(mode)}\n`);
  process.exit(2);
}
