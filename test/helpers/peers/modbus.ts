/**
 * Modbus peers built on `modbus-serial`'s own server (`ServerTCP`), with counters of the requests
 * they served, and framing adapters in front of it: modbus-serial ships servers for Modbus TCP
 * (MBAP) and RTU on a serial line only. For RTU over TCP, UDP and ASCII the request is re-framed
 * and served by the same ServerTCP (the Modbus logic stays the library's).
 */
import { createServer, Socket, type Server } from 'node:net';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { createRequire } from 'node:module';
import modbusSerial from 'modbus-serial';
import type { IServiceVector, ServerTCP as ServerTCPType } from 'modbus-serial/ServerTCP.js';
import { freePort } from '../util.js';

const require = createRequire(import.meta.url);
const crc16 = require('modbus-serial/utils/crc16.js') as (b: Buffer) => number;

const ServerTCP = (
  modbusSerial as unknown as { ServerTCP: new (v: IServiceVector, o: object) => ServerTCPType }
).ServerTCP;

/** A Modbus TCP server (modbus-serial's ServerTCP) over plain arrays, counting the requests it served. */
export class ModbusPeer {
  readonly holding: Uint16Array;
  readonly input: Uint16Array;
  readonly coils: boolean[];
  readonly discrete: boolean[];
  /** Read requests served, by function: 1 coils, 2 discrete inputs, 3 holding, 4 input registers. */
  readonly reads = { 1: 0, 2: 0, 3: 0, 4: 0 };
  #server: ServerTCPType | undefined;
  port = 0;

  constructor(size = 65536) {
    this.holding = new Uint16Array(size);
    this.input = new Uint16Array(size);
    this.coils = new Array<boolean>(size).fill(false);
    this.discrete = new Array<boolean>(size).fill(false);
  }

  get vector(): IServiceVector {
    const check = (a: number, n: number) => {
      if (a + n > this.holding.length) throw { modbusErrorCode: 2, msg: 'illegal address' };
    };
    return {
      getHoldingRegister: (a: number) => (this.reads[3]++, check(a, 1), this.holding[a]!),
      getMultipleHoldingRegisters: (a: number, n: number) => (
        this.reads[3]++,
        check(a, n),
        Array.from(this.holding.subarray(a, a + n))
      ),
      getInputRegister: (a: number) => (this.reads[4]++, this.input[a]!),
      getMultipleInputRegisters: (a: number, n: number) => (
        this.reads[4]++,
        Array.from(this.input.subarray(a, a + n))
      ),
      getCoil: (a: number) => this.coils[a]!,
      getDiscreteInput: (a: number) => this.discrete[a]!,
      setRegister: (a: number, v: number) => {
        this.holding[a] = v;
      },
      setRegisterArray: (a: number, v: number[]) => {
        this.holding.set(v, a);
      },
      setCoil: (a: number, v: boolean) => {
        this.coils[a] = v;
      },
    };
  }

  async start(port?: number): Promise<number> {
    this.port = port ?? this.port ?? 0;
    if (!this.port) this.port = await freePort();
    const server = new ServerTCP(this.vector, { host: '127.0.0.1', port: this.port, unitID: 1 });
    server.on('socketError', () => undefined);
    await new Promise<void>((resolve, reject) => {
      server.on('initialized', () => resolve());
      server.on('serverError', reject);
    });
    this.#server = server;
    return this.port;
  }

  /** Stops the server and drops its connections ("pulls the peer away"). */
  async stop(): Promise<void> {
    const s = this.#server;
    this.#server = undefined;
    if (s) await new Promise<void>((r) => s.close(() => r()));
  }
}

/** Sends `unit + PDU` to the ServerTCP of `peer` over MBAP and answers `unit + PDU`. */
export class MbapForwarder {
  #sock: Socket | undefined;
  #tid = 0;
  #buf = Buffer.alloc(0);
  readonly #waiting = new Map<number, (frame: Buffer) => void>();

  constructor(private readonly peer: ModbusPeer) {}

  async #socket(): Promise<Socket> {
    if (this.#sock && !this.#sock.destroyed) return this.#sock;
    const s = new Socket();
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject);
      s.connect(this.peer.port, '127.0.0.1', () => resolve());
    });
    s.on('error', () => undefined);
    s.on('data', (d) => {
      this.#buf = Buffer.concat([this.#buf, d]);
      while (this.#buf.length >= 7) {
        const len = this.#buf.readUInt16BE(4);
        if (this.#buf.length < 6 + len) break;
        const tid = this.#buf.readUInt16BE(0);
        const frame = this.#buf.subarray(6, 6 + len);
        this.#buf = this.#buf.subarray(6 + len);
        this.#waiting.get(tid)?.(Buffer.from(frame));
        this.#waiting.delete(tid);
      }
    });
    this.#sock = s;
    return s;
  }

  async send(unitPdu: Buffer): Promise<Buffer> {
    const s = await this.#socket();
    const tid = (this.#tid = (this.#tid + 1) & 0xffff);
    const head = Buffer.alloc(6);
    head.writeUInt16BE(tid, 0);
    head.writeUInt16BE(unitPdu.length, 4);
    return new Promise((resolve) => {
      this.#waiting.set(tid, resolve);
      s.write(Buffer.concat([head, unitPdu]));
    });
  }

  close(): void {
    this.#sock?.destroy();
  }
}

/** Length of an RTU request frame from its start, or 0 when more bytes are needed. */
function rtuRequestLength(b: Buffer): number {
  if (b.length < 2) return 0;
  const fc = b[1]!;
  if (fc === 15 || fc === 16) return b.length < 7 ? 0 : 9 + b[6]!;
  return 8;
}

function withCrc(frame: Buffer): Buffer {
  const out = Buffer.alloc(frame.length + 2);
  frame.copy(out);
  out.writeUInt16LE(crc16(frame), frame.length);
  return out;
}

/** Modbus RTU frames (with CRC) over TCP. */
export class RtuOverTcpPeer {
  #server: Server | undefined;
  readonly #sockets = new Set<Socket>();
  port = 0;
  constructor(readonly inner: ModbusPeer) {}

  async start(): Promise<number> {
    if (!this.port) this.port = await freePort();
    const fwd = new MbapForwarder(this.inner);
    const server = createServer((sock) => {
      this.#sockets.add(sock);
      sock.on('close', () => this.#sockets.delete(sock));
      sock.on('error', () => undefined);
      let buf = Buffer.alloc(0);
      sock.on('data', async (d) => {
        buf = Buffer.concat([buf, d]);
        for (;;) {
          const n = rtuRequestLength(buf);
          if (n === 0 || buf.length < n) return;
          const frame = buf.subarray(0, n);
          buf = buf.subarray(n);
          if (frame.readUInt16LE(n - 2) !== crc16(frame.subarray(0, n - 2))) continue;
          const reply = await fwd.send(Buffer.from(frame.subarray(0, n - 2)));
          if (!sock.destroyed) sock.write(withCrc(reply));
        }
      });
    });
    server.on('close', () => fwd.close());
    await new Promise<void>((r) => server.listen(this.port, '127.0.0.1', r));
    this.#server = server;
    return this.port;
  }

  async stop(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    const s = this.#server;
    this.#server = undefined;
    if (s) await new Promise((r) => s.close(r));
  }
}

/** Modbus TCP frames (MBAP) in UDP datagrams. */
export class UdpPeer {
  #socket: UdpSocket | undefined;
  port = 0;
  constructor(readonly inner: ModbusPeer) {}

  async start(): Promise<number> {
    if (!this.port) this.port = await freePort();
    const fwd = new MbapForwarder(this.inner);
    const sock = createSocket('udp4');
    sock.on('message', async (msg, rinfo) => {
      if (msg.length < 8) return;
      const reply = await fwd.send(Buffer.from(msg.subarray(6)));
      const head = Buffer.from(msg.subarray(0, 6));
      head.writeUInt16BE(reply.length, 4);
      sock.send(Buffer.concat([head, reply]), rinfo.port, rinfo.address);
    });
    sock.on('close', () => fwd.close());
    await new Promise<void>((r) => sock.bind(this.port, '127.0.0.1', r));
    this.#socket = sock;
    return this.port;
  }

  async stop(): Promise<void> {
    const s = this.#socket;
    this.#socket = undefined;
    if (s) await new Promise<void>((r) => s.close(() => r()));
  }
}
