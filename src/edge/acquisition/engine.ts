/**
 * The acquisition engine: one runner per device of a pollable driver, each with a connection
 * state machine (connecting → connected, failed with a reason → reconnect after a capped
 * exponential backoff, stopped) and a scheduler that reads the tags due at each interval in one
 * driver call (the driver coalesces neighbouring addresses into block reads). Every read is
 * published once on the DataHub in the payload of the wire notes; a message on a tag's Command
 * subject is written through the driver and answered on its WriteResponse subject.
 *
 * The engine follows the DeviceHub: `sync()` (called on every change notification) compares the
 * stored devices and tags with the running ones and starts, restarts, retunes or stops runners.
 */
import type { Logger } from 'pino';
import type { DataHub, Message } from '../datahub/index.js';
import { findDriver, type DeviceHubService } from '../devicehub/index.js';
import type { DeviceRow, RegisterWithDevice } from '../devicehub/repository.js';
import { coerce, datatypeOf } from './convert.js';
import { compileFormula, FormulaError, type Formula } from './formula.js';
import { LatencyHistogram } from './metrics.js';
import {
  ReadFailure,
  type DeviceSpec,
  type DriverFactory,
  type DriverSession,
  type ReadResult,
  type TagSpec,
  type TagValue,
} from './types.js';

export type ConnectionState = 'connecting' | 'connected' | 'failed' | 'stopped';

export interface DeviceStatus {
  id: string;
  name: string;
  driver: string;
  state: ConnectionState;
  reason: string;
  since: number;
  tags: number;
  /** Tag values read successfully. */
  reads: number;
  /** Tag reads that failed. */
  errors: number;
  /** Driver read calls (one per interval group and tick) and their latency. */
  latency: LatencyHistogram;
  /** Ticks skipped because the previous read of the group was still running. */
  overruns: number;
  connects: number;
  writes: number;
  writeErrors: number;
}

export interface AcquisitionOptions {
  hub: DataHub;
  devicehub: DeviceHubService;
  drivers: DriverFactory[];
  dataDir: string;
  logger?: Logger | undefined;
  /** First reconnect delay; doubles per failed attempt up to `backoffMaxMs`. */
  backoffInitialMs?: number;
  backoffMaxMs?: number;
  /**
   * The Value subjects (`devicehub.value...`, the value alone) are published `always`, or only
   * while some subscription could match one (`on-interest`, the default: checked twice a second,
   * since publishing 100,000 values a second on subjects nobody reads costs a fifth of a core).
   */
  publishValue?: 'always' | 'on-interest';
}

/** Whether a subscription pattern can match a `devicehub.value.<device>.<tag>` subject. */
export function matchesValueSubjects(pattern: string): boolean {
  const [t0, t1] = pattern.split('.', 2);
  if (t0 === '>') return true;
  if (t0 !== 'devicehub' && t0 !== '*') return false;
  return t1 === 'value' || t1 === '*' || t1 === '>';
}

const COMMAND_PATTERN = 'devicehub.command.>';

export class AcquisitionEngine {
  readonly #opts: AcquisitionOptions;
  readonly #factories: Map<string, DriverFactory>;
  readonly #runners = new Map<string, DeviceRunner>();
  /** `<DeviceName>.<TagName>` → runner and tag, for commands. */
  readonly #byPath = new Map<string, { runner: DeviceRunner; tag: TagSpec }>();
  readonly #log: Logger | undefined;
  #syncing: Promise<void> = Promise.resolve();
  #pending = false;
  #debounce: NodeJS.Timeout | undefined;
  #unsubscribe: (() => void) | undefined;
  #stopped = false;
  #interestTimer: NodeJS.Timeout | undefined;
  /** Whether Value subjects are published now (see `publishValue`). */
  valueInterest = false;

  constructor(options: AcquisitionOptions) {
    this.#opts = options;
    this.#log = options.logger;
    this.#factories = new Map(options.drivers.map((d) => [d.key, d]));
  }

  /** Starts every configured device and follows DeviceHub changes from now on. */
  async start(): Promise<void> {
    const sub = this.#opts.hub.subscribe(COMMAND_PATTERN, (msg) => void this.#command(msg));
    const off = this.#opts.devicehub.onChange(() => this.#scheduleSync());
    this.#unsubscribe = () => {
      off();
      sub.unsubscribe();
    };
    if (this.#opts.publishValue === 'always') this.valueInterest = true;
    else {
      const check = () => {
        const hub = this.#opts.hub;
        this.valueInterest = !hub.closed && hub.subscriptions().some((s) => matchesValueSubjects(s.pattern));
      };
      check();
      this.#interestTimer = setInterval(check, 500);
      this.#interestTimer.unref();
    }
    await this.sync();
  }

  /** Stops every runner (state `stopped`) and closes the connections. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#debounce);
    clearInterval(this.#interestTimer);
    this.#unsubscribe?.();
    await this.#syncing.catch(() => undefined);
    await Promise.all([...this.#runners.values()].map((r) => r.stop()));
    this.#runners.clear();
    this.#byPath.clear();
  }

  /** Devices the engine runs, with state and counters. */
  status(): DeviceStatus[] {
    return [...this.#runners.values()].map((r) => r.status);
  }

  deviceStatus(id: string): DeviceStatus | undefined {
    return this.#runners.get(id)?.status;
  }

  #scheduleSync(): void {
    if (this.#stopped) return;
    clearTimeout(this.#debounce);
    this.#debounce = setTimeout(() => void this.sync(), 20);
  }

  /** Brings the runners in line with the stored devices and tags (serialised; coalesces calls). */
  sync(): Promise<void> {
    if (this.#pending) return this.#syncing;
    this.#pending = true;
    this.#syncing = this.#syncing
      .catch(() => undefined)
      .then(async () => {
        this.#pending = false;
        if (this.#stopped) return;
        try {
          await this.#sync();
        } catch (err) {
          this.#log?.error({ err }, 'acquisition: could not load devices and tags');
        }
      });
    return this.#syncing;
  }

  async #sync(): Promise<void> {
    const repo = this.#opts.devicehub.repo;
    const devices = (await repo.deviceListQuery().execute()) as DeviceRow[];
    const wanted = new Map<string, { row: DeviceRow; factory: DriverFactory; tags: RegisterWithDevice[] }>();
    for (const row of devices) {
      const driver = findDriver(row.driver_id);
      const factory = driver && driver.pollable ? this.#factories.get(driver.key) : undefined;
      if (factory) wanted.set(row.id, { row, factory, tags: [] });
    }
    if (wanted.size > 0) {
      for (const r of await repo.allRegisters([...wanted.keys()])) wanted.get(r.device_id)?.tags.push(r);
    }
    if (this.#stopped) return;
    const stopping: Promise<void>[] = [];
    for (const [id, runner] of this.#runners) {
      const w = wanted.get(id);
      if (!w || runner.signature !== deviceSignature(w.row)) {
        stopping.push(runner.stop());
        this.#runners.delete(id);
      }
    }
    await Promise.all(stopping);
    this.#byPath.clear();
    for (const [id, w] of wanted) {
      let runner = this.#runners.get(id);
      if (!runner) {
        runner = new DeviceRunner(this, deviceSpec(w.row), deviceSignature(w.row), w.factory);
        this.#runners.set(id, runner);
        runner.setTags(w.tags);
        runner.start();
      } else {
        runner.setTags(w.tags);
      }
      for (const tag of runner.tags) this.#byPath.set(`${tag.deviceName}.${tag.tagName}`, { runner, tag });
    }
  }

  async #command(msg: Message): Promise<void> {
    const path = msg.subject.slice(COMMAND_PATTERN.length - 1);
    const target = this.#byPath.get(path);
    let input: unknown;
    try {
      input = msg.json();
    } catch {
      input = msg.string();
    }
    if (input !== null && typeof input === 'object' && !Array.isArray(input) && 'value' in input)
      input = (input as { value: unknown }).value;
    if (!target) {
      if (msg.reply)
        msg.respond({ success: false, error: `no running tag at ${path}`, timestamp: Date.now() });
      return;
    }
    const { runner, tag } = target;
    let error: string | undefined;
    let written: unknown = input;
    try {
      written = await runner.write(tag, input);
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
    }
    const response = {
      success: error === undefined,
      datatype: datatypeOf(tag.valueType),
      timestamp: Date.now(),
      registerId: tag.id,
      value: written ?? null,
      deviceID: tag.deviceId,
      deviceName: tag.deviceName,
      tagName: tag.tagName,
      ...(error !== undefined ? { error } : {}),
    };
    const hub = this.#opts.hub;
    if (hub.closed) return;
    hub.publish(tag.writeResponseSubject, response);
    if (msg.reply) msg.respond(response);
  }

  // --- for runners

  get hub(): DataHub {
    return this.#opts.hub;
  }
  get devicehub(): DeviceHubService {
    return this.#opts.devicehub;
  }
  get logger(): Logger | undefined {
    return this.#log;
  }
  get dataDir(): string {
    return this.#opts.dataDir;
  }
  backoff(attempt: number): number {
    const initial = this.#opts.backoffInitialMs ?? 500;
    const max = this.#opts.backoffMaxMs ?? 30_000;
    return Math.min(initial * 2 ** Math.min(attempt, 30), max);
  }
}

const deviceSignature = (row: DeviceRow) =>
  `${row.driver_id}|${row.name}|${row.alias_topics}|${row.properties}|${row.updated_at}`;

const parse = (text: string): any => {
  try {
    return text ? JSON.parse(text) : {};
  } catch {
    return {};
  }
};

function deviceSpec(row: DeviceRow): DeviceSpec {
  return {
    id: row.id,
    name: row.name,
    driver: findDriver(row.driver_id)!,
    props: parse(row.properties) as Record<string, string>,
    aliasTopics: row.alias_topics === 1,
  };
}

function tagSpec(r: RegisterWithDevice): { tag: TagSpec; formulaError?: string } {
  let formula: Formula | null = null;
  let formulaError: string | undefined;
  if (r.tag_formula && r.tag_formula.trim() !== '') {
    try {
      formula = compileFormula(r.tag_formula);
    } catch (err) {
      formulaError = `TagFormula ${JSON.stringify(r.tag_formula)}: ${err instanceof FormulaError ? err.message : String(err)}`;
    }
  }
  const path = `${r.device_name}.${r.tag_name}`;
  const tag: TagSpec = {
    id: r.id,
    deviceId: r.device_id,
    deviceName: r.device_name,
    tagName: r.tag_name,
    register: r.name,
    description: r.description,
    valueType: r.value_type,
    publishCoV: r.publish_cov === 1,
    formula,
    intervalMs: r.interval_ms,
    props: parse(r.properties) as Record<string, string>,
    metadata: parse(r.metadata) as Record<string, unknown>,
    rawSubject: `devicehub.raw.${path}`,
    aliasSubject: r.alias_topics === 1 ? `devicehub.alias.${path}` : null,
    valueSubject: `devicehub.value.${path}`,
    writeResponseSubject: `devicehub.writeresponse.${path}`,
  };
  return formulaError ? { tag, formulaError } : { tag };
}

interface Group {
  intervalMs: number;
  tags: TagSpec[];
  timer: NodeJS.Timeout | undefined;
}

/** Per tag: what was last published, for PublishCoV and tag state. */
interface TagRuntime {
  last: unknown;
  hasLast: boolean;
  ok: boolean | undefined;
  reason: string;
  formulaError: string | undefined;
}

class DeviceRunner {
  readonly status: DeviceStatus;
  tags: TagSpec[] = [];
  #groups = new Map<number, Group>();
  #runtime = new Map<string, TagRuntime>();
  #tagSignature = '';
  #session: DriverSession | undefined;
  #generation = 0;
  #attempt = 0;
  #retry: NodeJS.Timeout | undefined;
  #pushed: TagSpec[] = [];
  /** Intervals whose read is in flight (kept across reschedules: one read per interval at a time). */
  readonly #busy = new Set<number>();

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

  setTags(rows: RegisterWithDevice[]): void {
    const signature = rows
      .map((r) => `${r.id}:${r.updated_at}`)
      .sort()
      .join(',');
    if (signature === this.#tagSignature) return;
    this.#tagSignature = signature;
    const runtime = new Map<string, TagRuntime>();
    const tags: TagSpec[] = [];
    for (const r of rows) {
      const { tag, formulaError } = tagSpec(r);
      tags.push(tag);
      const prev = this.#runtime.get(r.id);
      runtime.set(r.id, {
        last: undefined,
        hasLast: false,
        ok: prev?.ok,
        reason: prev?.reason ?? '',
        formulaError,
      });
    }
    this.#runtime = runtime;
    this.tags = tags;
    this.status.tags = tags.length;
    if (this.state === 'stopped') return;
    if (this.state === 'connected') void this.#watchAndSchedule(this.#generation);
    else this.#schedule(tags);
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

  async #connect(): Promise<void> {
    const gen = ++this.#generation;
    this.#setState('connecting', this.status.reason);
    const session = this.factory.create(this.spec, {
      logger: this.engine.logger,
      dataDir: this.engine.dataDir,
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
    const delay = this.engine.backoff(this.#attempt++);
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
    for (const tag of this.tags) {
      const rt = this.#runtime.get(tag.id);
      if (rt && rt.ok !== false) this.#tagState(tag, rt, false, reason);
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
      this.status.overruns++;
      return;
    }
    const session = this.#session;
    if (this.state !== 'connected' || !session) {
      if (this.state === 'failed') {
        const failure = new ReadFailure(`device not connected: ${this.status.reason}`);
        const now = Date.now();
        for (const tag of g.tags) this.#publish(tag, failure, now);
      }
      return;
    }
    const gen = this.#generation;
    this.#busy.add(g.intervalMs);
    const t0 = performance.now();
    const tags = g.tags;
    let published: Uint8Array | undefined;
    let results: ReadResult[];
    try {
      results = await session.read(tags, (i, result) => {
        if (gen !== this.#generation || i < 0 || i >= tags.length) return;
        published ??= new Uint8Array(tags.length);
        if (published[i] === 1) return;
        published[i] = 1;
        this.#publish(tags[i]!, result, Date.now());
      });
    } catch (err) {
      if (gen === this.#generation) void this.#lost(errorText(err));
      return;
    } finally {
      this.#busy.delete(g.intervalMs);
    }
    if (gen !== this.#generation) return;
    this.status.latency.observe(performance.now() - t0);
    const now = Date.now();
    for (let i = 0; i < tags.length; i++) {
      if (published === undefined || published[i] === 0) this.#publish(tags[i]!, results[i] ?? null, now);
    }
  }

  #tagState(tag: TagSpec, rt: TagRuntime, ok: boolean, reason: string): void {
    if (rt.ok === ok && rt.reason === reason) return;
    rt.ok = ok;
    rt.reason = reason;
    this.engine.devicehub.setTagState(tag.id, ok ? 'OK' : 'Failed', reason);
  }

  #publish(tag: TagSpec, result: ReadResult, timestamp: number): void {
    const rt = this.#runtime.get(tag.id);
    if (!rt) return;
    const hub = this.engine.hub;
    if (hub.closed) return;
    let value: TagValue = null;
    let failure: string | undefined;
    if (result instanceof ReadFailure) failure = result.reason;
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
    if (tag.publishCoV && rt.hasLast && sameValue(rt.last, value)) return;
    rt.last = value;
    rt.hasLast = true;
    if (tag.formula && typeof value === 'number' && !Number.isInteger(value) && datatype !== 'float64')
      datatype = 'float64';
    const payload = {
      success: true,
      datatype,
      timestamp,
      registerId: tag.id,
      value,
      deviceID: tag.deviceId,
      deviceName: tag.deviceName,
      tagName: tag.tagName,
      description: tag.description,
      metadata: tag.metadata,
    };
    hub.publish(tag.rawSubject, payload);
    if (tag.aliasSubject !== null) hub.publish(tag.aliasSubject, payload);
    if (this.engine.valueInterest) hub.publish(tag.valueSubject, value);
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
