/**
 * The Modbus drivers, on the `modbus-serial` client: Modbus TCP, RTU over TCP, UDP, and RTU and
 * ASCII on a serial line. Coils (CO), discrete inputs (DI), holding (HR) and input (IR)
 * registers; tags at neighbouring addresses are read in blocks of at most
 * `maxRegistersPerRequest` registers (2,000 bits for CO and DI), with holes of up to 8 unused
 * registers read through. Requests go one at a time on a connection (serial lines and many
 * gateways need it), each with `requestTimeoutMs` and `retryRequestCount` retries.
 */
import type { ModbusRTU as Client } from 'modbus-serial/ModbusRTU.js';
import { coalesce, type Block } from '../blocks.js';
import { decodeWords, encodeWords, wordCount, type ByteOrder } from '../convert.js';
import { errorText } from '../engine.js';
import {
  ReadFailure,
  type DeviceSpec,
  type DriverContext,
  type DriverFactory,
  type DriverSession,
  type ReadResult,
  type TagSpec,
} from '../types.js';

export type ModbusTransport = 'tcp' | 'rtu-over-tcp' | 'udp' | 'rtu' | 'ascii';

const MAX_GAP = 8;
const MAX_BITS = 2000;
/** Modbus parity of the five Modbus serial drivers (part 2.4): 0 None, 1 Even, 2 Odd. */
const PARITY = ['none', 'even', 'odd'] as const;

/**
 * A read plan: per area, blocks of tag indexes (into the tags the plan was made for), and each
 * tag's first address. Numbers in typed arrays, not an object per tag: a large site has 100,000.
 */
interface Plan {
  starts: Int32Array;
  areas: Array<{ register: string; blocks: Block<number>[] }>;
}

/**
 * The client class (a CommonJS export, typed as the package's default), loaded on first use: the
 * library pulls in serialport's native binding, a second of start-up the edge need not pay for
 * devices it does not have.
 */
let loaded: Promise<new () => Client> | undefined;
const loadClient = () =>
  (loaded ??= import('modbus-serial').then((m) => m.default as unknown as new () => Client));

class ModbusSession implements DriverSession {
  readonly #device: DeviceSpec;
  readonly #ctx: DriverContext;
  readonly #transport: ModbusTransport;
  readonly #maxRegs: number;
  readonly #timeout: number;
  readonly #retries: number;
  readonly #plans = new WeakMap<readonly TagSpec[], Plan>();
  #client: Client | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #closed = false;

  constructor(device: DeviceSpec, ctx: DriverContext, transport: ModbusTransport) {
    this.#device = device;
    this.#ctx = ctx;
    this.#transport = transport;
    this.#maxRegs = Number(device.props.maxRegistersPerRequest ?? 100) || 100;
    this.#timeout = Number(device.props.requestTimeoutMs ?? 1500) || 1500;
    this.#retries = Number(device.props.retryRequestCount ?? 0) || 0;
  }

  async connect(): Promise<void> {
    const p = this.#device.props;
    const ModbusRTU = await loadClient();
    const client = new ModbusRTU();
    client.on('error', () => undefined);
    const port = Number(p.port ?? 502);
    const serial = () => ({
      baudRate: Number(p.baudRate ?? 9600),
      dataBits: Number(p.dataBits ?? 8) as 7 | 8,
      stopBits: Number(p.stopBits ?? 1) as 1 | 2,
      parity: PARITY[Number(p.parity ?? 0)] ?? 'none',
    });
    const what =
      this.#transport === 'rtu' || this.#transport === 'ascii' ? p.serialPort : `${p.host}:${port}`;
    try {
      switch (this.#transport) {
        case 'tcp':
          await client.connectTCP(p.host!, { port, timeout: this.#timeout } as never);
          break;
        case 'rtu-over-tcp':
          // Raw RTU frames with their CRC on the socket (modbus-serial's "telnet" port), as serial-to-Ethernet converters carry them.
          await client.connectTelnet(p.host!, { port } as never);
          break;
        case 'udp':
          await client.connectUDP(p.host!, { port } as never);
          break;
        case 'rtu':
          await client.connectRTUBuffered(p.serialPort!, serial() as never);
          break;
        case 'ascii':
          await client.connectAsciiSerial(p.serialPort!, serial() as never);
          // modbus-serial's ASCII port leaves its SerialPort's errors unheard (its RTU port forwards
          // them): a line that goes away (EIO on a write) would be an uncaught exception.
          innerSerialPort(client)?.on('error', (err: Error) => {
            if (!this.#closed) this.#ctx.lost(`serial line ${what}: ${errorText(err)}`);
          });
          break;
      }
    } catch (err) {
      client.close(() => undefined);
      throw new Error(`cannot connect to ${what}: ${errorText(err)}`);
    }
    client.setID(Number(p.unitId ?? 1));
    client.setTimeout(this.#timeout);
    client.on('close', () => {
      if (!this.#closed) this.#ctx.lost(`connection to ${what} closed`);
    });
    this.#client = client;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const c = this.#client;
    this.#client = undefined;
    if (c)
      await new Promise<void>((resolve) => {
        try {
          c.close(() => resolve());
        } catch {
          resolve();
        }
        setTimeout(resolve, 500).unref();
      });
  }

  /** Runs requests one at a time on the connection. */
  #serial<T>(fn: (client: Client) => Promise<T>): Promise<T> {
    const run = this.#queue.then(async () => {
      const c = this.#client;
      if (!c) throw new Error('not connected');
      let attempt = 0;
      for (;;) {
        try {
          return await fn(c);
        } catch (err) {
          if (!isTimeout(err) || attempt++ >= this.#retries) throw err;
        }
      }
    });
    this.#queue = run.catch(() => undefined);
    return run;
  }

  #plan(tags: readonly TagSpec[]): Plan {
    let plan = this.#plans.get(tags);
    if (plan) return plan;
    const byArea = new Map<string, number[]>();
    const starts = new Int32Array(tags.length);
    const counts = new Int32Array(tags.length);
    tags.forEach((tag, index) => {
      starts[index] = Number(tag.props.address ?? 0);
      counts[index] =
        tag.register === 'CO' || tag.register === 'DI'
          ? 1
          : wordCount(tag.valueType, Number(tag.props.length ?? 10));
      const list = byArea.get(tag.register) ?? [];
      list.push(index);
      byArea.set(tag.register, list);
    });
    plan = {
      starts,
      areas: [...byArea].map(([register, items]) => {
        const bits = register === 'CO' || register === 'DI';
        return {
          register,
          blocks: coalesce(
            items,
            (i) => ({ start: starts[i]!, count: counts[i]! }),
            bits ? Math.min(this.#maxRegs * 16, MAX_BITS) : this.#maxRegs,
            bits ? MAX_GAP * 16 : MAX_GAP,
          ),
        };
      }),
    };
    this.#plans.set(tags, plan);
    return plan;
  }

  async read(
    tags: readonly TagSpec[],
    early?: (index: number, result: ReadResult) => void,
  ): Promise<ReadResult[]> {
    const plan = this.#plan(tags);
    const out = new Array<ReadResult>(tags.length);
    for (const area of plan.areas) {
      for (const block of area.blocks) {
        try {
          if (area.register === 'CO' || area.register === 'DI') {
            const r = await this.#serial((c) =>
              area.register === 'CO'
                ? c.readCoils(block.start, block.count)
                : c.readDiscreteInputs(block.start, block.count),
            );
            for (const i of block.items) {
              out[i] = r.data[plan.starts[i]! - block.start] ?? null;
              early?.(i, out[i]!);
            }
          } else {
            const r = await this.#serial((c) =>
              area.register === 'HR'
                ? c.readHoldingRegisters(block.start, block.count)
                : c.readInputRegisters(block.start, block.count),
            );
            for (const i of block.items) {
              out[i] = this.#decode(tags[i]!, r.buffer, (plan.starts[i]! - block.start) * 2);
              early?.(i, out[i]!);
            }
          }
        } catch (err) {
          // No answer (after the retries) or no connection: the device is away, not one block.
          if (!this.#client || !this.#client.isOpen || isTimeout(err))
            throw new Error(modbusError(err, area.register, block.start, block.count));
          const failure = new ReadFailure(modbusError(err, area.register, block.start, block.count));
          for (const i of block.items) out[i] = failure;
        }
      }
    }
    return out;
  }

  #decode(t: TagSpec, buf: Buffer, offset: number): ReadResult {
    try {
      return decodeWords(buf, offset, t.valueType, (t.props.byteOrder ?? 'ABCD') as ByteOrder, {
        bit: Number(t.props.bit ?? 0),
        length: Number(t.props.length ?? 10),
      });
    } catch (err) {
      return new ReadFailure(`cannot decode ${t.valueType}: ${errorText(err)}`);
    }
  }

  async write(tag: TagSpec, value: unknown): Promise<void> {
    const address = Number(tag.props.address ?? 0);
    const order = (tag.props.byteOrder ?? 'ABCD') as ByteOrder;
    try {
      switch (tag.register) {
        case 'CO':
          await this.#serial((c) => c.writeCoil(address, value as boolean));
          return;
        case 'HR': {
          if (tag.valueType === 'bit') {
            const bit = Number(tag.props.bit ?? 0);
            await this.#serial(async (c) => {
              const r = await c.readHoldingRegisters(address, 1);
              const swapped = order === 'BADC' || order === 'DCBA';
              let w = swapped ? r.buffer.readUInt16LE(0) : r.buffer.readUInt16BE(0);
              w = value ? w | (1 << bit) : w & ~(1 << bit) & 0xffff;
              if (swapped) w = ((w & 0xff) << 8) | (w >> 8);
              await c.writeRegister(address, w);
            });
            return;
          }
          const words = encodeWords(value, tag.valueType, order, { length: Number(tag.props.length ?? 10) });
          await this.#serial(async (c) => {
            if (words.length === 1) await c.writeRegister(address, words[0]!);
            else await c.writeRegisters(address, words);
          });
          return;
        }
        default:
          throw new Error(`register ${tag.register} is read-only; write to CO or HR`);
      }
    } catch (err) {
      throw new Error(modbusError(err, tag.register, address, 1, 'write'));
    }
  }
}

/** The SerialPort inside modbus-serial's ASCII port (a private field: absent, nothing is heard). */
function innerSerialPort(
  client: Client,
): { on(event: 'error', fn: (err: Error) => void): unknown } | undefined {
  const port = (client as unknown as { _port?: { _client?: unknown } })._port?._client;
  return port && typeof (port as { on?: unknown }).on === 'function'
    ? (port as { on(event: 'error', fn: (err: Error) => void): unknown })
    : undefined;
}

const isTimeout = (err: unknown) => (err as { name?: string }).name === 'TransactionTimedOutError';

function modbusError(err: unknown, register: string, start: number, count: number, op = 'read'): string {
  const text = errorText(err);
  return `${op} ${register} ${start}${count > 1 ? `..${start + count - 1}` : ''}: ${text}`;
}

const factory = (key: string, transport: ModbusTransport): DriverFactory => ({
  key,
  create: (device, ctx) => new ModbusSession(device, ctx, transport),
});

export const modbusDrivers: DriverFactory[] = [
  factory('modbus-tcp', 'tcp'),
  factory('modbus-rtu-over-tcp', 'rtu-over-tcp'),
  factory('modbus-udp', 'udp'),
  factory('modbus-rtu', 'rtu'),
  factory('modbus-ascii', 'ascii'),
];
