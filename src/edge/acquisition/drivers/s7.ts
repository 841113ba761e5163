/**
 * The Siemens S7 driver (ISO-on-TCP, S7-300/400/1200/1500 with PUT/GET allowed), on the
 * `node-snap7` client (snap7, native, loaded on first use). Areas DB, M, I, Q, T and C; the tags
 * due together are read in as few requests as the PDU negotiated at connect allows (see
 * `s7-plan.ts`); requests go one at a time on a connection. A TCP or ISO error counts as the
 * device being away (reconnect after `ReconnectInterval` seconds); an item the CPU refuses (no
 * such DB, out of range) fails only its tags.
 */
import { createRequire } from 'node:module';
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
import type { BrowseNode } from '../../devicehub/index.js';
import {
  AREA,
  WL,
  decodeS7,
  encodeS7,
  isCell,
  parseBrowseAreas,
  planReads,
  type AreaName,
  type ReadItem,
  type ReadPlan,
} from './s7-plan.js';

type Cb<T> = (err: number | null, result: T) => void;
interface MultiVar {
  Area: number;
  WordLen: number;
  DBNumber?: number;
  Start: number;
  Amount: number;
  Data?: Buffer;
}
/** The part of snap7's S7Client this driver uses. */
export interface Snap7Client {
  SetParam(param: number, value: number): boolean;
  ConnectTo(ip: string, rack: number, slot: number, cb: (err: number | null) => void): void;
  Disconnect(): boolean;
  Connected(): boolean;
  PDULength(): number | false;
  ErrorText(code: number): string;
  ReadArea(area: number, db: number, start: number, amount: number, wordLen: number, cb: Cb<Buffer>): void;
  WriteArea(
    area: number,
    db: number,
    start: number,
    amount: number,
    wordLen: number,
    buf: Buffer,
    cb: (err: number | null) => void,
  ): void;
  ReadMultiVars(vars: MultiVar[], cb: Cb<Array<{ Result: number; Data: Buffer | null }>>): void;
}
interface Snap7 {
  S7Client: new () => Snap7Client;
}

/** snap7 parameter numbers (`S7Client.RemotePort`...). */
const P_REMOTE_PORT = 2;
const P_PING_TIMEOUT = 3;
const P_SEND_TIMEOUT = 4;
const P_RECV_TIMEOUT = 5;
/** Calls a run longer than one PDU is read in (each of whole PDU-sized requests). */
const LARGE_CALLS = 4;
/** Connections to one CPU at most (`connections`): each takes a thread of libuv's pool while it waits. */
const MAX_CONNECTIONS = 4;
/** snap7's bit word length, for writing one bit. */
const WL_BIT = 0x01;

let loaded: Snap7 | undefined;
/** The native addon, loaded on first use (a CommonJS package). */
export function snap7(): Snap7 {
  return (loaded ??= createRequire(import.meta.url)('node-snap7') as Snap7);
}

/** A TCP (low 16 bits) or ISO (next 4 bits) error: the connection is gone, not one item. */
export const isConnectionError = (code: number) => (code & 0x000fffff) !== 0;

export class S7Error extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
    this.name = 'S7Error';
  }
}

/** One S7 connection: requests one at a time, errors as S7Error with snap7's text. */
export class S7Connection {
  readonly client: Snap7Client;
  #queue: Promise<unknown> = Promise.resolve();
  pdu = 240;
  /** Requests sent (reads and writes), for the benchmark and the tests. */
  requests = 0;

  constructor(readonly props: Record<string, string>) {
    this.client = new (snap7().S7Client)();
  }

  async connect(): Promise<void> {
    const p = this.props;
    const c = this.client;
    const timeout = Number(p.requestTimeoutMs ?? 2000) || 2000;
    c.SetParam(P_REMOTE_PORT, Number(p.port ?? 102) || 102);
    c.SetParam(P_PING_TIMEOUT, timeout);
    c.SetParam(P_SEND_TIMEOUT, timeout);
    c.SetParam(P_RECV_TIMEOUT, timeout);
    const what = `${p.host}:${p.port ?? 102} rack ${p.rack ?? 0} slot ${p.slot ?? 1}`;
    await new Promise<void>((resolve, reject) =>
      c.ConnectTo(p.host ?? '', Number(p.rack ?? 0), Number(p.slot ?? 1), (err) =>
        err ? reject(new S7Error(`cannot connect to ${what}: ${c.ErrorText(err)}`, err)) : resolve(),
      ),
    );
    this.pdu = Number(c.PDULength()) || 240;
  }

  close(): void {
    try {
      this.client.Disconnect();
    } catch {
      // already gone
    }
  }

  #serial<T>(fn: (c: Snap7Client, done: Cb<T>) => void): Promise<T> {
    const run = this.#queue.then(
      () =>
        new Promise<T>((resolve, reject) => {
          this.requests++;
          fn(this.client, (err, result) =>
            err ? reject(new S7Error(this.client.ErrorText(err), err)) : resolve(result),
          );
        }),
    );
    this.#queue = run.catch(() => undefined);
    return run;
  }

  readMulti(items: ReadItem[]) {
    return this.#serial<Array<{ Result: number; Data: Buffer | null }>>((c, done) =>
      c.ReadMultiVars(items.map(multiVar), done),
    );
  }

  readArea(area: AreaName, db: number, start: number, count: number) {
    return this.#serial<Buffer>((c, done) => c.ReadArea(AREA[area], db, start, count, wordLen(area), done));
  }

  writeArea(area: AreaName, db: number, start: number, count: number, buf: Buffer, bits = false) {
    return this.#serial<void>((c, done) =>
      c.WriteArea(AREA[area], db, start, count, bits ? WL_BIT : wordLen(area), buf, (err) =>
        done(err, undefined),
      ),
    );
  }

  errorText(code: number): string {
    return this.client.ErrorText(code);
  }
}

type Settled<T> = { ok: true; value: T } | { ok: false; err: unknown };
/** A request's outcome as a value (requests queued ahead never reject unhandled). */
const settle = <T>(p: Promise<T>): Promise<Settled<T>> =>
  p.then(
    (value) => ({ ok: true as const, value }),
    (err: unknown) => ({ ok: false as const, err }),
  );

const wordLen = (area: AreaName) => (area === 'T' ? WL.timer : area === 'C' ? WL.counter : WL.byte);
const multiVar = (it: ReadItem): MultiVar => ({
  Area: AREA[it.area],
  WordLen: wordLen(it.area),
  DBNumber: it.db,
  Start: it.start,
  Amount: it.count,
});
const itemName = (it: { area: AreaName; db: number; start: number; count: number }) =>
  `${it.area === 'DB' ? `DB${it.db}.` : it.area}${it.start}${it.count > 1 ? `..${it.start + it.count - 1}` : ''}`;

/** Opens one connection; closes it again when it fails. */
async function open(props: Record<string, string>): Promise<S7Connection> {
  const conn = new S7Connection(props);
  try {
    await conn.connect();
  } catch (err) {
    conn.close();
    throw err;
  }
  return conn;
}

class S7Session implements DriverSession {
  readonly #device: DeviceSpec;
  readonly #ctx: DriverContext;
  readonly #plans = new WeakMap<readonly TagSpec[], ReadPlan>();
  /** A long run's bytes, assembled from its parts (one buffer per planned run, reused each cycle). */
  readonly #buffers = new WeakMap<ReadItem, Buffer>();
  /** The first connection (writes, and every read when there is one) and the others (`connections`). */
  #conns: S7Connection[] = [];
  #closed = false;

  constructor(device: DeviceSpec, ctx: DriverContext) {
    this.#device = device;
    this.#ctx = ctx;
  }

  get #conn(): S7Connection | undefined {
    return this.#conns[0];
  }

  /**
   * Opens the first connection, then the others `connections` asks for (snap7's client has one
   * request in flight per connection: more connections, more requests in flight). A CPU that
   * refuses one of the others (out of connection resources) is read on those it accepted.
   */
  async connect(): Promise<void> {
    const props = this.#device.props;
    const first = await open(props);
    const wanted = Math.max(1, Math.min(MAX_CONNECTIONS, Number(props.connections ?? 2) || 1));
    const more = await Promise.allSettled(Array.from({ length: wanted - 1 }, () => open(props)));
    const conns = [first];
    for (const r of more) {
      if (r.status === 'fulfilled') conns.push(r.value);
      else
        this.#ctx.logger?.warn(
          { device: this.#device.name, reason: errorText(r.reason) },
          'S7: a further connection was refused; reading on fewer',
        );
    }
    if (this.#closed) for (const c of conns) c.close();
    else this.#conns = conns;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const conns = this.#conns;
    this.#conns = [];
    for (const c of conns) c.close();
  }

  #plan(tags: readonly TagSpec[], pdu: number): ReadPlan {
    let plan = this.#plans.get(tags);
    if (!plan) {
      plan = planReads(tags, pdu);
      this.#plans.set(tags, plan);
    }
    return plan;
  }

  /** Fails the whole read (the engine reconnects) when the connection is gone. */
  #check(err: unknown): void {
    if (err instanceof S7Error && isConnectionError(err.code)) {
      if (!this.#closed) this.#ctx.lost(err.message);
      throw err;
    }
  }

  /**
   * The plan's requests one at a time on the connection, each next request sent before the answer
   * in hand is decoded and handed over: the native client waits for the PLC while this thread
   * decodes and publishes. A run larger than one PDU is read in a few parts the same way (as many
   * requests in all as snap7's own split makes), its tags handed over as soon as their bytes are in.
   */
  async read(
    tags: readonly TagSpec[],
    early?: (index: number, result: ReadResult) => void,
  ): Promise<ReadResult[]> {
    const conns = this.#conns;
    const conn = conns[0];
    if (!conn) throw new Error('not connected');
    const plan = this.#plan(tags, conn.pdu);
    const out = new Array<ReadResult>(tags.length);
    const one = (i: number, result: ReadResult) => {
      out[i] = result;
      early?.(i, result);
    };
    for (const [i, reason] of plan.invalid) one(i, new ReadFailure(reason));
    const decode = (item: ReadItem, i: number, data: Buffer) => {
      const offset = (plan.addresses[i]!.start - item.start) * (isCell(item.area) ? 2 : 1);
      try {
        one(i, decodeS7(tags[i]!, data, offset));
      } catch (err) {
        one(i, new ReadFailure(`cannot decode ${tags[i]!.valueType}: ${errorText(err)}`));
      }
    };
    const fail = (item: ReadItem, reason: string, from = 0) => {
      const failure = new ReadFailure(reason);
      for (let k = from; k < item.tags.length; k++) one(item.tags[k]!, failure);
    };
    // Every request queued at once, in turn on each connection (each connection sends its next
    // request as soon as the previous is answered), the answers taken in order: the native clients
    // wait for the PLC while this thread decodes and hands over what is in.
    const requests = plan.requests;
    const pending = requests.map((request, r) => settle(conns[r % conns.length]!.readMulti(request)));
    for (let r = 0; r < requests.length; r++) {
      const request = requests[r]!;
      const answer = await pending[r]!;
      if (!answer.ok) {
        this.#check(answer.err);
        for (const item of request) fail(item, `read ${itemName(item)}: ${errorText(answer.err)}`);
        continue;
      }
      request.forEach((item, k) => {
        const res = answer.value[k];
        if (res && res.Result === 0 && res.Data) for (const i of item.tags) decode(item, i, res.Data);
        else fail(item, `read ${itemName(item)}: ${conn.errorText(res?.Result ?? 0)}`);
      });
    }
    for (const item of plan.large) await this.#readLarge(conns, item, plan, decode, fail);
    return out;
  }

  /**
   * A run longer than one PDU, in PDU-sized parts, the parts in turn on each connection; its tags
   * (in address order) handed over as their bytes arrive.
   */
  async #readLarge(
    conns: S7Connection[],
    item: ReadItem,
    plan: ReadPlan,
    decode: (item: ReadItem, i: number, data: Buffer) => void,
    fail: (item: ReadItem, reason: string, from?: number) => void,
  ): Promise<void> {
    const unit = isCell(item.area) ? 2 : 1;
    const conn = conns[0]!;
    // snap7 splits a long read into requests of (PDU - 18) bytes. The run is read in about four
    // calls of whole requests each (two per connection with more than two): few enough wake-ups
    // of this thread per cycle, while the values of one call are published the next calls'
    // requests are on the wire.
    const perRequest = Math.max(1, Math.floor((conn.pdu - 18) / unit));
    const requests = Math.ceil(item.count / perRequest);
    const calls = Math.max(LARGE_CALLS, 2 * conns.length);
    const part = perRequest * Math.ceil(requests / calls);
    let buf = this.#buffers.get(item);
    if (!buf) {
      buf = Buffer.alloc(item.count * unit);
      this.#buffers.set(item, buf);
      // The item's tags by the end of their bytes, so that each is handed over once its bytes are in.
      const end = (i: number) => plan.addresses[i]!.start - item.start + plan.addresses[i]!.count;
      item.tags.sort((a, b) => end(a) - end(b));
    }
    // Every part queued at once, in turn on each connection; the answers taken in order.
    const pending: Array<Promise<Settled<Buffer>>> = [];
    for (let at = 0, k = 0; at < item.count; at += part, k++) {
      const c = conns[k % conns.length]!;
      pending.push(settle(c.readArea(item.area, item.db, item.start + at, Math.min(part, item.count - at))));
    }
    let next = 0;
    for (let k = 0, at = 0; at < item.count; k++) {
      const answer = await pending[k]!;
      if (!answer.ok) {
        this.#check(answer.err);
        fail(item, `read ${itemName(item)}: ${errorText(answer.err)}`, next);
        return;
      }
      const data = answer.value;
      const done = Math.min(at + part, item.count);
      data.copy(buf, at * unit);
      at = done;
      for (; next < item.tags.length; next++) {
        const i = item.tags[next]!;
        const a = plan.addresses[i]!;
        if (a.start - item.start + a.count > at) break;
        decode(item, i, buf);
      }
    }
  }

  async write(tag: TagSpec, value: unknown): Promise<void> {
    const conn = this.#conn;
    if (!conn) throw new Error('not connected');
    const area = tag.register as AreaName;
    if (!(area in AREA)) throw new Error(`register ${tag.register} is not an S7 area`);
    const db = area === 'DB' ? Number(tag.props.dbNumber ?? 1) : 0;
    const start = Number(tag.props.address ?? 0);
    const where = itemName({ area, db, start, count: 1 });
    try {
      if (tag.valueType === 'bool' || tag.valueType === 'bit') {
        // A bit is addressed in bits: byte × 8 + bit.
        const bit = start * 8 + Number(tag.props.bit ?? 0);
        await conn.writeArea(area, db, bit, 1, Buffer.from([value ? 1 : 0]), true);
        return;
      }
      const buf = encodeS7(tag, value);
      await conn.writeArea(area, db, start, isCell(area) ? 1 : buf.length, buf);
    } catch (err) {
      this.#check(err);
      throw new Error(`write ${where}: ${errorText(err)}`);
    }
  }
}

/** Reads the areas named in `browseAreas` and lists them: words of DB and M, bits of I and Q, timers, counters. */
export async function browseS7(props: Record<string, string>): Promise<BrowseNode[]> {
  const areas = parseBrowseAreas(props.browseAreas ?? '');
  const conn = new S7Connection(props);
  await conn.connect();
  try {
    const out: BrowseNode[] = [];
    const names = new Set<string>();
    for (const a of areas) {
      const count = a.to - a.from + 1;
      let data: Buffer;
      try {
        data = await conn.readArea(a.area, a.db, a.from, count);
      } catch (err) {
        throw new Error(
          `browseAreas: cannot read ${itemName({ ...a, start: a.from, count })}: ${errorText(err)}`,
        );
      }
      const folder = browseFolder(a.area, a.db, a.from, count, data);
      // The same area named twice (M0-3, M10-13): the second folder is named by its range.
      if (names.has(folder.Name)) folder.Name = `${folder.Name}_${a.from}-${a.to}`;
      names.add(folder.Name);
      out.push(folder);
    }
    return out;
  } finally {
    conn.close();
  }
}

function browseFolder(area: AreaName, db: number, from: number, count: number, data: Buffer): BrowseNode {
  const children: BrowseNode[] = [];
  const dbProps = area === 'DB' ? [{ Name: 'dbNumber', Value: String(db) }] : [];
  if (area === 'T' || area === 'C') {
    for (let n = 0; n < count; n++) {
      children.push({
        Name: `${area}${from + n}`,
        Description: area === 'T' ? `timer ${from + n} (milliseconds)` : `counter ${from + n}`,
        RegisterName: area,
        ValueType: area === 'T' ? 'uint32' : 'uint16',
        Properties: [{ Name: 'address', Value: String(from + n) }],
      });
    }
  } else if (area === 'I' || area === 'Q') {
    for (let n = 0; n < count; n++) {
      for (let bit = 0; bit < 8; bit++) {
        children.push({
          Name: `${area}${from + n}.${bit}`,
          Description: `${area === 'I' ? 'input' : 'output'} ${from + n}.${bit}, ${(data[n]! >> bit) & 1} when browsed`,
          RegisterName: area,
          ValueType: 'bool',
          Properties: [
            { Name: 'address', Value: String(from + n) },
            { Name: 'bit', Value: String(bit) },
          ],
        });
      }
    }
  } else {
    // Words (INT) at even offsets: the common layout of data blocks and marker words.
    for (let n = 0; n + 1 < count + (count % 2); n += 2) {
      const at = from + n;
      const word = n + 1 < count;
      const value = word ? data.readInt16BE(n) : data.readInt8(n);
      const mnemonic = `${area === 'DB' ? `DB${db}.DB` : 'M'}${word ? 'W' : 'B'}${at}`;
      children.push({
        Name: mnemonic,
        Description: `${word ? 'INT' : 'SINT'} at byte ${at}, ${value} when browsed`,
        RegisterName: area,
        ValueType: word ? 'int16' : 'sint',
        Properties: [{ Name: 'address', Value: String(at) }, ...dbProps],
      });
    }
  }
  const name = area === 'DB' ? `DB${db}` : area;
  const what = {
    DB: `data block ${db}`,
    M: 'markers',
    I: 'inputs',
    Q: 'outputs',
    T: 'timers',
    C: 'counters',
  };
  return { Name: name, Description: `${what[area]} ${from}-${from + count - 1}`, Children: children };
}

export const s7Driver: DriverFactory = {
  key: 's7',
  create: (device, ctx) => new S7Session(device, ctx),
  browse: async (device) => browseS7(device.properties),
};
