/**
 * The acquisition engine: one runner per device of a pollable driver, each with a connection
 * state machine (connecting → connected, failed with a reason → reconnect after a capped
 * exponential backoff, stopped) and a scheduler that reads the tags due at each interval in one
 * driver call (the driver coalesces neighbouring addresses into block reads). Every read is
 * published once on the DataHub in the payload of the wire notes; a message on a tag's Command
 * subject is written through the driver and answered on its WriteResponse subject.
 *
 * The engine follows the DeviceHub through its read model: at start it loads every device and its
 * tags; after that it applies each change event incrementally (a changed device is read again and
 * restarted only when its connection settings changed; changed tags are read by ID and only they
 * are rescheduled on their device). It owns the tags' runtime state, which the DeviceHub's
 * `GetTagStatus` reads through `TagStatusSource`.
 */
import type { Logger } from 'pino';
import type { DataHub, Message } from '../datahub/index.js';
import {
  DRIVERS,
  findDriver,
  type DeviceConfig,
  type DevicehubChange,
  type DevicehubReadModel,
  type TagConfig,
  type TagRuntimeState,
  type TagStatusSource,
} from '../devicehub/index.js';
import { datatypeOf } from './convert.js';
import { DeviceRunner } from './device-runner.js';
import { flat } from './subjects.js';
import type { LatencyHistogram } from './metrics.js';
import type { DeviceSpec, DriverFactory, TagSpec } from './types.js';

export { errorText } from './device-runner.js';

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
  /** The DeviceHub's read model: devices, tags, change events, the tag status slot. */
  devicehub: DevicehubReadModel;
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
  /** The CA certificates of the edge's trust store (PEM), for drivers that verify peers with them. */
  trustedCertificates?: () => readonly string[];
}

/** Whether a subscription pattern can match a `devicehub.value.<device>.<tag>` subject. */
export function matchesValueSubjects(pattern: string): boolean {
  const [t0, t1] = pattern.split('.', 2);
  if (t0 === '>') return true;
  if (t0 !== 'devicehub' && t0 !== '*') return false;
  return t1 === 'value' || t1 === '*' || t1 === '>';
}

const COMMAND_PATTERN = 'devicehub.command.>';
/** How long changes are gathered before they are applied. */
const CHANGE_DEBOUNCE_MS = 20;

export class AcquisitionEngine implements TagStatusSource {
  readonly #opts: AcquisitionOptions;
  readonly #factories: Map<string, DriverFactory>;
  /** Runners by device ID, and by device name (for commands). */
  readonly #runners = new Map<string, DeviceRunner>();
  readonly #byName = new Map<string, DeviceRunner>();
  readonly #log: Logger | undefined;
  #syncing: Promise<void> = Promise.resolve();
  #queued = false;
  /** What the next run does: everything, or the devices and tags changes named. */
  #full = false;
  #changedDevices = new Set<string>();
  /** Tag ID → device ID. */
  #changedTags = new Map<string, string>();
  #debounce: NodeJS.Timeout | undefined;
  #unsubscribe: (() => void) | undefined;
  #stopped = false;
  /** Polling held (a high-availability standby, or a lease that ran out): no device runs. */
  #held = false;
  #interestTimer: NodeJS.Timeout | undefined;
  /** Whether Value subjects are published now (see `publishValue`). */
  valueInterest = false;
  /**
   * Devices whose driver this build does not acquire (device ID → since when, the driver's name):
   * their tags say so in `GetTagStatus`. Bounded by the devices configured.
   */
  readonly #idle = new Map<string, { at: number; driver: string }>();
  /** Drivers already named in the log as not acquiring (once per driver and process). */
  readonly #idleLogged = new Set<string>();

  constructor(options: AcquisitionOptions) {
    this.#opts = options;
    this.#log = options.logger;
    this.#factories = new Map(options.drivers.map((d) => [d.key, d]));
  }

  /**
   * Starts every configured device, follows DeviceHub changes from now on and answers the
   * DeviceHub's tag status questions.
   */
  async start(): Promise<void> {
    const devicehub = this.#opts.devicehub;
    const sub = this.#opts.hub.subscribe(COMMAND_PATTERN, (msg) => void this.#command(msg));
    const off = devicehub.onChange((change) => this.#changed(change));
    devicehub.setTagStatusSource(this);
    this.#unsubscribe = () => {
      off();
      sub.unsubscribe();
      devicehub.setTagStatusSource(null);
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
    this.#unsubscribe = undefined;
    await this.#syncing.catch(() => undefined);
    await Promise.all([...this.#runners.values()].map((r) => r.stop()));
    this.#runners.clear();
    this.#byName.clear();
  }

  /**
   * Stops every device runner and starts them again from the DeviceHub's configuration (what a
   * configuration `merge-apply` restarts). Serialised with the change runs.
   */
  async restart(): Promise<void> {
    if (this.#stopped) return;
    const runners = [...this.#runners.values()];
    this.#runners.clear();
    this.#byName.clear();
    await Promise.all(runners.map((r) => r.stop()));
    await this.sync();
  }

  /**
   * Holds polling (`true`: every device runner stops now, none starts) or lets it run again
   * (`false`: every device starts from the DeviceHub's configuration). High availability's fence.
   */
  async hold(held: boolean): Promise<void> {
    if (this.#held === held) return;
    this.#held = held;
    this.#log?.info({ held }, held ? 'acquisition held' : 'acquisition resumes');
    if (held) {
      const runners = [...this.#runners.values()];
      this.#runners.clear();
      this.#byName.clear();
      await Promise.all(runners.map((r) => r.stop()));
    } else if (this.#unsubscribe) await this.sync();
  }

  get held(): boolean {
    return this.#held;
  }

  /**
   * Devices that failed to connect and match `which` try again now instead of at the end of their
   * backoff (the trust store changed: a device refused for its server's certificate may pass).
   */
  retryFailed(which: (device: DeviceSpec) => boolean): void {
    for (const r of this.#runners.values()) if (r.state === 'failed' && which(r.spec)) r.retryNow();
  }

  /** Devices the engine runs, with state and counters. */
  status(): DeviceStatus[] {
    return [...this.#runners.values()].map((r) => r.status);
  }

  deviceStatus(id: string): DeviceStatus | undefined {
    return this.#runners.get(id)?.status;
  }

  /** The DeviceHub's `GetTagStatus` reads here (`TagStatusSource`). */
  tagState(tagId: string, deviceId: string): TagRuntimeState | undefined {
    const runner = this.#runners.get(deviceId);
    if (runner) return runner.tagState(tagId);
    const idle = this.#idle.get(deviceId);
    if (!idle) return undefined;
    return { state: 'Unknown', reason: this.#notAcquiring(idle.driver), at: idle.at };
  }

  /** The catalogue's drivers this build acquires: those of the engine's registry. */
  acquires(driverKey: string): boolean {
    return this.#factories.has(driverKey) && DRIVERS.some((d) => d.key === driverKey && d.pollable);
  }

  #notAcquiring(driver: string): string {
    const can = DRIVERS.filter((d) => d.pollable && this.#factories.has(d.key)).map((d) => d.name);
    return `driver "${driver}" does not acquire in this build (its devices and tags are kept as configuration); drivers that acquire: ${can.join(', ')}`;
  }

  #changed(change: DevicehubChange): void {
    if (this.#stopped) return;
    for (const id of change.devices) this.#changedDevices.add(id);
    for (const t of change.tags) this.#changedTags.set(t.id, t.deviceId);
    // A short pause gathers a burst of changes (one CreateRegister after another) into one run.
    this.#debounce ??= setTimeout(() => {
      this.#debounce = undefined;
      void this.#run();
    }, CHANGE_DEBOUNCE_MS);
  }

  /** Loads every device and its tags again and brings the runners in line (serialised). */
  sync(): Promise<void> {
    this.#full = true;
    return this.#run();
  }

  /** Runs what is due (serialised; calls made while one waits join it). */
  #run(): Promise<void> {
    if (this.#queued) return this.#syncing;
    this.#queued = true;
    this.#syncing = this.#syncing
      .catch(() => undefined)
      .then(async () => {
        this.#queued = false;
        if (this.#stopped || this.#held) return;
        const full = this.#full;
        const devices = this.#changedDevices;
        const tags = this.#changedTags;
        this.#full = false;
        this.#changedDevices = new Set();
        this.#changedTags = new Map();
        try {
          if (full) await this.#loadAll();
          else await this.#apply(devices, tags);
        } catch (err) {
          this.#log?.error({ err }, 'acquisition: could not load devices and tags');
        }
      });
    return this.#syncing;
  }

  #factoryOf(device: DeviceConfig): DriverFactory | undefined {
    const driver = findDriver(device.driverId);
    const factory = driver && driver.pollable ? this.#factories.get(driver.key) : undefined;
    if (factory || !driver) {
      this.#idle.delete(device.id);
      return factory;
    }
    if (!this.#idle.has(device.id)) this.#idle.set(device.id, { at: Date.now(), driver: driver.name });
    if (!this.#idleLogged.has(driver.key)) {
      this.#idleLogged.add(driver.key);
      this.#log?.warn({ driver: driver.name, device: device.name }, this.#notAcquiring(driver.name));
    }
    return undefined;
  }

  /** Every device, one device's tags at a time (a bounded read even at 100,000 tags). */
  async #loadAll(): Promise<void> {
    const devicehub = this.#opts.devicehub;
    const wanted = new Map<string, { device: DeviceConfig; factory: DriverFactory }>();
    const devices = await devicehub.devices();
    const present = new Set(devices.map((d) => d.id));
    for (const id of [...this.#idle.keys()]) if (!present.has(id)) this.#idle.delete(id);
    for (const device of devices) {
      const factory = this.#factoryOf(device);
      if (factory) wanted.set(device.id, { device, factory });
    }
    if (this.#stopped) return;
    for (const runner of [...this.#runners.values()]) {
      const w = wanted.get(runner.spec.id);
      if (!w || runner.signature !== deviceSignature(w.device)) await this.#remove(runner);
    }
    for (const [id, w] of wanted) {
      const tags = await devicehub.tagsOfDevices([id]);
      if (this.#stopped) return;
      const runner = this.#runners.get(id);
      if (runner) runner.replaceTags(tags);
      else this.#add(w.device, w.factory, tags);
    }
  }

  /**
   * Applies one batch of changes: a changed device is read again and, when what its connection
   * uses changed, restarted with its tags; changed tags are read by ID and handed to their runner,
   * which reschedules only them. Nothing else is read.
   */
  async #apply(devices: Set<string>, tags: Map<string, string>): Promise<void> {
    const devicehub = this.#opts.devicehub;
    const reloaded = new Set<string>();
    if (devices.size > 0) {
      const found = new Map((await devicehub.devices([...devices])).map((d) => [d.id, d]));
      for (const id of devices) {
        if (this.#stopped) return;
        const device = found.get(id);
        if (!device) this.#idle.delete(id);
        const factory = device ? this.#factoryOf(device) : undefined;
        const old = this.#runners.get(id);
        if (old && device && factory && old.signature === deviceSignature(device)) continue;
        if (old) await this.#remove(old);
        if (!device || !factory) continue;
        const deviceTags = await devicehub.tagsOfDevices([id]);
        if (this.#stopped) return;
        this.#add(device, factory, deviceTags, old);
        reloaded.add(id);
      }
    }
    const rest = [...tags].filter(([, deviceId]) => !reloaded.has(deviceId) && this.#runners.has(deviceId));
    if (rest.length === 0) return;
    const found = await devicehub.tags(rest.map(([id]) => id));
    if (this.#stopped) return;
    const byDevice = new Map<string, { upserts: TagConfig[]; removed: string[] }>();
    const entry = (deviceId: string) => {
      let e = byDevice.get(deviceId);
      if (!e) byDevice.set(deviceId, (e = { upserts: [], removed: [] }));
      return e;
    };
    const foundIds = new Set<string>();
    for (const t of found) {
      foundIds.add(t.id);
      entry(t.deviceId).upserts.push(t);
    }
    for (const [id, deviceId] of rest) if (!foundIds.has(id)) entry(deviceId).removed.push(id);
    for (const [deviceId, e] of byDevice) this.#runners.get(deviceId)?.applyTags(e.upserts, e.removed);
  }

  #add(device: DeviceConfig, factory: DriverFactory, tags: TagConfig[], previous?: DeviceRunner): void {
    if (this.#held) return;
    const runner = new DeviceRunner(this, deviceSpec(device), deviceSignature(device), factory);
    runner.replaceTags(tags, previous?.runtime);
    this.#runners.set(device.id, runner);
    this.#byName.set(device.name, runner);
    runner.start();
  }

  async #remove(runner: DeviceRunner): Promise<void> {
    this.#runners.delete(runner.spec.id);
    if (this.#byName.get(runner.spec.name) === runner) this.#byName.delete(runner.spec.name);
    await runner.stop();
  }

  /** The running tag at `<DeviceName>.<TagName>` (names may hold dots: every split is tried). */
  #target(path: string): { runner: DeviceRunner; tag: TagSpec } | undefined {
    for (let i = path.indexOf('.'); i > 0; i = path.indexOf('.', i + 1)) {
      const runner = this.#byName.get(path.slice(0, i));
      const tag = runner?.tagByName(path.slice(i + 1));
      if (runner && tag) return { runner, tag };
    }
    return undefined;
  }

  async #command(msg: Message): Promise<void> {
    const path = msg.subject.slice(COMMAND_PATTERN.length - 1);
    const target = this.#target(path);
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
    hub.publish(
      (tag.writeResponseSubject ??= flat(`devicehub.writeresponse.${tag.deviceName}.${tag.tagName}`)),
      response,
    );
    if (msg.reply) msg.respond(response);
  }

  // --- for runners

  get hub(): DataHub {
    return this.#opts.hub;
  }
  get logger(): Logger | undefined {
    return this.#log;
  }
  get dataDir(): string {
    return this.#opts.dataDir;
  }
  /** The trust store's CA certificates (PEM); none without a trust store. */
  trustedCertificates(): readonly string[] {
    return this.#opts.trustedCertificates?.() ?? [];
  }
  backoff(attempt: number): number {
    const initial = this.#opts.backoffInitialMs ?? 500;
    const max = this.#opts.backoffMaxMs ?? 30_000;
    return Math.min(initial * 2 ** Math.min(attempt, 30), max);
  }
}

/** What a runner's connection depends on: a device change that keeps it leaves the runner alone. */
const deviceSignature = (d: DeviceConfig) =>
  `${d.driverId}|${d.name}|${d.aliasTopics}|${JSON.stringify(d.properties)}`;

function deviceSpec(d: DeviceConfig): DeviceSpec {
  return {
    id: d.id,
    name: d.name,
    driver: findDriver(d.driverId)!,
    props: d.properties,
    aliasTopics: d.aliasTopics,
  };
}
