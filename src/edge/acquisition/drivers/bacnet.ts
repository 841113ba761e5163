/**
 * The BACnet/IP driver, on @bacnet-js/client: the device is found by Who-Is (its instance given or
 * the first to answer), its Protocol_Services_Supported read once; the tags due are read with
 * ReadPropertyMultiple (at most `maxPropertiesPerRequest` properties a request; ReadProperty one by
 * one when the device lacks it), each property with its own error; a write is a WriteProperty at
 * the tag's `priority`. With `useCov` and a device that offers SubscribeCOV, the Present_Value tags
 * are subscribed (unconfirmed notifications, renewed at half their lifetime) instead of polled, and
 * the device is asked its name every 5 s so that an outage is seen without polls.
 *
 * UDP has no connection: "connected" means the device answered. A request unanswered after
 * `retryRequestCount` retries counts as the device being away (the engine reconnects with backoff:
 * a new Who-Is). One UDP socket per local port serves every device of the process.
 */
import type { BACNetObjectID, BACNetAppData } from '@bacnet-js/client';
import type { BrowseNode } from '../../devicehub/index.js';
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
  type ValueSink,
} from '../types.js';

type Lib = typeof import('@bacnet-js/client');
type Client = InstanceType<Lib['default']>;
let loaded: Promise<Lib> | undefined;
/** Set once loaded: error class and code names for messages. */
let names: Pick<Lib, 'ErrorClass' | 'ErrorCode'> | undefined;
const load = () =>
  (loaded ??= import('@bacnet-js/client').then((m) => {
    const lib = m as Lib & { default: Lib['default'] | Lib };
    // The package is CommonJS: its classes and enums sit on the default export.
    const out = ('ObjectType' in lib.default ? lib.default : lib) as Lib;
    names = out;
    return out;
  }));

/** Object types by register name (ASHRAE 135 numbers), as the catalogue names them. */
const OBJECT_TYPES: Record<string, number> = {
  AI: 0,
  AO: 1,
  AV: 2,
  BI: 3,
  BO: 4,
  BV: 5,
  MSI: 13,
  MSO: 14,
  MSV: 19,
};
const REGISTERS = new Map(Object.entries(OBJECT_TYPES).map(([k, v]) => [v, k]));
const PRESENT_VALUE = 85;
const OBJECT_NAME = 77;
const OBJECT_LIST = 76;
const SERVICES_SUPPORTED = 97;
const DEVICE = 8;
const HEARTBEAT_MS = 5000;

/** One UDP socket per local port, shared by the devices of the process. */
interface Shared {
  client: Client;
  refs: number;
  cov: Map<number, (values: Array<{ property: { id: number }; value: BACNetAppData[] }>) => void>;
}
const sockets = new Map<number, Promise<Shared>>();
let nextProcessId = 1;

async function acquire(lib: Lib, localPort: number, timeout: number): Promise<Shared> {
  const key = localPort;
  let s = sockets.get(key);
  if (!s) {
    s = new Promise<Shared>((resolve, reject) => {
      const client = new lib.default({ port: localPort, apduTimeout: timeout }) as Client;
      const shared: Shared = { client, refs: 0, cov: new Map() };
      const fail = (err: Error) => {
        sockets.delete(key);
        client.close();
        reject(new Error(`cannot listen on UDP port ${localPort}: ${err.message}`));
      };
      client.once('error', fail);
      client.once('listening', () => {
        client.off('error', fail);
        client.on('error', () => undefined);
        resolve(shared);
      });
      client.on('covNotifyUnconfirmed', (c) =>
        shared.cov.get(c.payload.subscriberProcessId)?.(c.payload.values),
      );
    });
    sockets.set(key, s);
    s.catch(() => sockets.delete(key));
  }
  const shared = await s;
  shared.refs++;
  return Object.assign(shared, { key });
}

function release(shared: Shared & { key?: number }): void {
  if (--shared.refs > 0) return;
  if (shared.key !== undefined) sockets.delete(shared.key);
  shared.client.close();
}

const isTimeout = (err: unknown) => errorText(err).includes('ERR_TIMEOUT');

interface Ref {
  object: BACNetObjectID;
  property: number;
}

function refOf(tag: TagSpec): Ref {
  const type = OBJECT_TYPES[tag.register];
  if (type === undefined) throw new Error(`register ${tag.register} is not a BACnet object type`);
  return {
    object: { type, instance: Number(tag.props.address ?? 0) },
    property: Number(tag.props.property ?? PRESENT_VALUE),
  };
}

/** An application value as the tag's value type. */
function convert(values: BACNetAppData[] | undefined, valueType: string): ReadResult {
  if (!values || values.length === 0) return null;
  const first = values[0]!;
  if (first.type === 105) {
    const e = first.value as { errorClass: number; errorCode: number };
    const cls = (names?.ErrorClass as Record<number, string> | undefined)?.[e.errorClass] ?? e.errorClass;
    const code = (names?.ErrorCode as Record<number, string> | undefined)?.[e.errorCode] ?? e.errorCode;
    return new ReadFailure(`BACnet error: class ${cls}, code ${code}`);
  }
  const raw = values.length > 1 ? values.map((v) => v.value) : first.value;
  try {
    if (valueType === 'string')
      return typeof raw === 'string' ? raw : typeof raw === 'object' ? JSON.stringify(raw) : String(raw);
    if (valueType === 'bool') return raw === true || (typeof raw === 'number' && raw !== 0);
    const n = typeof raw === 'boolean' ? Number(raw) : Number(raw);
    if (!Number.isFinite(n)) return new ReadFailure(`value ${JSON.stringify(raw)} is not a number`);
    if (valueType === 'float32' || valueType === 'float64') return n;
    return coerce(Math.round(n), valueType) as TagValue;
  } catch (err) {
    return new ReadFailure(errorText(err));
  }
}

class BacnetSession implements DriverSession {
  #lib: Lib | undefined;
  #shared: (Shared & { key?: number }) | undefined;
  #address = '';
  #deviceId = 0;
  #rpm = true;
  #cov = false;
  #closed = false;
  #subs = new Map<string, { process: number; tags: TagSpec[] }>();
  #timers: NodeJS.Timeout[] = [];
  readonly #timeout: number;
  readonly #retries: number;
  readonly #batch: number;

  constructor(
    readonly device: DeviceSpec,
    readonly ctx: DriverContext,
  ) {
    this.#timeout = Number(device.props.requestTimeoutMs ?? 3000) || 3000;
    this.#retries = Number(device.props.retryRequestCount ?? 0) || 0;
    this.#batch = Number(device.props.maxPropertiesPerRequest ?? 40) || 40;
  }

  get #receiver() {
    return { address: this.#address };
  }

  async connect(): Promise<void> {
    const p = this.device.props;
    this.#lib = await load();
    this.#address = `${p.host}:${Number(p.port ?? 47808) || 47808}`;
    this.#shared = await acquire(this.#lib, Number(p.localPort ?? 47808), this.#timeout);
    try {
      this.#deviceId = await this.#discover(Number(p.deviceInstance ?? -1));
      const ss = await this.#call((c) =>
        c.readProperty(this.#receiver, { type: DEVICE, instance: this.#deviceId }, SERVICES_SUPPORTED),
      ).catch(() => undefined);
      const bits = (ss?.values[0]?.value as { value?: number[] } | undefined)?.value;
      const has = (bit: number) => (bits ? ((bits[bit >> 3] ?? 0) & (1 << (bit & 7))) !== 0 : false);
      this.#rpm = bits ? has(14) : true;
      this.#cov = has(5);
    } catch (err) {
      await this.close();
      throw new Error(`BACnet device at ${this.#address}: ${errorText(err)}`);
    }
  }

  /** Who-Is (limited to the instance when given); a device that answers no Who-Is but is named is read. */
  async #discover(instance: number): Promise<number> {
    const client = this.#shared!.client;
    const found = new Promise<number | undefined>((resolve) => {
      const timer = setTimeout(() => done(undefined), this.#timeout);
      const onIam = (c: {
        payload: { address: string; deviceId: number };
        header?: { sender: { address?: string } };
      }) => {
        const from = c.header?.sender.address ?? c.payload.address;
        const sameHost = from?.split(':')[0] === this.#address.split(':')[0];
        if ((instance < 0 || c.payload.deviceId === instance) && (sameHost || instance >= 0)) {
          if (!sameHost && from) this.#address = from;
          done(c.payload.deviceId);
        }
      };
      const done = (v: number | undefined) => {
        clearTimeout(timer);
        client.off('iAm', onIam);
        resolve(v);
      };
      client.on('iAm', onIam);
    });
    client.whoIs(this.#receiver, instance >= 0 ? { lowLimit: instance, highLimit: instance } : {});
    const id = await found;
    if (id !== undefined) return id;
    if (instance < 0)
      throw new Error(`no I-Am within ${this.#timeout} ms (set deviceInstance to read it directly)`);
    await this.#call((c) => c.readProperty(this.#receiver, { type: DEVICE, instance }, OBJECT_NAME));
    return instance;
  }

  /** A confirmed request with the device's retries; a timeout after them means the device is away. */
  async #call<T>(fn: (c: Client) => Promise<T>): Promise<T> {
    let attempt = 0;
    for (;;) {
      const shared = this.#shared;
      if (!shared || this.#closed) throw new Error('not connected');
      try {
        return await fn(shared.client);
      } catch (err) {
        if (!isTimeout(err) || attempt++ >= this.#retries) throw err;
      }
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
    const shared = this.#shared;
    this.#shared = undefined;
    if (!shared) return;
    const cancels = [...this.#subs.values()].map((s) => s.process);
    for (const p of cancels) shared.cov.delete(p);
    const polite = [...this.#subs].map(([, s]) =>
      shared.client
        .subscribeCov(this.#receiver, refOf(s.tags[0]!).object, s.process, true, false, 0)
        .catch(() => undefined),
    );
    this.#subs.clear();
    await Promise.race([Promise.all(polite), new Promise((r) => setTimeout(r, 500).unref())]);
    release(shared);
  }

  async read(
    tags: readonly TagSpec[],
    early?: (index: number, result: ReadResult) => void,
  ): Promise<ReadResult[]> {
    const out = new Array<ReadResult>(tags.length);
    const refs: Array<{ i: number; ref: Ref }> = [];
    tags.forEach((tag, i) => {
      try {
        refs.push({ i, ref: refOf(tag) });
      } catch (err) {
        out[i] = new ReadFailure(errorText(err));
      }
    });
    for (let k = 0; k < refs.length; k += this.#rpm ? this.#batch : 1) {
      const batch = refs.slice(k, k + (this.#rpm ? this.#batch : 1));
      try {
        if (!this.#rpm) {
          const { i, ref } = batch[0]!;
          const r = await this.#call((c) => c.readProperty(this.#receiver, ref.object, ref.property));
          out[i] = convert(r.values, tags[i]!.valueType);
        } else {
          await this.#readMultiple(batch, tags, out);
        }
      } catch (err) {
        if (isTimeout(err) || this.#closed)
          throw new Error(`no answer from ${this.#address}: ${errorText(err)}`);
        const failure = new ReadFailure(errorText(err));
        for (const { i } of batch) out[i] = failure;
      }
      for (const { i } of batch) early?.(i, out[i]!);
    }
    return out;
  }

  async #readMultiple(
    batch: Array<{ i: number; ref: Ref }>,
    tags: readonly TagSpec[],
    out: ReadResult[],
  ): Promise<void> {
    const specs = new Map<
      string,
      { objectId: BACNetObjectID; properties: Array<{ id: number; index: number }> }
    >();
    for (const { ref } of batch) {
      const k = `${ref.object.type}:${ref.object.instance}`;
      const s = specs.get(k) ?? { objectId: ref.object, properties: [] };
      if (!s.properties.some((p) => p.id === ref.property))
        s.properties.push({ id: ref.property, index: 0xffffffff });
      specs.set(k, s);
    }
    const r = await this.#call((c) => c.readPropertyMultiple(this.#receiver, [...specs.values()]));
    const values = new Map<string, BACNetAppData[]>();
    for (const obj of r.values)
      for (const p of obj.values)
        values.set(`${obj.objectId.type}:${obj.objectId.instance}:${p.id}`, p.value);
    for (const { i, ref } of batch) {
      const v = values.get(`${ref.object.type}:${ref.object.instance}:${ref.property}`);
      out[i] = v
        ? convert(v, tags[i]!.valueType)
        : new ReadFailure('the device did not answer this property');
    }
  }

  async watch(tags: readonly TagSpec[], sink: ValueSink): Promise<readonly TagSpec[]> {
    if (this.device.props.useCov === 'false' || !this.#cov) return tags;
    const shared = this.#shared;
    if (!shared) throw new Error('not connected');
    const lifetime = Number(this.device.props.covLifetime ?? 300) || 300;
    const byObject = new Map<string, TagSpec[]>();
    const polled: TagSpec[] = [];
    for (const tag of tags) {
      let ref: Ref;
      try {
        ref = refOf(tag);
      } catch {
        polled.push(tag);
        continue;
      }
      if (ref.property !== PRESENT_VALUE) {
        polled.push(tag);
        continue;
      }
      const k = `${ref.object.type}:${ref.object.instance}`;
      byObject.set(k, [...(byObject.get(k) ?? []), tag]);
    }
    for (const [k, s] of this.#subs) {
      if (byObject.has(k)) continue;
      shared.cov.delete(s.process);
      this.#subs.delete(k);
      await shared.client
        .subscribeCov(this.#receiver, refOf(s.tags[0]!).object, s.process, true, false, 0)
        .catch(() => undefined);
    }
    for (const [k, group] of byObject) {
      const have = this.#subs.get(k);
      const process = have?.process ?? nextProcessId++;
      const sub = { process, tags: group };
      shared.cov.set(process, (values) => {
        const pv = values.find((v) => v.property.id === PRESENT_VALUE);
        if (pv) for (const tag of sub.tags) sink(tag, convert(pv.value, tag.valueType), Date.now());
      });
      if (!have) {
        try {
          await this.#call((c) =>
            c.subscribeCov(this.#receiver, refOf(group[0]!).object, process, false, false, lifetime),
          );
        } catch (err) {
          shared.cov.delete(process);
          if (isTimeout(err)) throw err;
          polled.push(...group);
          continue;
        }
      }
      this.#subs.set(k, sub);
    }
    this.#startTimers(lifetime);
    return polled;
  }

  #startTimers(lifetime: number): void {
    if (this.#timers.length > 0) return;
    const renew = setInterval(
      () => {
        for (const s of this.#subs.values())
          void this.#call((c) =>
            c.subscribeCov(this.#receiver, refOf(s.tags[0]!).object, s.process, false, false, lifetime),
          ).catch(() => undefined);
      },
      (lifetime * 1000) / 2,
    );
    const heartbeat = setInterval(() => {
      if (this.#subs.size === 0) return;
      this.#call((c) =>
        c.readProperty(this.#receiver, { type: DEVICE, instance: this.#deviceId }, OBJECT_NAME),
      ).catch((err: unknown) => {
        if (isTimeout(err) && !this.#closed)
          this.ctx.lost(`no answer from ${this.#address}: ${errorText(err)}`);
      });
    }, HEARTBEAT_MS);
    renew.unref();
    heartbeat.unref();
    this.#timers.push(renew, heartbeat);
  }

  /** Browse: the Object_List, the names of the objects of the known types (at most 5,000). */
  async objects(): Promise<BrowseNode[]> {
    const device = { type: DEVICE, instance: this.#deviceId };
    const list = await this.#call((c) => c.readProperty(this.#receiver, device, OBJECT_LIST));
    const objects = list.values
      .map((v) => v.value as BACNetObjectID)
      .filter((o) => REGISTERS.has(o.type))
      .slice(0, 5000);
    const names = new Map<string, string>();
    for (let k = 0; k < objects.length; k += this.#batch) {
      const batch = objects.slice(k, k + this.#batch);
      const r = await this.#call((c) =>
        c.readPropertyMultiple(
          this.#receiver,
          batch.map((objectId) => ({ objectId, properties: [{ id: OBJECT_NAME, index: 0xffffffff }] })),
        ),
      );
      for (const o of r.values) {
        const v = o.values[0]?.value[0];
        if (v && typeof v.value === 'string') names.set(`${o.objectId.type}:${o.objectId.instance}`, v.value);
      }
    }
    const folders = new Map<string, BrowseNode[]>();
    for (const o of objects) {
      const register = REGISTERS.get(o.type)!;
      const name = names.get(`${o.type}:${o.instance}`) ?? `${register}${o.instance}`;
      const leaves = folders.get(register) ?? [];
      leaves.push({
        Name: name,
        Description: `${register} ${o.instance} ${name}`,
        RegisterName: register,
        ValueType: VALUE_TYPES[register]!,
        Properties: [{ Name: 'address', Value: String(o.instance) }],
      });
      folders.set(register, leaves);
    }
    return [...folders].map(([Name, Children]) => ({ Name, Description: `${Name} objects`, Children }));
  }

  async write(tag: TagSpec, value: unknown): Promise<void> {
    const lib = this.#lib!;
    const ref = refOf(tag);
    const T = lib.ApplicationTag;
    let data: BACNetAppData;
    if (
      ref.property === PRESENT_VALUE &&
      (ref.object.type === 3 || ref.object.type === 4 || ref.object.type === 5)
    )
      data = { type: T.ENUMERATED, value: value === true || Number(value) === 1 ? 1 : 0 };
    else if (ref.property === PRESENT_VALUE && ref.object.type >= 13)
      data = { type: T.UNSIGNED_INTEGER, value: Number(value) };
    else if (tag.valueType === 'string') data = { type: T.CHARACTER_STRING, value: String(value) };
    else if (tag.valueType === 'bool') data = { type: T.BOOLEAN, value: Boolean(value) };
    else if (tag.valueType === 'int32') data = { type: T.SIGNED_INTEGER, value: Number(value) };
    else if (tag.valueType === 'uint32') data = { type: T.UNSIGNED_INTEGER, value: Number(value) };
    else if (tag.valueType === 'float64') data = { type: T.DOUBLE, value: Number(value) };
    else data = { type: T.REAL, value: Number(value) };
    const priority = Number(tag.props.priority ?? 16) || 16;
    try {
      await this.#call((c) =>
        c.writeProperty(this.#receiver, ref.object, ref.property, [data], { priority }),
      );
    } catch (err) {
      throw new Error(
        `write ${tag.register} ${ref.object.instance} property ${ref.property}: ${errorText(err)}`,
      );
    }
  }
}

/** The device's objects (Object_List), one folder per object type, each object's name read. */
export async function browseBacnet(device: DeviceSpec): Promise<BrowseNode[]> {
  const session = new BacnetSession(device, { logger: undefined, dataDir: '', lost: () => undefined });
  await session.connect();
  try {
    return await session.objects();
  } finally {
    await session.close();
  }
}

const VALUE_TYPES: Record<string, string> = {
  AI: 'float32',
  AO: 'float32',
  AV: 'float32',
  BI: 'bool',
  BO: 'bool',
  BV: 'bool',
  MSI: 'uint32',
  MSO: 'uint32',
  MSV: 'uint32',
};

export const bacnetDriver: DriverFactory = {
  key: 'bacnet-ip',
  create: (device, ctx) => new BacnetSession(device, ctx),
  browse: async (device, driver) =>
    browseBacnet({
      id: device.id,
      name: device.name,
      driver,
      props: device.properties,
      aliasTopics: false,
    }),
};
