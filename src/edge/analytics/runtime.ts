/**
 * The analytics runtime: runs processor instances on the DataHub bus. Each instance subscribes to
 * its inputs (DataHub subjects, or `analytics.publish.<id>` of the instance it reads), feeds its
 * processor, and publishes each output on `analytics.publish.<instanceId>` in the DataHub's flat
 * payload shape, so that one instance's output feeds another's input through the bus itself.
 * Windowed state of windows longer than a minute is saved periodically and restored at start.
 * No GraphQL here.
 */
import { createHash } from 'node:crypto';
import type { DataHub, Message } from '../datahub/index.js';
import { parsePath, readPath, type PathStep } from './catalogue.js';
import {
  createProcessor,
  persistentWindowMs,
  ScriptProcessor,
  scriptParameters,
  ScriptStopped,
  type Output,
  type Processor,
} from './processors.js';
import { DEFAULT_LIVE_SCRIPTS, LiveScripts, type LiveScriptsOptions } from './live-scripts.js';
import type { AnalyticsLog } from './log.js';
import { OnnxProcessor } from './onnx-processor.js';
import { outputSubject, Running, type InstanceDef, type InstanceStatus } from './instance.js';

export {
  datatypeOf,
  OUTPUT_PREFIX,
  outputSubject,
  type InstanceDef,
  type InstanceState,
  type InstanceStatus,
} from './instance.js';

/** Where saved state goes (the service's repository). */
export interface StateStore {
  load(id: string): Promise<{ configKey: string; state: unknown } | undefined>;
  save(rows: Array<{ id: string; configKey: string; state: unknown }>): Promise<void>;
  remove(id: string): Promise<void>;
}

/** In-process publishers hand over the payload object itself; bytes and text are parsed. */
function parsed(msg: Message): unknown {
  try {
    return msg.json();
  } catch {
    return msg.string();
  }
}

export const configKey = (def: Pick<InstanceDef, 'kind' | 'parameters' | 'enabled'>): string =>
  createHash('sha256')
    .update(JSON.stringify([def.kind, def.parameters, def.enabled]))
    .digest('base64url')
    .slice(0, 22);

/** Windows longer than this keep their state over a restart. */
export const PERSIST_MIN_WINDOW_MS = 60_000;

export interface RuntimeOptions {
  hub: DataHub;
  log: AnalyticsLog;
  store: StateStore;
  variables: (instanceId: string) => Record<string, unknown>;
  /** Changes whenever a variable changes (default: always 0, variables read once). */
  variablesVersion?: () => number;
  /** How often persistent state is saved (ms); 0: only at close. */
  persistIntervalMs: number;
  /** Output of one script call at most, characters of JSON (default `LIMITS.scriptOutputBytes`). */
  scriptOutputBytes?: number | undefined;
  /** Where a model of the AI suite is (for `onnx` processors); undefined when it is not there. */
  modelPath?: ((name: string) => string | undefined) | undefined;
  /** The live scripts' worker (default `DEFAULT_LIVE_SCRIPTS`). */
  scripts?: LiveScriptsOptions | undefined;
}

export class AnalyticsRuntime {
  readonly #hub: DataHub;
  readonly #log: AnalyticsLog;
  readonly #store: StateStore;
  readonly #variables: RuntimeOptions['variables'];
  readonly #variablesVersion: () => number;
  readonly #running = new Map<string, Running>();
  readonly #tick: NodeJS.Timeout;
  readonly #persist: NodeJS.Timeout | undefined;
  readonly #scriptOutputBytes: number | undefined;
  readonly #modelPath: RuntimeOptions['modelPath'];
  /** Where script instances run: a worker thread, off the main loop. */
  readonly scripts: LiveScripts;
  #closed = false;
  messagesIn = 0;
  messagesOut = 0;

  constructor(options: RuntimeOptions) {
    this.#hub = options.hub;
    this.#log = options.log;
    this.#store = options.store;
    this.#variables = options.variables;
    this.#variablesVersion = options.variablesVersion ?? (() => 0);
    this.#scriptOutputBytes = options.scriptOutputBytes;
    this.#modelPath = options.modelPath;
    this.scripts = new LiveScripts(options.scripts ?? DEFAULT_LIVE_SCRIPTS);
    this.#tick = setInterval(() => this.#onTick(), 250);
    this.#tick.unref();
    if (options.persistIntervalMs > 0) {
      this.#persist = setInterval(() => void this.saveState(), options.persistIntervalMs);
      this.#persist.unref();
    }
  }

  /** Nothing to load on the main loop (scripts load QuickJS in their worker when the first starts). */
  async init(): Promise<void> {}

  status(id: string): InstanceStatus | undefined {
    return this.#running.get(id)?.status;
  }

  get counts(): { total: number; running: number; failed: number } {
    let running = 0;
    let failed = 0;
    for (const r of this.#running.values()) {
      if (r.state === 'Running') running++;
      else if (r.state === 'Failed') failed++;
    }
    return { total: this.#running.size, running, failed };
  }

  /**
   * Starts or changes an instance. When its kind, parameters and enabled flag are unchanged (a
   * rename, a move, a new group), the running processor and its state are kept.
   */
  async apply(def: InstanceDef): Promise<void> {
    const key = configKey(def);
    const cur = this.#running.get(def.id);
    if (cur && cur.key === key) {
      cur.rename(def);
      return;
    }
    if (cur) this.#stop(cur, true);
    const r = new Running(def, key, this.#hub, this);
    r.persistent = persistentWindowMs(def.kind, def.parameters) > PERSIST_MIN_WINDOW_MS;
    this.#running.set(def.id, r);
    if (!def.enabled || this.#closed) return;
    let processor: Processor;
    try {
      processor = await this.#build(r);
    } catch (err) {
      if (this.#running.get(def.id) === r) this.#fail(r, (err as Error).message);
      return;
    }
    if (r.persistent && processor.restore) {
      const saved = await this.#store.load(def.id).catch(() => undefined);
      if (saved && saved.configKey === key) processor.restore(saved.state);
    }
    // Changed, removed or closed while it started (a script starts in its worker).
    if (this.#running.get(def.id) !== r || this.#closed) {
      processor.close?.();
      return;
    }
    r.processor = processor;
    r.state = 'Running';
    def.parameters.inputs.forEach((input, i) => {
      const subject = input.subject ?? outputSubject(input.processor!);
      const steps = parsePath(input.path ?? 'value');
      const key = steps.length === 1 && typeof steps[0] === 'string' ? steps[0] : undefined;
      // The common case (a kind that answers at once, reading one top-level key) on a path of its
      // own that inlines into one compiled unit with the processor and the output's publish.
      const callback =
        key !== undefined && processor.inputTo !== undefined
          ? (msg: Message) => this.#deliverKey(r, processor, i, key, msg)
          : (msg: Message) => this.#deliver(r, processor, i, steps, msg);
      r.subs.push(this.#hub.subscribe(subject, { callback }));
    });
  }

  /** Stops and forgets an instance (and its saved state). */
  async remove(id: string): Promise<void> {
    const r = this.#running.get(id);
    if (r) this.#stop(r, false);
    this.#running.delete(id);
    await this.#store.remove(id).catch(() => undefined);
  }

  async #build(r: Running): Promise<Processor> {
    const def = r.def;
    // Variables as an object and as JSON, derived again only when a variable changed.
    let version = -1;
    let vars: Record<string, unknown> = {};
    let json = '{}';
    const fresh = () => {
      const v = this.#variablesVersion();
      if (v !== version) {
        version = v;
        vars = this.#variables(def.id);
        json = JSON.stringify(vars);
      }
    };
    const ctx = {
      variables: () => (fresh(), vars),
      variablesJson: () => (fresh(), json),
    };
    if (def.kind === 'onnx') return this.#model(def);
    if (def.kind !== 'script') return createProcessor(def.kind, def.parameters, ctx);
    const made = await this.scripts.create(
      def.parameters.script as string,
      {
        memoryBytes: def.parameters.memoryBytes as number,
        timeoutMs: def.parameters.timeoutMs as number,
        outputBytes: this.#scriptOutputBytes,
      },
      scriptParameters(def.parameters),
    );
    if (!made.ok) throw new Error(`script failed to start (${made.failure}): ${made.error}`);
    this.#console(r, made.console);
    return new ScriptProcessor(this.scripts, made.key, def.parameters.inputs, ctx, (lines) =>
      this.#console(r, lines),
    );
  }

  async #model(def: InstanceDef): Promise<Processor> {
    const p = def.parameters;
    const name = p.model as string;
    const path = this.#modelPath?.(name);
    if (!path) throw new Error(`model "${name}" is not in the AI suite (upload it first)`);
    return OnnxProcessor.load(path, {
      model: name,
      window: p.window as number,
      stride: p.stride as number,
      inputName: p.inputName as string | undefined,
      inputShape: p.inputShape as string | undefined,
      output: p.output as string | undefined,
      threads: p.threads as number,
      inputs: p.inputs.length,
    });
  }

  #console(r: Running, lines: string[]): void {
    if (lines.length === 0) return;
    const c = r.console;
    c.push(...lines);
    if (c.length > 20) c.splice(0, c.length - 20);
  }

  /** A value for `p` (the instance's processor when it subscribed) that reads one top-level key. */
  #deliverKey(r: Running, p: Processor, i: number, key: string, msg: Message): void {
    if (r.processor !== p) return;
    const data = msg.data;
    const payload =
      data !== null && typeof data === 'object' && !(data instanceof Uint8Array) ? data : parsed(msg);
    if (payload === null || typeof payload !== 'object' || !Object.hasOwn(payload, key)) return;
    const value = (payload as Record<string, unknown>)[key];
    if (value === undefined) return;
    const ts = (payload as { timestamp?: unknown }).timestamp;
    const t = typeof ts === 'number' ? ts : Date.now();
    r.messagesIn++;
    this.messagesIn++;
    try {
      p.inputTo!(i, value, t, payload, r);
    } catch (err) {
      this.#failed(r, p, err);
    }
  }

  /** A value for `p` read at a path, or for a kind that answers through `input`. */
  #deliver(r: Running, p: Processor, i: number, steps: PathStep[], msg: Message): void {
    if (r.processor !== p) return;
    const data = msg.data;
    const payload =
      data !== null && typeof data === 'object' && !(data instanceof Uint8Array) ? data : parsed(msg);
    const value = readPath(payload, steps);
    if (value === undefined) return;
    const ts = (payload as { timestamp?: unknown } | null)?.timestamp;
    const t = typeof ts === 'number' ? ts : Date.now();
    r.messagesIn++;
    this.messagesIn++;
    if (p.inputTo !== undefined) {
      try {
        p.inputTo(i, value, t, payload, r);
      } catch (err) {
        this.#failed(r, p, err);
      }
      return;
    }
    let out: ReturnType<Processor['input']>;
    try {
      out = p.input(i, value, t, payload);
    } catch (err) {
      this.#failed(r, p, err);
      return;
    }
    if (out instanceof Promise)
      out.then(
        (o) => {
          // Published only while the same processor still runs (not after a stop or a failure).
          if (o !== undefined && r.processor === p) this.#publish(r, o);
        },
        (err: unknown) => this.#failed(r, p, err),
      );
    else if (out !== undefined) this.#publish(r, out);
  }

  /** `p` threw on a value: a stopped script fails the instance; anything else is counted and logged. */
  #failed(r: Running, p: Processor, err: unknown): void {
    if (r.processor !== p) return;
    if (err instanceof ScriptStopped) {
      this.#fail(r, `${err.message}; the instance is stopped`, err.failure);
      return;
    }
    r.errors++;
    const now = Date.now();
    if (now - r.lastErrorLog > 10_000) {
      r.lastErrorLog = now;
      this.#log.write('warn', `processor "${r.def.name}" failed on a value: ${(err as Error).message}`, {
        instanceId: r.def.id,
      });
    }
  }

  #publish(r: Running, out: Output | Output[]): void {
    if (!Array.isArray(out)) {
      r.emit(out.value, out.timestamp, out.metadata);
      return;
    }
    for (const o of out) r.emit(o.value, o.timestamp, o.metadata);
  }

  #fail(r: Running, message: string, failure?: string): void {
    r.state = 'Failed';
    r.error = message;
    for (const s of r.subs) s.unsubscribe();
    r.subs = [];
    r.processor?.close?.();
    r.processor = undefined;
    this.#log.write('error', `processor "${r.def.name}" failed: ${message}`, {
      instanceId: r.def.id,
      kind: r.def.kind,
      ...(failure ? { failure } : {}),
    });
  }

  #stop(r: Running, keepSaved: boolean): void {
    for (const s of r.subs) s.unsubscribe();
    r.subs = [];
    r.processor?.close?.();
    r.processor = undefined;
    r.state = 'Stopped';
    if (!keepSaved) return;
  }

  #onTick(): void {
    const now = Date.now();
    for (const r of this.#running.values()) {
      const p = r.processor;
      if (!p?.tick) continue;
      try {
        const out = p.tick(now);
        if (out !== undefined) this.#publish(r, out);
      } catch (err) {
        r.errors++;
        this.#log.write('warn', `processor "${r.def.name}" failed on its timer: ${(err as Error).message}`, {
          instanceId: r.def.id,
        });
      }
    }
  }

  /** Saves the state of the instances whose windows are longer than a minute. */
  async saveState(): Promise<number> {
    const rows: Array<{ id: string; configKey: string; state: unknown }> = [];
    for (const r of this.#running.values()) {
      if (!r.persistent || !r.processor?.snapshot) continue;
      rows.push({ id: r.def.id, configKey: r.key, state: r.processor.snapshot() });
    }
    if (rows.length > 0) {
      try {
        await this.#store.save(rows);
      } catch (err) {
        this.#log.write('warn', `analytics state not saved: ${(err as Error).message}`);
      }
    }
    return rows.length;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    clearInterval(this.#tick);
    if (this.#persist) clearInterval(this.#persist);
    await this.saveState();
    this.#closed = true;
    for (const r of this.#running.values()) this.#stop(r, true);
    this.#running.clear();
    await this.scripts.close();
  }
}
