/**
 * Test support for acquisition: an edge with a NATS client on its gateway and a GraphQL helper,
 * and Modbus peers built on `modbus-serial`'s own server (`ServerTCP`), with counters of the
 * requests they served.
 */
import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { spawnSync } from 'node:child_process';
import { connect, type NatsConnection } from 'nats';
import modbusSerial from 'modbus-serial';
import type { IServiceVector, ServerTCP as ServerTCPType } from 'modbus-serial/ServerTCP.js';
import { bootstrapAdmin, clientToken, graphql, startTestEdge, type TestEdge } from '../../helpers/edge.js';

export interface AcqEdge {
  t: TestEdge;
  auth: string;
  nc: NatsConnection;
  /** Runs a GraphQL request on /devicehub/v2 and asserts it had no errors. */
  ok(query: string, variables?: Record<string, unknown>): Promise<any>;
  createDevice(
    name: string,
    driver: string,
    props?: Record<string, string>,
    extra?: Record<string, unknown>,
  ): Promise<string>;
  createTags(deviceId: string, tags: Array<Record<string, unknown>>): Promise<string[]>;
  tagStates(ids: string[]): Promise<Array<{ State: string; Reason: string }>>;
  stop(): Promise<void>;
}

export async function startAcqEdge(): Promise<AcqEdge> {
  // Reconnect attempts at most 2 s apart, so that restored peers are seen quickly.
  const t = await startTestEdge({ logLevel: 'error', acquisitionBackoffMax: 2000 });
  const admin = await bootstrapAdmin(t);
  const auth = `Bearer ${(await clientToken(t, admin)).token}`;
  const nc = await connect({ servers: t.edge.datahub.gateway!.url });
  const ok = async (query: string, variables?: Record<string, unknown>) => {
    const r = await graphql(t, '/devicehub/v2', auth, query, variables);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.errors, undefined, JSON.stringify(r.body.errors));
    return r.body.data;
  };
  return {
    t,
    auth,
    nc,
    ok,
    async createDevice(name, driver, props = {}, extra = {}) {
      const d = await ok(`mutation($in: CreateDeviceRequest!) { CreateDevice(input: $in) { ID } }`, {
        in: {
          Name: name,
          DriverID: driver,
          Properties: Object.entries(props).map(([Key, Value]) => ({ Key, Value })),
          ...extra,
        },
      });
      return d.CreateDevice.ID as string;
    },
    async createTags(deviceId, tags) {
      const d = await ok(`mutation($in: [CreateRegisterRequest!]!) { CreateRegisters(input: $in) { ID } }`, {
        in: tags.map((tag) => ({
          DeviceID: deviceId,
          ...tag,
          Properties: Object.entries((tag.Properties as Record<string, string>) ?? {}).map(
            ([Name, Value]) => ({ Name, Value }),
          ),
        })),
      });
      return (d.CreateRegisters as Array<{ ID: string }>).map((r) => r.ID);
    },
    async tagStates(ids) {
      const d = await ok(`query($ids: [ID!]!) { GetTagStatus(IDs: $ids) { State Reason } }`, { ids });
      return d.GetTagStatus;
    },
    async stop() {
      await nc.close().catch(() => undefined);
      await t.stop();
    },
  };
}

/** The next message on `subject` whose JSON payload satisfies `pred`. */
export function nextMessage(
  nc: NatsConnection,
  subject: string,
  pred: (payload: any) => boolean = () => true,
  ms = 5000,
): Promise<any> {
  return new Promise((resolve, reject) => {
    const sub = nc.subscribe(subject);
    const timer = setTimeout(() => {
      sub.unsubscribe();
      reject(new Error(`no matching message on ${subject} within ${ms} ms`));
    }, ms);
    void (async () => {
      for await (const m of sub) {
        let p: unknown;
        try {
          p = m.json();
        } catch {
          p = m.string();
        }
        if (pred(p)) {
          clearTimeout(timer);
          sub.unsubscribe();
          resolve(p);
          return;
        }
      }
    })();
  });
}

/** Polls `fn` until it answers true. */
export async function eventually(
  fn: () => Promise<boolean> | boolean,
  ms = 5000,
  what = 'condition',
): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > until) throw new Error(`${what} not reached within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

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

/** Whether a binary is on the PATH; a test that needs it skips (and fails on CI) when it is not. */
export function have(binary: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${binary}`]).status === 0;
}

export function skipReason(binary: string): string | false {
  if (have(binary)) return false;
  if (process.env.CI === 'true') throw new Error(`${binary} is required on CI`);
  return `${binary} is not installed`;
}

// ---------------------------------------------------------------------------------------------
// Framing adapters in front of a ModbusPeer: modbus-serial ships servers for Modbus TCP (MBAP)
// and RTU on a serial line only. For RTU over TCP, UDP and ASCII the request is re-framed and
// served by the same ServerTCP (the Modbus logic stays the library's).

import { Socket, type Server } from 'node:net';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const crc16 = require('modbus-serial/utils/crc16.js') as (b: Buffer) => number;

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

// ---------------------------------------------------------------------------------------------
// Serial lines: a socat pseudo-terminal pair, modbus-serial's ServerSerial (RTU) on one end, and
// an ASCII adapter (ASCII frames re-framed to the ServerTCP of a ModbusPeer).

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SerialPort } from 'serialport';
import type { ServerSerial as ServerSerialType } from 'modbus-serial/ServerSerial.js';

export class PtyPair {
  readonly dir = mkdtempSync(join(tmpdir(), 'mw-pty-'));
  readonly a = join(this.dir, 'a');
  readonly b = join(this.dir, 'b');
  #proc: ChildProcess | undefined;

  async start(): Promise<void> {
    this.#proc = spawn('socat', [`pty,raw,echo=0,link=${this.a}`, `pty,raw,echo=0,link=${this.b}`], {
      stdio: 'ignore',
    });
    await eventually(() => existsSync(this.a) && existsSync(this.b), 5000, 'socat pty pair');
  }

  async stop(): Promise<void> {
    const p = this.#proc;
    if (p && p.exitCode === null) {
      const done = new Promise((r) => p.once('exit', r));
      p.kill();
      await done;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

const ServerSerial = (
  modbusSerial as unknown as { ServerSerial: new (v: IServiceVector, o: object) => ServerSerialType }
).ServerSerial;

/** modbus-serial's RTU server on a serial device. */
export class RtuSerialPeer {
  #server: ServerSerialType | undefined;
  constructor(
    readonly peer: ModbusPeer,
    readonly path: string,
  ) {}

  async start(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      const server = new ServerSerial(this.peer.vector, {
        path: this.path,
        baudRate: 9600,
        unitID: 1,
        openCallback: (err: Error | null) => (err ? reject(err) : resolve()),
      });
      server.on('error', () => undefined);
      this.#server = server;
    });
  }

  async stop(): Promise<void> {
    const s = this.#server;
    this.#server = undefined;
    if (s) await new Promise<void>((r) => s.close(() => r()));
  }
}

const lrc = (b: Buffer) => {
  let sum = 0;
  for (const x of b) sum = (sum + x) & 0xff;
  return -sum & 0xff;
};

/** Modbus ASCII (`:` hex LRC CR LF) on a serial device, served by the ServerTCP of a ModbusPeer. */
export class AsciiSerialPeer {
  #port: SerialPort | undefined;
  constructor(
    readonly peer: ModbusPeer,
    readonly path: string,
  ) {}

  async start(): Promise<void> {
    const fwd = new MbapForwarder(this.peer);
    const port = new SerialPort({ path: this.path, baudRate: 9600, dataBits: 7, autoOpen: false });
    await new Promise<void>((resolve, reject) => port.open((err) => (err ? reject(err) : resolve())));
    let text = '';
    port.on('data', async (d: Buffer) => {
      text += d.toString('latin1');
      for (;;) {
        const start = text.indexOf(':');
        const end = text.indexOf('\r\n', start);
        if (start < 0 || end < 0) return;
        const frame = Buffer.from(text.slice(start + 1, end), 'hex');
        text = text.slice(end + 2);
        if (frame.length < 3 || lrc(frame.subarray(0, -1)) !== frame[frame.length - 1]) continue;
        const reply = await fwd.send(Buffer.from(frame.subarray(0, -1)));
        const out = Buffer.concat([reply, Buffer.from([lrc(reply)])]);
        if (port.isOpen) port.write(`:${out.toString('hex').toUpperCase()}\r\n`);
      }
    });
    port.on('close', () => fwd.close());
    this.#port = port;
  }

  async stop(): Promise<void> {
    const p = this.#port;
    this.#port = undefined;
    if (p?.isOpen) await new Promise<void>((r) => p.close(() => r()));
  }
}

/** Runs a DeviceHub browse task to the end; answers every item (folders and leaves) by path. */
export async function browseAll(e: AcqEdge, deviceId: string, ms = 20_000): Promise<Map<string, any>> {
  const task = (
    await e.ok(`mutation($in: CreateBrowseTaskRequest!) { CreateBrowseTask(input: $in) { ID State } }`, {
      in: { DeviceID: deviceId },
    })
  ).CreateBrowseTask;
  let state = task.State;
  await eventually(
    async () => {
      state = (await e.ok(`query($id: ID!) { GetBrowseTask(ID: $id) { State Error } }`, { id: task.ID }))
        .GetBrowseTask;
      return state.State !== 'Running';
    },
    ms,
    'browse task done',
  );
  assert.equal(state.State, 'Done', JSON.stringify(state));
  const items = new Map<string, any>();
  const walk = async (path: string | null) => {
    const list = (
      await e.ok(
        `query($in: ListBrowseTaskItemsRequest!) { ListBrowseTaskItems(input: $in) { Items { Path Name IsFolder RegisterName ValueType Properties { Name Value } } } }`,
        { in: { TaskID: task.ID, Path: path, Limit: 1000 } },
      )
    ).ListBrowseTaskItems.Items;
    for (const it of list) {
      items.set(it.Path, it);
      if (it.IsFolder) await walk(it.Path);
    }
  };
  await walk(null);
  return Object.assign(items, { taskId: task.ID as string });
}

/** A Mosquitto broker of its own on a fixed free port (so that it can be stopped and restarted). */
export class Mosquitto {
  #proc: ChildProcess | undefined;
  port = 0;

  async start(): Promise<number> {
    if (!this.port) this.port = await freePort();
    const bin = existsSync('/usr/sbin/mosquitto') ? '/usr/sbin/mosquitto' : 'mosquitto';
    this.#proc = spawn(bin, ['-p', String(this.port)], { stdio: 'ignore' });
    const port = this.port;
    await eventually(
      () =>
        new Promise<boolean>((resolve) => {
          const s = new Socket();
          s.once('error', () => resolve(false));
          s.connect(port, '127.0.0.1', () => {
            s.destroy();
            resolve(true);
          });
        }),
      5000,
      'mosquitto listening',
    );
    return this.port;
  }

  async stop(): Promise<void> {
    const p = this.#proc;
    this.#proc = undefined;
    if (p && p.exitCode === null) {
      const done = new Promise((r) => p.once('exit', r));
      p.kill();
      await done;
    }
  }
}
