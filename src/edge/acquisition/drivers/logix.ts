/**
 * The Logix Ethernet drivers (ControlLogix, CompactLogix over EtherNet/IP), on st-ethernet-ip:
 * the library opens the EtherNet/IP session, wraps requests in Unconnected Send to the
 * controller's slot, builds the CIP message paths and reads the tag list and templates (browse,
 * and the symbol instances of `accessMode` 1). The read plan is this file's: the tags due are read
 * by name (controller tags, `Program:<name>.` program tags, array elements, UDT members) in as few
 * Multiple Service Packets as fit the 480-byte unconnected message, one Read Tag Fragmented series
 * for a value too large for one; each tag gets its own CIP status (the library's tag-group reader
 * keeps only some of them). Requests go one at a time on a connection.
 *
 * `accessMode` 1 (the default, part 2.4) addresses a tag by its symbol instance (class 0x6B) from
 * the tag list read at connect; 0 by its symbolic name. With symbol instances a tag the controller
 * no longer knows means its program changed: `PLCProgramChangeAction` says what follows (`Reload`
 * the tag list, `Reconnect`, or `None`: the tags fail).
 */
import type { Controller as ControllerT, TagList as TagListT } from 'st-ethernet-ip';
import { coerce } from '../convert.js';
import { errorText } from '../engine.js';
import {
  ReadFailure,
  type DeviceSpec,
  type DriverContext,
  type DriverFactory,
  type DriverSession,
  type ReadResult,
  type TagSpec,
  type TagValue,
} from '../types.js';

import {
  CODE_TYPE,
  MAX_MESSAGE,
  MESSAGE_ROUTER,
  STRING_SIZE,
  TYPES,
  WINDOW,
  atomic,
  browseLogix,
  cipStatus,
  multiple,
  openController,
  parseTagName,
  splitMultiple,
  u16,
  withTimeout,
  writeAtomic,
  type Lib,
  type Reply,
} from './logix-cip.js';

interface Item {
  index: number;
  path: Buffer;
  count: number;
  request: number;
  reply: number;
}

interface Plan {
  generation: number;
  batches: Item[][];
  fragmented: Item[];
  failed: Map<number, ReadFailure>;
}

const elementType = (valueType: string) => valueType.replace(/_array$/, '');
const elementsOf = (tag: TagSpec) =>
  tag.valueType.endsWith('_array') ? Math.max(1, Number(tag.props.arrayLength ?? 1) || 1) : 1;
const replySize = (tag: TagSpec, count: number) =>
  4 +
  2 +
  (elementType(tag.valueType) === 'string'
    ? 2 + STRING_SIZE
    : (TYPES[elementType(tag.valueType)]?.size ?? 4) * count);

class LogixSession implements DriverSession {
  #lib: Lib | undefined;
  #plc: ControllerT | undefined;
  #tagList: TagListT | undefined;
  /** Requests sent and not answered yet, oldest first (the controller answers in order). */
  #inflight: Array<{ resolve: (r: Reply) => void; reject: (e: Error) => void }> = [];
  /** Requests wait for this (a tag list reload has the connection to itself). */
  #gate: Promise<unknown> = Promise.resolve();
  #broken: string | undefined;
  #closed = false;
  #generation = 0;
  readonly #plans = new WeakMap<readonly TagSpec[], Plan>();
  readonly #handles = new Map<string, number>();
  readonly #timeout: number;
  readonly #instances: boolean;

  constructor(
    readonly device: DeviceSpec,
    readonly ctx: DriverContext,
  ) {
    this.#timeout = Number(device.props.requestTimeoutMs ?? 2000) || 2000;
    this.#instances = (device.props.accessMode ?? '1') === '1';
  }

  async connect(): Promise<void> {
    const p = this.device.props;
    const { plc, lib } = await openController(p, this.#timeout);
    this.#lib = lib;
    this.#plc = plc;
    plc.on('close', () => {
      this.#fail('connection closed');
      if (!this.#closed) this.ctx.lost(`connection to ${p.host}:${p.port ?? 44818} closed`);
    });
    try {
      await withTimeout(plc.readControllerProps(), this.#timeout, 'reading the controller identity');
      const want = p.fwVersion ?? '';
      const have = plc.properties.version;
      if (want && Number.parseInt(want, 10) !== Number.parseInt(have ?? '', 10))
        this.ctx.logger?.warn(
          { device: this.device.name, fwVersion: want, controller: have },
          'logix: firmware differs',
        );
      if (this.#instances) await this.#loadTagList();
    } catch (err) {
      await this.close();
      throw new Error(`${p.host}:${p.port ?? 44818}: ${errorText(err)}`);
    }
    this.#ownReplies();
  }

  /** The library's reply dispatch (for its tag list and template readers). */
  async #loadTagList(): Promise<void> {
    const plc = this.#plc!;
    plc.removeAllListeners('SendRRData Received');
    plc._initializeControllerEventHandlers();
    const list = new this.#lib!.TagList();
    await withTimeout(plc.getControllerTagList(list), this.#timeout * 10, 'reading the tag list');
    this.#tagList = list;
    this.#generation++;
  }

  /** This driver's dispatch: one request outstanding, its reply parsed here. */
  #ownReplies(): void {
    const plc = this.#plc!;
    plc.removeAllListeners('SendRRData Received');
    plc.on('SendRRData Received', (items: Array<{ data: Buffer }>) => {
      const pending = this.#inflight.shift();
      const buf = items[1]?.data;
      if (!pending || !buf || buf.length < 4) return;
      const extLen = buf[3]!;
      pending.resolve({
        status: buf[2]!,
        ext: Array.from({ length: extLen }, (_, i) => buf.readUInt16LE(4 + i * 2)),
        data: buf.subarray(4 + extLen * 2),
      });
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    const plc = this.#plc;
    this.#plc = undefined;
    this.#fail('connection closed');
    if (plc) {
      try {
        plc.destroy();
      } catch {
        // already gone
      }
    }
  }

  /** Every request in flight fails; the connection is not used again. */
  #fail(reason: string): void {
    this.#broken ??= reason;
    for (const p of this.#inflight.splice(0)) p.reject(new Error(reason));
  }

  /**
   * Sends a request; several may be in flight (answers come in order on the connection). A
   * request unanswered in time leaves the connection unusable: later answers could not be matched.
   */
  async #request(service: number, path: Buffer, data: Buffer): Promise<Reply> {
    await this.#gate;
    return this.#send(service, path, data);
  }

  #send(service: number, path: Buffer, data: Buffer): Promise<Reply> {
    return new Promise<Reply>((resolve, reject) => {
      const plc = this.#plc;
      if (!plc || this.#broken) return reject(new Error(this.#broken ?? 'not connected'));
      const timer = setTimeout(() => this.#fail(`no answer within ${this.#timeout} ms`), this.#timeout);
      this.#inflight.push({
        resolve: (r) => (clearTimeout(timer), resolve(r)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      });
      plc.write_cip(this.#lib!.EthernetIP.CIP.MessageRouter.build(service, path, data));
    });
  }

  #path(tag: TagSpec): Buffer {
    const { DATA, LOGICAL } = this.#lib!.EthernetIP.CIP.EPATH.segments;
    const { program, segments } = parseTagName(tag.props.tagName ?? '');
    const parts: Buffer[] = [];
    if (program) parts.push(DATA.build(`Program:${program}`));
    let rest = segments;
    if (this.#instances) {
      const base = String(segments[0]);
      const known = this.#tagList?.tags.find(
        (t) =>
          t.name.toLowerCase() === base.toLowerCase() &&
          (t.program ?? null)?.toLowerCase() === program?.toLowerCase(),
      );
      if (!known) throw new Error(`${tag.props.tagName}: not in the controller's tag list`);
      parts.push(
        LOGICAL.build(LOGICAL.types.ClassID, 0x6b),
        LOGICAL.build(LOGICAL.types.InstanceID, known.id),
      );
      rest = segments.slice(1);
    }
    for (const s of rest) parts.push(DATA.build(String(s)));
    return Buffer.concat(parts);
  }

  #plan(tags: readonly TagSpec[]): Plan {
    const cached = this.#plans.get(tags);
    if (cached && cached.generation === this.#generation) return cached;
    const plan: Plan = { generation: this.#generation, batches: [], fragmented: [], failed: new Map() };
    let batch: Item[] = [];
    let req = 2;
    let rep = 2;
    tags.forEach((tag, index) => {
      let path: Buffer;
      try {
        path = this.#path(tag);
      } catch (err) {
        plan.failed.set(index, new ReadFailure(errorText(err)));
        return;
      }
      const count = elementsOf(tag);
      const item: Item = {
        index,
        path,
        count,
        request: 2 + path.length + 2 + 2,
        reply: replySize(tag, count),
      };
      if (item.reply + 10 > MAX_MESSAGE) {
        plan.fragmented.push(item);
        return;
      }
      if (batch.length > 0 && (req + item.request > MAX_MESSAGE || rep + item.reply + 2 > MAX_MESSAGE)) {
        plan.batches.push(batch);
        batch = [];
        req = 2;
        rep = 2;
      }
      batch.push(item);
      req += item.request + 2;
      rep += item.reply + 2;
    });
    if (batch.length > 0) plan.batches.push(batch);
    this.#plans.set(tags, plan);
    return plan;
  }

  async read(
    tags: readonly TagSpec[],
    early?: (index: number, result: ReadResult) => void,
  ): Promise<ReadResult[]> {
    const plan = this.#plan(tags);
    const out = new Array<ReadResult>(tags.length);
    for (const [i, f] of plan.failed) out[i] = f;
    let changed = false;
    const done = (item: Item, r: Reply) => {
      const tag = tags[item.index]!;
      if (r.status !== 0) {
        if (this.#instances && (r.status === 0x05 || r.status === 0x04)) changed = true;
        out[item.index] = new ReadFailure(`${tag.props.tagName}: ${cipStatus(r)}`);
      } else out[item.index] = this.#decode(tag, r.data, item.count);
      early?.(item.index, out[item.index]!);
    };
    const { build } = this.#lib!.EthernetIP.CIP.MessageRouter;
    const one = async (batch: Item[]) => {
      if (batch.length === 1) {
        const it = batch[0]!;
        done(it, await this.#request(0x4c, it.path, u16(it.count)));
        return;
      }
      const requests = batch.map((it) => build(0x4c, it.path, u16(it.count)));
      const r = await this.#request(0x0a, MESSAGE_ROUTER, multiple(requests));
      if (r.status !== 0 && r.status !== 0x1e) {
        for (const it of batch) done(it, r);
        return;
      }
      const replies = splitMultiple(r.data);
      batch.forEach((it, k) => done(it, replies[k] ?? { status: 0x13, ext: [], data: Buffer.alloc(0) }));
    };
    // Up to WINDOW requests in flight: the controller works on one while the edge publishes another.
    let failure: unknown;
    const running: Array<Promise<void>> = [];
    for (const batch of plan.batches) {
      running.push(one(batch).catch((err: unknown) => void (failure ??= err)));
      if (running.length >= WINDOW) await running.shift();
    }
    await Promise.all(running);
    if (failure !== undefined) throw failure;
    for (const it of plan.fragmented) done(it, await this.#fragmented(it));
    if (changed) await this.#programChanged();
    return out;
  }

  async #fragmented(it: Item): Promise<Reply> {
    const chunks: Buffer[] = [];
    let header: Buffer | undefined;
    let offset = 0;
    for (;;) {
      const d = Buffer.alloc(6);
      d.writeUInt16LE(it.count, 0);
      d.writeUInt32LE(offset, 2);
      const r = await this.#request(0x52, it.path, d);
      if (r.status !== 0 && r.status !== 0x06) return r;
      const hl = r.data.readUInt16LE(0) === 0x02a0 ? 4 : 2;
      header ??= r.data.subarray(0, hl);
      const chunk = r.data.subarray(hl);
      chunks.push(chunk);
      offset += chunk.length;
      if (r.status === 0 || chunk.length === 0) break;
    }
    return { status: 0, ext: [], data: Buffer.concat([header ?? Buffer.alloc(2), ...chunks]) };
  }

  async #programChanged(): Promise<void> {
    const action = this.device.props.PLCProgramChangeAction ?? 'Reload';
    if (action === 'None') return;
    if (action === 'Reconnect')
      throw new Error('the controller program changed (symbols unknown): reconnecting');
    this.ctx.logger?.info({ device: this.device.name }, 'logix: program changed, reloading the tag list');
    const reload = (async () => {
      while (this.#inflight.length > 0) await new Promise((r) => setTimeout(r, 5));
      try {
        await this.#loadTagList();
      } finally {
        this.#ownReplies();
      }
    })();
    this.#gate = reload.catch(() => undefined);
    await reload;
  }

  #decode(tag: TagSpec, data: Buffer, count: number): ReadResult {
    try {
      const code = data.readUInt16LE(0);
      const want = elementType(tag.valueType);
      if (code === 0x02a0) {
        this.#handles.set(tag.props.tagName ?? '', data.readUInt16LE(2));
        const body = data.subarray(4);
        if (want !== 'string')
          return new ReadFailure(`${tag.props.tagName} is a structure; name one of its members`);
        const len = Math.max(0, Math.min(body.readInt32LE(0), body.length - 4));
        return body.subarray(4, 4 + len).toString('latin1');
      }
      const type = CODE_TYPE.get(code);
      if (!type)
        return new ReadFailure(`${tag.props.tagName}: CIP data type 0x${code.toString(16)} is not supported`);
      const size = TYPES[type]!.size;
      const values: TagValue[] = [];
      for (let i = 0; i < count && 2 + (i + 1) * size <= data.length; i++)
        values.push(atomic(type, data, 2 + i * size));
      const as = (v: TagValue) =>
        want === 'bool' ? v !== 0 && v !== '0' : want === 'string' ? String(v) : v;
      if (tag.valueType.endsWith('_array')) return values.map(as);
      return values.length ? as(values[0]!) : new ReadFailure(`${tag.props.tagName}: empty reply`);
    } catch (err) {
      return new ReadFailure(`${tag.props.tagName}: cannot decode: ${errorText(err)}`);
    }
  }

  async write(tag: TagSpec, value: unknown): Promise<void> {
    const name = tag.props.tagName ?? '';
    const path = this.#path(tag);
    const want = elementType(tag.valueType);
    let data: Buffer;
    if (want === 'string') {
      let handle = this.#handles.get(name);
      if (handle === undefined) {
        const r = await this.#request(0x4c, path, u16(1));
        if (r.status !== 0) throw new Error(`write ${name}: ${cipStatus(r)}`);
        if (r.data.readUInt16LE(0) !== 0x02a0) throw new Error(`write ${name}: the tag is not a STRING`);
        handle = r.data.readUInt16LE(2);
        this.#handles.set(name, handle);
      }
      const text = Buffer.from(String(value), 'latin1').subarray(0, STRING_SIZE - 6);
      const body = Buffer.alloc(STRING_SIZE);
      body.writeInt32LE(text.length, 0);
      text.copy(body, 4);
      data = Buffer.concat([u16(0x02a0), u16(handle), u16(1), body]);
    } else {
      const t = TYPES[want];
      if (!t) throw new Error(`value type ${tag.valueType} cannot be written`);
      const values = Array.isArray(value) ? value : [value];
      const body = Buffer.alloc(t.size * values.length);
      values.forEach((v, i) => writeAtomic(want, body, i * t.size, coerce(v, want)));
      data = Buffer.concat([u16(t.code), u16(values.length), body]);
    }
    const r = await this.#request(0x4d, path, data);
    if (r.status !== 0) throw new Error(`write ${name}: ${cipStatus(r)}`);
  }
}

export const logixDrivers: DriverFactory[] = [
  {
    key: 'logix-ethernet',
    create: (device, ctx) => new LogixSession(device, ctx),
    browse: async (device) => browseLogix(device.properties, true),
  },
  {
    key: 'logix-ethernet-advanced',
    create: (device, ctx) => new LogixSession(device, ctx),
    browse: async (device) => browseLogix(device.properties, false),
  },
];
