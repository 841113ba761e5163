/**
 * The BACnet/IP driver, on @bacnet-js/client: the device is found by Who-Is (its instance given or
 * the first to answer; its I-Am gives its maximum APDU), its Protocol_Services_Supported read once;
 * the tags due are read with ReadPropertyMultiple, as many properties a request as the device's
 * APDU holds in one unsegmented answer (`bacnet-plan.ts`; `maxPropertiesPerRequest` caps it), up to
 * `maxConcurrentRequests` requests in flight at once (each with its own invoke id; 1: one at a
 * time), ReadProperty when the device lacks ReadPropertyMultiple; each property with its own error;
 * a write is a WriteProperty at the tag's `priority`. With `useCov` and a device that offers SubscribeCOV, the Present_Value tags
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
import {
  MAX_APDU_BIP,
  PRESENT_VALUE,
  apduCode,
  planBatches,
  splitBatch,
  tooLong,
  valueBytes,
  type Batch,
  type Ref,
} from './bacnet-plan.js';
import {
  acquire,
  inSlot,
  load,
  names,
  release,
  type Client,
  type Lib,
  type Shared,
} from './bacnet-socket.js';
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

let nextProcessId = 1;

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
const OBJECT_NAME = 77;
const OBJECT_LIST = 76;
const SERVICES_SUPPORTED = 97;
const DEVICE = 8;
const MAX_APDU_ACCEPTED = 62;
const HEARTBEAT_MS = 5000;
/** Bytes of an answer's APDU before its service data (complex ACK header), with a margin. */
const ACK_HEAD = 8;

/** The answer size this edge accepts (MaxApduLengthAccepted code 5, 1476 octets). */
const APDU_ACCEPTED = apduCode(MAX_APDU_BIP);

interface Plan {
  batches: Batch[];
  /** The same properties one by one (devices without ReadPropertyMultiple). */
  singles: Array<{ i: number; ref: Ref }>;
  invalid: Array<[number, string]>;
  /** Requests split during the read in progress (too long for the device), applied after it. */
  splits: Map<Batch, [Batch, Batch]>;
}

const isTimeout = (err: unknown) => errorText(err).includes('ERR_TIMEOUT');

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
  /** The device's maximum APDU (from its I-Am or Max_APDU_Length_Accepted), at most 1476. */
  #apdu = 480;
  /** Read plans by tag list (the engine passes the same array each tick), for this connection. */
  #plans = new WeakMap<readonly TagSpec[], Plan>();
  readonly #timeout: number;
  readonly #retries: number;
  readonly #maxProps: number;
  readonly #concurrency: number;

  constructor(
    readonly device: DeviceSpec,
    readonly ctx: DriverContext,
  ) {
    this.#timeout = Number(device.props.requestTimeoutMs ?? 3000) || 3000;
    this.#retries = Number(device.props.retryRequestCount ?? 0) || 0;
    this.#maxProps = Number(device.props.maxPropertiesPerRequest ?? 0) || 0;
    this.#concurrency = Math.max(1, Math.min(16, Number(device.props.maxConcurrentRequests ?? 4) || 4));
  }

  get #receiver() {
    return { address: this.#address };
  }

  async connect(): Promise<void> {
    const p = this.device.props;
    this.#lib = await load();
    this.#plans = new WeakMap();
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
        payload: { address: string; deviceId: number; maxApdu?: number };
        header?: { sender: { address?: string } };
      }) => {
        const from = c.header?.sender.address ?? c.payload.address;
        const sameHost = from?.split(':')[0] === this.#address.split(':')[0];
        if ((instance < 0 || c.payload.deviceId === instance) && (sameHost || instance >= 0)) {
          if (!sameHost && from) this.#address = from;
          if (Number(c.payload.maxApdu) >= 50) this.#apdu = Math.min(MAX_APDU_BIP, Number(c.payload.maxApdu));
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
    const max = await this.#call((c) =>
      c.readProperty(this.#receiver, { type: DEVICE, instance }, MAX_APDU_ACCEPTED),
    ).catch(() => undefined);
    const n = Number(max?.values[0]?.value);
    if (n >= 50) this.#apdu = Math.min(MAX_APDU_BIP, n);
    return instance;
  }

  /** A confirmed request with the device's retries; a timeout after them means the device is away. */
  async #call<T>(fn: (c: Client) => Promise<T>): Promise<T> {
    let attempt = 0;
    for (;;) {
      const shared = this.#shared;
      if (!shared || this.#closed) throw new Error('not connected');
      try {
        return await inSlot(shared, () => fn(shared.client));
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

  #plan(tags: readonly TagSpec[]): Plan {
    let plan = this.#plans.get(tags);
    if (plan) return plan;
    plan = { batches: [], singles: [], invalid: [], splits: new Map() };
    const refs: Array<{ i: number; ref: Ref; bytes: number }> = [];
    tags.forEach((tag, i) => {
      try {
        const ref = refOf(tag);
        refs.push({ i, ref, bytes: valueBytes(ref, tag.valueType, Number(tag.props.length ?? 0) || 0) });
      } catch (err) {
        plan!.invalid.push([i, errorText(err)]);
      }
    });
    plan.singles = refs;
    plan.batches = planBatches({ refs, budget: this.#apdu - ACK_HEAD, maxProperties: this.#maxProps });
    this.#plans.set(tags, plan);
    return plan;
  }

  /**
   * The tags' values: the plan's requests, up to `maxConcurrentRequests` in flight (a worker takes
   * the next request as soon as its answer is in); each result handed over as its answer arrives.
   */
  async read(
    tags: readonly TagSpec[],
    early?: (index: number, result: ReadResult) => void,
  ): Promise<ReadResult[]> {
    const out = new Array<ReadResult>(tags.length);
    const plan = this.#plan(tags);
    const hand = (i: number, result: ReadResult) => {
      out[i] = result;
      early?.(i, result);
    };
    for (const [i, reason] of plan.invalid) hand(i, new ReadFailure(reason));
    const jobs = this.#rpm ? plan.batches.length : plan.singles.length;
    let next = 0;
    let failed = false;
    const worker = async () => {
      while (next < jobs && !failed) {
        const k = next++;
        try {
          if (this.#rpm) await this.#readBatch(plan, plan.batches[k]!, tags, hand);
          else await this.#readSingle(plan.singles[k]!, tags, hand);
        } catch (err) {
          failed = true;
          throw err;
        }
      }
    };
    const workers = Array.from({ length: Math.min(this.#concurrency, jobs) }, worker);
    try {
      await Promise.all(workers);
    } finally {
      if (plan.splits.size > 0) {
        // Requests the device found too long are replaced by their halves from now on.
        const expand = (b: Batch): Batch[] => plan.splits.get(b)?.flatMap(expand) ?? [b];
        plan.batches = plan.batches.flatMap(expand);
        plan.splits.clear();
      }
    }
    return out;
  }

  /** A timeout (after the retries) or a closed session fails the whole read: the device is away. */
  #away(err: unknown): Error | undefined {
    return isTimeout(err) || this.#closed
      ? new Error(`no answer from ${this.#address}: ${errorText(err)}`)
      : undefined;
  }

  async #readSingle(
    { i, ref }: { i: number; ref: Ref },
    tags: readonly TagSpec[],
    hand: (i: number, r: ReadResult) => void,
  ): Promise<void> {
    try {
      const r = await this.#call((c) => c.readProperty(this.#receiver, ref.object, ref.property));
      hand(i, convert(r.values, tags[i]!.valueType));
    } catch (err) {
      const away = this.#away(err);
      if (away) throw away;
      hand(i, new ReadFailure(errorText(err)));
    }
  }

  async #readBatch(
    plan: Plan,
    b: Batch,
    tags: readonly TagSpec[],
    hand: (i: number, r: ReadResult) => void,
  ): Promise<void> {
    let r: Awaited<ReturnType<Client['readPropertyMultiple']>>;
    try {
      r = await this.#call((c) => c.readPropertyMultiple(this.#receiver, b.spec, { maxApdu: APDU_ACCEPTED }));
    } catch (err) {
      const away = this.#away(err);
      if (away) throw away;
      if (b.size > 1 && tooLong(errorText(err))) {
        const halves = splitBatch(b);
        plan.splits.set(b, halves);
        for (const h of halves) await this.#readBatch(plan, h, tags, hand);
        return;
      }
      const failure = new ReadFailure(errorText(err));
      for (const o of b.objects) for (const p of o.props) for (const i of p.tags) hand(i, failure);
      return;
    }
    // The answer lists the objects and properties in the request's order; looked up when not.
    for (let k = 0; k < b.objects.length; k++) {
      const o = b.objects[k]!;
      let got = r.values[k];
      if (got?.objectId.type !== o.objectId.type || got.objectId.instance !== o.objectId.instance)
        got = r.values.find(
          (x) => x.objectId.type === o.objectId.type && x.objectId.instance === o.objectId.instance,
        );
      for (let j = 0; j < o.props.length; j++) {
        const p = o.props[j]!;
        let v = got?.values[j];
        if (v?.id !== p.id) v = got?.values.find((x) => x.id === p.id);
        for (const i of p.tags)
          hand(
            i,
            v
              ? convert(v.value, tags[i]!.valueType)
              : new ReadFailure('the device did not answer this property'),
          );
      }
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
    const refs = objects.map((object, i) => {
      const ref = { object, property: OBJECT_NAME };
      return { i, ref, bytes: valueBytes(ref, 'string', 32) };
    });
    const batches = planBatches({ refs, budget: this.#apdu - ACK_HEAD, maxProperties: this.#maxProps });
    for (const batch of batches) {
      const r = await this.#call((c) =>
        c.readPropertyMultiple(this.#receiver, batch.spec, { maxApdu: APDU_ACCEPTED }),
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
