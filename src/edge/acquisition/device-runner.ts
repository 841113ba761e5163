/**
 * One device of the acquisition engine: its connection state machine (connecting → connected,
 * failed with a reason → reconnect after a capped exponential backoff, stopped), the scheduler that
 * reads the tags due at each interval in one driver call, the publishing of each read on the
 * DataHub and the writes of commands through the driver. The engine owns the runners.
 */
import type { TagConfig, TagRuntimeState } from '../devicehub/index.js';
import type { RouteHolder } from '../datahub/index.js';
import { coerce, datatypeOf } from './convert.js';
import type { AcquisitionEngine, ConnectionState, DeviceStatus } from './engine.js';
import { LatencyHistogram } from './metrics.js';
import { devicePart, ReadPayload, ValuePayloadEncoder } from './payload.js';
import { dataPlaneWait } from './slices.js';
import { flat } from './subjects.js';
import { tagSpec } from './tag-spec.js';
import {
  ReadFailure,
  type DeviceSpec,
  type DriverFactory,
  type DriverSession,
  type ReadResult,
  type TagSpec,
  type TagValue,
} from './types.js';

interface Group {
  intervalMs: number;
  /** Replaced, never changed in place: drivers cache their read plan by this array. */
  tags: TagSpec[];
  timer: NodeJS.Timeout | undefined;
  /** A tick came while the group's read still ran: the next read starts as soon as it ends. */
  missed?: boolean;
}

/** Per tag: what was last published (PublishCoV) and the tag's state (GetTagStatus). */
interface TagRuntime {
  last: unknown;
  hasLast: boolean;
  /** Undefined until a first read. */
  ok: boolean | undefined;
  reason: string;
  /** When `ok`, `reason` or the value last changed. */
  at: number;
  formulaError: string | undefined;
}

/** One object per tag (100,000 on a large site): the spec and its runtime state together. */
interface TagEntry extends TagRuntime, RouteHolder {
  spec: TagSpec;
  /** The bytes of its values for NATS connections (made on its first successful read). */
  encoder: ValuePayloadEncoder | undefined;
}

export class DeviceRunner {
  readonly status: DeviceStatus;
  /** The device's tags by ID, and by tag name (for commands: made at the first, then kept up to date). */
  readonly #tags = new Map<string, TagEntry>();
  #byTagName: Map<string, TagSpec> | undefined;
  #groups = new Map<number, Group>();
  #session: DriverSession | undefined;
  #generation = 0;
  #attempt = 0;
  #retry: NodeJS.Timeout | undefined;
  #pushed: TagSpec[] = [];
  /** Intervals whose read is in flight (kept across reschedules: one read per interval at a time). */
  readonly #busy = new Set<number>();
  /** The device's part of its tags' value messages (`payload.ts`). */
  #devicePart: string | undefined;
  /** Bumped when a tag is set or forgotten: the entries below are good while it stays. */
  #version = 0;
  /**
   * The entries of a read's tags (a group's array, replaced and never changed in place), looked up
   * once per array and version instead of once per value (the per-value look-up was a third of the
   * publish's own time in a profile of 40,000 SNMP values/s).
   */
  #entries = new WeakMap<readonly TagSpec[], { version: number; entries: (TagEntry | undefined)[] }>();

  constructor(
    readonly engine: AcquisitionEngine,
    readonly spec: DeviceSpec,
    readonly signature: string,
    readonly factory: DriverFactory,
  ) {
    this.status = {
      id: spec.id,
      name: spec.name,
      driver: spec.driver.name,
      state: 'connecting',
      reason: '',
      since: Date.now(),
      tags: 0,
      reads: 0,
      errors: 0,
      latency: new LatencyHistogram(),
      overruns: 0,
      connects: 0,
      writes: 0,
      writeErrors: 0,
    };
  }

  get state(): ConnectionState {
    return this.status.state;
  }

  #setState(state: ConnectionState, reason = ''): void {
    if (this.status.state === state && this.status.reason === reason) return;
    this.status.state = state;
    this.status.reason = reason;
    this.status.since = Date.now();
    const log = this.engine.logger;
    if (state === 'failed')
      log?.warn({ device: this.spec.name, reason }, 'acquisition: device connection failed');
    else log?.info({ device: this.spec.name, state }, `acquisition: device ${state}`);
  }

  /** The tags in the order they were loaded. */
  get tags(): TagSpec[] {
    return Array.from(this.#tags.values(), (e) => e.spec);
  }

  /** Runtime state by tag ID (handed to the runner that replaces this one). */
  get runtime(): ReadonlyMap<string, TagRuntime> {
    const out = new Map<string, TagRuntime>();
    for (const [id, e] of this.#tags) out.set(id, e);
    return out;
  }

  tagByName(tagName: string): TagSpec | undefined {
    this.#byTagName ??= new Map([...this.#tags.values()].map((e) => [e.spec.tagName, e.spec] as const));
    return this.#byTagName.get(tagName);
  }

  tagState(id: string): TagRuntimeState | undefined {
    const rt = this.#tags.get(id);
    if (!rt || rt.ok === undefined) return undefined;
    // The value is the one kept for PublishCoV (no copy); `at` is also set when it changes.
    return rt.ok && rt.hasLast
      ? { state: 'OK', reason: rt.reason, at: rt.at, value: rt.last, hasValue: true }
      : { state: rt.ok ? 'OK' : 'Failed', reason: rt.reason, at: rt.at };
  }

  /** Sets or updates one tag; its state carries over, its last value does not (settings changed). */
  #put(c: TagConfig, previous?: TagRuntime): TagSpec {
    const { tag, formulaError } = tagSpec(c);
    const prev = previous ?? this.#tags.get(c.id);
    this.#version++;
    this.#tags.set(c.id, {
      spec: tag,
      encoder: undefined,
      // The subscriptions of `spec.rawSubject` (an entry is made anew when the spec changes).
      route: undefined,
      routeGeneration: -1,
      last: undefined,
      hasLast: false,
      ok: prev?.ok,
      reason: prev?.reason ?? '',
      at: prev?.at ?? 0,
      formulaError,
    });
    this.#byTagName?.set(tag.tagName, tag);
    return tag;
  }

  #forget(id: string): TagSpec | undefined {
    const e = this.#tags.get(id);
    if (!e) return undefined;
    this.#version++;
    this.#tags.delete(id);
    if (this.#byTagName?.get(e.spec.tagName) === e.spec) this.#byTagName.delete(e.spec.tagName);
    return e.spec;
  }

  /** All the device's tags at once (a new runner, or a full reload); reschedules the device. */
  replaceTags(configs: TagConfig[], previous?: ReadonlyMap<string, TagRuntime>): void {
    const keep = new Set(configs.map((c) => c.id));
    for (const id of [...this.#tags.keys()]) if (!keep.has(id)) this.#forget(id);
    for (const c of configs) {
      const old = this.#tags.get(c.id);
      if (old && old.spec.tagName !== c.tagName) this.#forget(c.id);
      this.#put(c, previous?.get(c.id));
    }
    this.status.tags = this.#tags.size;
    if (this.state === 'stopped' || (this.state === 'connecting' && this.#groups.size === 0)) return;
    if (this.state === 'connected') void this.#watchAndSchedule(this.#generation);
    else this.#schedule(this.tags);
  }

  /**
   * Some tags changed: `upserts` created or updated, `removed` deleted. Only the interval groups
   * they were or are in are rebuilt, and the changed tags are read at once.
   */
  applyTags(upserts: TagConfig[], removed: string[]): void {
    const touched = new Set<number>();
    for (const id of removed) {
      const old = this.#forget(id);
      if (old) touched.add(old.intervalMs);
    }
    for (const c of upserts) {
      const old = this.#forget(c.id);
      if (old) touched.add(old.intervalMs);
    }
    const fresh = upserts.map((c) => this.#put(c, undefined));
    for (const tag of fresh) touched.add(tag.intervalMs);
    this.status.tags = this.#tags.size;
    if (this.state === 'stopped') return;
    if (this.#session?.watch && this.state === 'connected') {
      // Push drivers subscribe per tag set: hand them the device's new set.
      void this.#watchAndSchedule(this.#generation);
      return;
    }
    // Not scheduled yet (the first connect is under way): the connect schedules every tag.
    if (this.#groups.size === 0 && this.state === 'connecting') return;
    this.#regroup(touched);
    if (this.state === 'connected' && fresh.length > 0) void this.#readNow(fresh);
  }

  /** Rebuilds the groups of the given intervals from the tags; other groups keep ticking. */
  #regroup(intervals: Set<number>): void {
    for (const intervalMs of intervals) {
      const tags: TagSpec[] = [];
      for (const e of this.#tags.values()) if (e.spec.intervalMs === intervalMs) tags.push(e.spec);
      const g = this.#groups.get(intervalMs);
      if (tags.length === 0) {
        if (g) {
          clearInterval(g.timer);
          this.#groups.delete(intervalMs);
        }
      } else if (g) {
        g.tags = tags;
      } else {
        const group: Group = { intervalMs, tags, timer: undefined };
        group.timer = setInterval(() => void this.#tick(group), intervalMs);
        this.#groups.set(intervalMs, group);
      }
    }
  }

  /** Reads the given tags now, apart from their groups' ticks (changed tags: new settings at once). */
  async #readNow(tags: TagSpec[]): Promise<void> {
    const session = this.#session;
    if (this.state !== 'connected' || !session) return;
    await this.#read(session, this.#generation, tags);
  }

  start(): void {
    void this.#connect();
  }

  async stop(): Promise<void> {
    this.#generation++;
    clearTimeout(this.#retry);
    this.#clearGroups();
    this.#setState('stopped');
    const s = this.#session;
    this.#session = undefined;
    await s?.close();
  }

  /** A failed device connects now instead of at the end of its backoff. */
  retryNow(): void {
    if (this.state !== 'failed') return;
    clearTimeout(this.#retry);
    void this.#connect();
  }

  async #connect(): Promise<void> {
    const gen = ++this.#generation;
    this.#setState('connecting', this.status.reason);
    const session = this.factory.create(this.spec, {
      logger: this.engine.logger,
      dataDir: this.engine.dataDir,
      trustedCertificates: () => this.engine.trustedCertificates(),
      lost: (reason) => {
        if (gen === this.#generation && this.#session === session) void this.#lost(reason);
      },
    });
    this.#session = session;
    try {
      await session.connect();
    } catch (err) {
      if (gen !== this.#generation) return;
      this.#session = undefined;
      await session.close();
      this.#failed(gen, errorText(err));
      return;
    }
    if (gen !== this.#generation) {
      await session.close();
      return;
    }
    this.#attempt = 0;
    this.status.connects++;
    this.#setState('connected');
    await this.#watchAndSchedule(gen);
  }

  async #watchAndSchedule(gen: number): Promise<void> {
    const session = this.#session;
    let polled: readonly TagSpec[] = this.tags;
    if (session?.watch) {
      try {
        polled = await session.watch(this.tags, (tag, value, ts) => {
          if (gen === this.#generation) this.#publish(tag, value, ts);
        });
      } catch (err) {
        if (gen === this.#generation) void this.#lost(errorText(err));
        return;
      }
      if (gen !== this.#generation) return;
      const polledIds = new Set(polled.map((t) => t.id));
      this.#pushed = this.tags.filter((t) => !polledIds.has(t.id));
    } else {
      this.#pushed = [];
    }
    this.#schedule(polled);
  }

  #failed(gen: number, reason: string): void {
    this.#setState('failed', reason);
    this.#failAll(`device not connected: ${reason}`);
    // A device with `ReconnectInterval` (seconds; the S7 driver) waits that long; others back off.
    const fixed = Number(this.spec.props.ReconnectInterval);
    const delay = fixed > 0 ? fixed * 1000 : this.engine.backoff(this.#attempt++);
    clearTimeout(this.#retry);
    this.#retry = setTimeout(() => {
      if (gen === this.#generation) void this.#connect();
    }, delay);
    // Polled tags keep ticking while disconnected: each tick publishes the failure.
    if (this.#groups.size === 0) this.#schedule(this.tags);
  }

  async #lost(reason: string): Promise<void> {
    if (this.state !== 'connected') return;
    const gen = ++this.#generation;
    const s = this.#session;
    this.#session = undefined;
    this.#failed(gen, reason);
    await s?.close();
  }

  /** Marks every tag Failed (publishing a failure once for push tags, which have no ticks). */
  #failAll(reason: string): void {
    const now = Date.now();
    for (const tag of this.#pushed) this.#publish(tag, new ReadFailure(reason), now);
    this.#pushed = [];
    for (const e of this.#tags.values()) {
      if (e.ok !== false) this.#tagState(e.spec, e, false, reason);
    }
  }

  #clearGroups(): void {
    for (const g of this.#groups.values()) clearInterval(g.timer);
    this.#groups.clear();
  }

  #schedule(tags: readonly TagSpec[]): void {
    this.#clearGroups();
    for (const tag of tags) {
      let g = this.#groups.get(tag.intervalMs);
      if (!g) {
        g = { intervalMs: tag.intervalMs, tags: [], timer: undefined };
        this.#groups.set(tag.intervalMs, g);
      }
      g.tags.push(tag);
    }
    for (const g of this.#groups.values()) {
      g.timer = setInterval(() => void this.#tick(g), g.intervalMs);
      // A first read at once rather than an interval later.
      setImmediate(() => {
        if (this.#groups.get(g.intervalMs) === g) void this.#tick(g);
      });
    }
  }

  async #tick(g: Group): Promise<void> {
    if (this.#busy.has(g.intervalMs)) {
      // A read longer than the interval: counted, and the next read follows it at once (one
      // catch-up read, however many ticks it missed), so a device slower than its interval is
      // polled back to back rather than every other tick.
      this.status.overruns++;
      g.missed = true;
      return;
    }
    g.missed = false;
    const session = this.#session;
    if (this.state !== 'connected' || !session) {
      if (this.state === 'failed') {
        const failure = new ReadFailure(`device not connected: ${this.status.reason}`);
        const now = Date.now();
        for (const tag of g.tags) this.#publish(tag, failure, now);
      }
      return;
    }
    this.#busy.add(g.intervalMs);
    const t0 = performance.now();
    let done: boolean;
    try {
      done = await this.#read(session, this.#generation, g.tags);
    } finally {
      this.#busy.delete(g.intervalMs);
    }
    if (done) this.status.latency.observe(performance.now() - t0);
    if (done && g.missed)
      setImmediate(() => {
        // Unless a tick of the interval started the next read meanwhile, or the group was replaced.
        if (g.missed && this.#groups.get(g.intervalMs) === g) void this.#tick(g);
      });
  }

  /** One driver read of `tags`, each result published once; answers whether it completed. */
  async #read(session: DriverSession, gen: number, tags: readonly TagSpec[]): Promise<boolean> {
    let published: Uint8Array | undefined;
    let results: ReadResult[];
    const known = this.#entriesOf(tags);
    // The entry of tag i: from the list while no tag was set or forgotten since, else looked up.
    const entry = (i: number): TagEntry | undefined =>
      known.version === this.#version ? known.entries[i] : this.#tags.get(tags[i]!.id);
    try {
      results = await session.read(tags, (i, result) => {
        if (gen !== this.#generation || i < 0 || i >= tags.length) return;
        published ??= new Uint8Array(tags.length);
        if (published[i] === 1) return;
        published[i] = 1;
        this.#publish(tags[i]!, result, Date.now(), entry(i));
      });
    } catch (err) {
      if (gen === this.#generation) void this.#lost(errorText(err));
      return false;
    }
    if (gen !== this.#generation) return false;
    const now = Date.now();
    for (let i = 0; i < tags.length; i++) {
      // The values go out within the data plane's budget per turn of the event loop, shared by
      // every device (slices.ts), so that neither one large read nor the reads of many devices
      // due at once hold the main thread (the first read of 2,000 tags after a start, with every
      // subscriber's first sight of them, took 40-70 ms in one stretch; 100 devices of 1,000
      // tags, each yielding after its own 8 ms, up to 600 ms and more).
      if ((i & 63) === 0) {
        for (let wait = dataPlaneWait(); wait !== undefined; wait = dataPlaneWait()) {
          await wait;
          if (gen !== this.#generation) return false;
        }
      }
      if (published === undefined || published[i] === 0)
        this.#publish(tags[i]!, results[i] ?? null, now, entry(i));
    }
    return true;
  }

  #entriesOf(tags: readonly TagSpec[]): { version: number; entries: (TagEntry | undefined)[] } {
    let known = this.#entries.get(tags);
    if (known === undefined || known.version !== this.#version) {
      known = { version: this.#version, entries: tags.map((t) => this.#tags.get(t.id)) };
      this.#entries.set(tags, known);
    }
    return known;
  }

  #tagState(tag: TagSpec, rt: TagRuntime, ok: boolean, reason: string): void {
    if (rt.ok === ok && rt.reason === reason) return;
    rt.ok = ok;
    rt.reason = reason;
    rt.at = Date.now();
  }

  #publish(tag: TagSpec, result: ReadResult, timestamp: number, entry = this.#tags.get(tag.id)): void {
    // A tag deleted or changed since this read began: its value is not published.
    if (!entry || entry.spec !== tag) return;
    const rt = entry;
    const hub = this.engine.hub;
    if (hub.closed) return;
    let value: TagValue = null;
    let failure: string | undefined;
    if (typeof result === 'object' && result instanceof ReadFailure) failure = result.reason;
    else if (rt.formulaError) failure = rt.formulaError;
    else {
      value = result;
      if (tag.formula) {
        const n =
          typeof value === 'number' ? value : typeof value === 'boolean' ? Number(value) : Number(value);
        if (typeof value === 'object' || Number.isNaN(n))
          failure = `TagFormula needs a number, the device gave ${JSON.stringify(value)}`;
        else value = tag.formula(n);
      }
    }
    let datatype = datatypeOf(tag.valueType);
    if (failure !== undefined) {
      this.status.errors++;
      this.#tagState(tag, rt, false, failure);
      const payload = {
        success: false,
        datatype,
        timestamp,
        registerId: tag.id,
        value: null,
        deviceID: tag.deviceId,
        deviceName: tag.deviceName,
        tagName: tag.tagName,
        description: tag.description,
        metadata: tag.metadata,
        error: failure,
      };
      rt.hasLast = false;
      hub.publish(tag.rawSubject, payload);
      if (tag.aliasSubject !== null) hub.publish(tag.aliasSubject, payload);
      return;
    }
    this.status.reads++;
    if (rt.ok !== true) this.#tagState(tag, rt, true, '');
    const same = rt.hasLast && sameValue(rt.last, value);
    if (tag.publishCoV && same) return;
    // `at` doubles as the value's timestamp (GetTagStatus): no more memory per tag.
    if (!same) rt.at = timestamp;
    rt.last = value;
    rt.hasLast = true;
    if (tag.formula && typeof value === 'number' && !Number.isInteger(value) && datatype !== 'float64')
      datatype = 'float64';
    // Made by `new`, not a literal: no allocation site for V8 to pretenure (payload.ts).
    const payload = new ReadPayload(datatype, timestamp, tag, value);
    const encoder = (entry.encoder ??= new ValuePayloadEncoder(
      tag,
      datatypeOf(tag.valueType),
      tag.deviceId === this.spec.id && tag.deviceName === this.spec.name
        ? (this.#devicePart ??= devicePart(this.spec.id, this.spec.name))
        : devicePart(tag.deviceId, tag.deviceName),
    ));
    // `publish` without its options to read (no reply, no headers): the bus's own path.
    hub.dispatchRouted(entry, tag.rawSubject, payload, encoder);
    if (tag.aliasSubject !== null)
      hub.dispatch(tag.aliasSubject, payload, '', undefined, undefined, true, encoder);
    if (this.engine.valueInterest)
      hub.publish((tag.valueSubject ??= flat(`devicehub.value.${tag.deviceName}.${tag.tagName}`)), value);
  }

  /** Writes through the driver; answers the value written (as the tag's type). */
  async write(tag: TagSpec, input: unknown): Promise<unknown> {
    const session = this.#session;
    if (this.state !== 'connected' || !session) {
      this.status.writeErrors++;
      throw new Error(
        `device ${JSON.stringify(this.spec.name)} is not connected: ${this.status.reason || this.state}`,
      );
    }
    let value: unknown;
    try {
      value = coerce(input, tag.valueType);
    } catch (err) {
      this.status.writeErrors++;
      throw new Error(`tag ${JSON.stringify(tag.tagName)}: ${errorText(err)}`);
    }
    try {
      await session.write(tag, value);
    } catch (err) {
      this.status.writeErrors++;
      throw err instanceof Error ? err : new Error(String(err));
    }
    this.status.writes++;
    return value;
  }
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a === 'number' && typeof b === 'number') return Number.isNaN(a) && Number.isNaN(b);
  if (typeof a === 'object' && typeof b === 'object' && a !== null && b !== null)
    return JSON.stringify(a) === JSON.stringify(b);
  return false;
}

export function errorText(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  if (typeof err === 'object' && err !== null && 'message' in err)
    return String((err as { message: unknown }).message);
  return String(err);
}
