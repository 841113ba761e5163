/**
 * The twins' runtime: each enabled instance subscribes to the DataHub subjects (and UNS topics) its
 * dynamic attributes are bound to, applies each attribute's transformation, assembles its
 * hierarchy into one payload and publishes it on its `Topic`: on change (coalesced: the inputs
 * that arrive in one turn of the event loop give one payload) and/or every `PublishIntervalMs`.
 *
 * Payload (`TwinPayload`): `{ instanceId, instance, model, timestamp, data, ageMs, stale, errors }`;
 * `data` follows the model's hierarchy (folders are objects) or, without one, holds static
 * attributes by key and dynamic attributes by name; `ageMs` has, per dynamic attribute, the age of
 * its last input; `stale` lists those with no input yet or older than the model's `StaleAfterMs`;
 * `errors` says why an attribute is null (failed transformation, nested instance in error...).
 *
 * Nesting cycles are found when the twins are resolved: the instances on a cycle go to the
 * `error` state naming it, and the others keep running. No GraphQL here.
 */
import type { Logger } from 'pino';
import type { DataHub, Subscription } from '../datahub/index.js';
import type { TwinsService } from './service.js';
import { PLACEHOLDER } from './service.js';
import { ExpressionSandbox } from './expressions.js';
import { compileTransformation, describeEvalError, plainValue, type Compiled } from './transform.js';
import type { DynamicAttributeRecord, InstanceRecord, ModelRecord } from './types.js';
import {
  ageOf,
  compileShape,
  slotValue,
  type CompiledShape,
  type Shape,
  type Slot,
} from './payload-shape.js';

/** Where UNS attributes come from: an MQTT client of the UNS broker (see `uns-link.ts`). */
export interface UnsSource {
  /** Subscribes to one MQTT topic; the handler gets the parsed payload. Answers the unsubscribe. */
  subscribe(topic: string, handler: (payload: unknown) => void): () => void;
  /** Null while connected, else why not. */
  readonly problem: string | null;
}

export type InstanceState = 'running' | 'stopped' | 'error';

/** An instance's assembled payload, as published on its Topic. */
export interface TwinPayload {
  instanceId: string;
  instance: string;
  model: string;
  /** When it was assembled (epoch ms). */
  timestamp: number;
  /** The model's hierarchy (or static attributes by key and dynamic attributes by name). */
  data: Record<string, unknown>;
  /** Per dynamic attribute: milliseconds since its last input (null: none yet). */
  ageMs: Record<string, number | null>;
  /** Dynamic attributes with no input yet or older than the model's StaleAfterMs. */
  stale: string[];
  /** Per dynamic attribute in trouble: why its value is null or old. */
  errors: Record<string, string>;
}

/** One instance at run time. */
export class Twin {
  record: InstanceRecord;
  model: ModelRecord;
  state: InstanceState = 'running';
  error: string | null = null;
  slots: Slot[] = [];
  shape: Shape[] = [];
  /** The payload's `data` and `ageMs` builders for `shape` (see `compileShape`). */
  compiled: CompiledShape | null = null;
  params: Record<string, string> = {};
  lastPayload: TwinPayload | null = null;
  lastPublishedAt: number | null = null;
  published = 0;
  /** Instances that embed this one. */
  embeddedBy = new Set<Twin>();
  scheduled = false;
  /** Transformations still evaluating: the payload waits for them, so that one round gives one payload. */
  inflight = 0;
  /** The publish of a scheduled change (made once). */
  flush: (() => void) | undefined = undefined;

  constructor(record: InstanceRecord, model: ModelRecord) {
    this.record = record;
    this.model = model;
  }
}

export interface RuntimeOptions {
  hub: DataHub;
  service: TwinsService;
  logger?: Logger | undefined;
  uns?: UnsSource | null;
  /** How often a failing transformation of one attribute is logged at most (default 60 s). */
  logEveryMs?: number;
  /**
   * Largest payload, bytes as JSON (default 1 MiB, the DataHub's `--datahub-max-payload`):
   * measured on an instance's first payload and every 256th after; past it the instance goes to
   * the error state instead of publishing.
   */
  maxPayloadBytes?: number;
  /** Where transformations are evaluated (default: a sandbox of the runtime's own, closed with it). */
  expressions?: ExpressionSandbox;
}

interface Binding {
  twin: Twin;
  slot: Slot;
}

export class TwinRuntime {
  readonly #hub: DataHub;
  readonly #service: TwinsService;
  readonly #log: Logger | undefined;
  readonly #uns: UnsSource | null;
  readonly #logEveryMs: number;
  readonly #maxPayloadBytes: number;
  readonly #twins = new Map<string, Twin>();
  readonly #subjects = new Map<string, { sub: Subscription; bindings: Binding[] }>();
  readonly #unsTopics = new Map<string, { off: () => void; bindings: Binding[] }>();
  readonly #timers = new Map<string, NodeJS.Timeout>();
  readonly #lastLog = new Map<string, number>();
  readonly #compiled = new Map<string, { expression: string; compiled: Compiled }>();
  #rebuildTimer: NodeJS.Timeout | undefined;
  #offChange: () => void;
  #closed = false;
  readonly #expressions: ExpressionSandbox;
  readonly #ownSandbox: boolean;

  constructor(options: RuntimeOptions) {
    this.#hub = options.hub;
    this.#service = options.service;
    this.#log = options.logger;
    this.#uns = options.uns ?? null;
    this.#logEveryMs = options.logEveryMs ?? 60_000;
    this.#maxPayloadBytes = options.maxPayloadBytes ?? 1024 * 1024;
    this.#ownSandbox = !options.expressions;
    this.#expressions = options.expressions ?? new ExpressionSandbox();
    if (this.#ownSandbox) this.#expressions.warm();
    this.#offChange = this.#service.onChange(() => this.scheduleRebuild());
    this.rebuild();
  }

  /** Re-resolves every twin soon (changes in one burst are resolved once). */
  scheduleRebuild(): void {
    if (this.#closed || this.#rebuildTimer) return;
    this.#rebuildTimer = setTimeout(() => {
      this.#rebuildTimer = undefined;
      this.rebuild();
    }, 20);
  }

  twin(id: string): Twin | undefined {
    return this.#twins.get(id);
  }

  get twinCount(): number {
    return this.#twins.size;
  }

  /** Resolves the configuration into twins, subscriptions and timers (keeping last values). */
  rebuild(): void {
    if (this.#closed) return;
    if (this.#rebuildTimer) {
      clearTimeout(this.#rebuildTimer);
      this.#rebuildTimer = undefined;
    }
    const s = this.#service;
    const previous = new Map(this.#twins);
    this.#teardown();
    // 1. one Twin per instance, keeping last payloads and values
    for (const rec of s.instances.values()) {
      const model = s.models.get(rec.modelId);
      if (!model) continue;
      const old = previous.get(rec.id);
      const twin = new Twin(rec, model);
      if (old) {
        twin.lastPayload = old.lastPayload;
        twin.lastPublishedAt = old.lastPublishedAt;
        twin.published = old.published;
      }
      twin.state = rec.enabled ? 'running' : 'stopped';
      this.#twins.set(rec.id, twin);
    }
    const byModel = new Map<string, Twin[]>();
    for (const t of this.#twins.values()) {
      const list = byModel.get(t.model.id) ?? [];
      list.push(t);
      byModel.set(t.model.id, list);
    }
    // 2. slots and shapes
    for (const twin of this.#twins.values()) {
      const old = previous.get(twin.record.id);
      const oldSlots = new Map(old?.slots.map((x) => [x.record.id, x]) ?? []);
      twin.params = Object.fromEntries(s.effectiveParameters(twin.record).map((p) => [p.key, p.value]));
      for (const d of s.effectiveDynamics(twin.record)) {
        const prev = oldSlots.get(d.id);
        const slot: Slot = {
          record: d,
          name: d.name,
          value: prev?.value ?? null,
          at: prev?.at ?? 0,
          error: null,
          compiled: null,
          seq: 0,
          applied: 0,
          nested: null,
          byName: false,
        };
        if (d.type === 'nestedModel') {
          if (d.nestedInstanceId) {
            const target = this.#twins.get(d.nestedInstanceId);
            slot.nested = target ? [target] : [];
            if (!target) slot.error = `nested instance ${d.nestedInstanceId} does not exist`;
          } else if (d.nestedModelId) {
            slot.nested = byModel.get(d.nestedModelId) ?? [];
            slot.byName = true;
          }
        } else if (d.transformationId) {
          const t = s.transformations.get(d.transformationId);
          if (!t) slot.error = `transformation ${d.transformationId} does not exist`;
          else slot.compiled = this.#compile(t.id, t.expression);
        }
        twin.slots.push(slot);
      }
      twin.shape = this.#shape(twin);
      twin.compiled = compileShape(twin.shape, twin.slots);
    }
    // 3. nesting cycles
    this.#markCycles();
    // 4. bindings
    for (const twin of this.#twins.values()) {
      for (const slot of twin.slots) {
        if (slot.nested) for (const target of slot.nested) target.embeddedBy.add(twin);
      }
      if (twin.state !== 'running') continue;
      for (const slot of twin.slots) {
        const d = slot.record;
        if (d.type !== 'topic' || d.attributeType === 'AssetHierarchy') continue;
        const topic = d.topic.replace(PLACEHOLDER, (_m, key: string) => twin.params[key] ?? `{{${key}}}`);
        if (topic.includes('{{')) {
          slot.error = `Topic ${d.topic}: no parameter ${/\{\{\s*([^}]+?)\s*\}\}/.exec(topic)?.[1]} for this instance`;
          continue;
        }
        if (d.attributeType === 'Regular') this.#bindSubject(topic, { twin, slot });
        else this.#bindUns(topic, { twin, slot });
      }
    }
    // 5. interval timers, per model
    for (const [modelId, twins] of byModel) {
      const model = twins[0]!.model;
      if (model.publishIntervalMs <= 0) continue;
      const timer = setInterval(() => {
        for (const t of twins) if (t.state === 'running') this.publish(t);
      }, model.publishIntervalMs);
      timer.unref();
      this.#timers.set(modelId, timer);
    }
  }

  #compile(id: string, expression: string): Compiled | null {
    const hit = this.#compiled.get(id);
    if (hit && hit.expression === expression) return hit.compiled;
    try {
      const compiled = compileTransformation(expression);
      this.#compiled.set(id, { expression, compiled });
      return compiled;
    } catch {
      return null;
    }
  }

  #shape(twin: Twin): Shape[] {
    const s = this.#service;
    const statics = s.effectiveStatics(twin.record);
    const slotsByName = new Map(twin.slots.map((x) => [x.name, x]));
    const placements = s.placementsOf(twin.record.id).map((p) => ({ path: p.path, metadata: p.metadata }));
    for (const slot of twin.slots)
      if (slot.record.type === 'topic' && slot.record.attributeType === 'AssetHierarchy') {
        slot.value = placements;
        slot.at = Date.now();
      }
    const trees = s.hierarchy(twin.model.id);
    if (trees.length === 0) {
      return [
        ...statics.map((x): Shape => ({ key: x.key, kind: 'const', value: x.value })),
        ...twin.slots.map((slot): Shape => ({ key: slot.name, kind: 'slot', slot })),
      ];
    }
    const staticByKey = new Map(statics.map((x) => [x.key, x.value]));
    const shown = new Set<string>();
    const build = (nodes: ReturnType<TwinsService['hierarchy']>): Shape[] =>
      nodes.map((t): Shape => {
        const n = t.node;
        if (n.isFolder || !n.attributeId) return { key: n.name, kind: 'folder', children: build(t.children) };
        const attr = s.attributeOf(twin.model.id, n.attributeId);
        if (!attr) return { key: n.name, kind: 'const', value: null };
        if (attr.kind === 'dynamic') {
          const name = (attr.record as DynamicAttributeRecord).name;
          shown.add(`d:${name}`);
          const slot = slotsByName.get(name);
          return slot ? { key: n.name, kind: 'slot', slot } : { key: n.name, kind: 'const', value: null };
        }
        const key = (attr.record as { key: string }).key;
        if (attr.kind === 'static') {
          shown.add(`s:${key}`);
          return { key: n.name, kind: 'const', value: staticByKey.get(key) ?? null };
        }
        return { key: n.name, kind: 'const', value: twin.params[key] ?? null };
      });
    const shape = build(trees);
    // The instance's own attributes that the model's hierarchy does not show: at the top.
    for (const x of statics)
      if (x.instanceId !== null && !shown.has(`s:${x.key}`))
        shape.push({ key: x.key, kind: 'const', value: x.value });
    for (const slot of twin.slots)
      if (slot.record.instanceId !== null && !shown.has(`d:${slot.name}`))
        shape.push({ key: slot.name, kind: 'slot', slot });
    return shape;
  }

  /** Tarjan's strongly connected components over the nesting edges. */
  #markCycles(): void {
    const index = new Map<Twin, number>();
    const low = new Map<Twin, number>();
    const onStack = new Set<Twin>();
    const stack: Twin[] = [];
    let counter = 0;
    const edges = (t: Twin) => t.slots.flatMap((x) => x.nested ?? []);
    const strong = (v: Twin) => {
      index.set(v, counter);
      low.set(v, counter++);
      stack.push(v);
      onStack.add(v);
      for (const w of edges(v)) {
        if (!index.has(w)) {
          strong(w);
          low.set(v, Math.min(low.get(v)!, low.get(w)!));
        } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
      if (low.get(v) === index.get(v)) {
        const comp: Twin[] = [];
        let w: Twin;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          comp.push(w);
        } while (w !== v);
        const selfLoop = comp.length === 1 && edges(v).includes(v);
        if (comp.length > 1 || selfLoop) this.#cycle(comp);
      }
    };
    for (const t of this.#twins.values()) if (!index.has(t)) strong(t);
  }

  #cycle(members: Twin[]): void {
    const set = new Set(members);
    // A readable path: walk from the first member along edges inside the component.
    const start = members.reduce((a, b) => (a.record.name <= b.record.name ? a : b));
    const path = [start];
    let cur = start;
    for (;;) {
      const next = cur.slots
        .flatMap((x) => x.nested ?? [])
        .find((n) => set.has(n) && (!path.includes(n) || n === start));
      if (!next) break;
      path.push(next);
      if (next === start) break;
      cur = next;
    }
    const text = `nesting cycle: ${path.map((t) => t.record.name).join(' → ')}`;
    for (const t of members) {
      t.state = 'error';
      t.error = text;
    }
    this.#log?.error({ instances: members.map((t) => t.record.id) }, `digital twin ${text}`);
  }

  #bindSubject(subject: string, binding: Binding): void {
    let entry = this.#subjects.get(subject);
    if (!entry) {
      const bindings: Binding[] = [];
      const sub = this.#hub.subscribe(subject, {
        callback: (msg) => {
          const data = msg.data;
          const input =
            typeof data === 'string' || data instanceof Uint8Array ? safeJson(msg.string()) : data;
          const now = Date.now();
          for (let i = 0; i < bindings.length; i++) {
            const b = bindings[i]!;
            const slot = b.slot;
            // The common case inline: no transformation.
            if (slot.record.transformationId === null) {
              slot.value = plainValue(input);
              slot.at = now;
              this.changed(b.twin);
            } else this.#input(b, input);
          }
        },
      });
      entry = { sub, bindings };
      this.#subjects.set(subject, entry);
    }
    entry.bindings.push(binding);
  }

  #bindUns(topic: string, binding: Binding): void {
    if (!this.#uns) {
      binding.slot.error = 'no UNS broker configured (--uns-mqtt-url)';
      return;
    }
    let entry = this.#unsTopics.get(topic);
    if (!entry) {
      const bindings: Binding[] = [];
      const off = this.#uns.subscribe(topic, (payload) => {
        for (const b of bindings) this.#input(b, payload);
      });
      entry = { off, bindings };
      this.#unsTopics.set(topic, entry);
    }
    entry.bindings.push(binding);
  }

  #input({ twin, slot }: Binding, input: unknown): void {
    const now = Date.now();
    if (!slot.compiled) {
      if (slot.record.transformationId && slot.error) return; // unknown transformation: stays marked
      slot.value = plainValue(input);
      slot.at = now;
      this.changed(twin);
      return;
    }
    twin.inflight++;
    // Evaluated in the expression sandbox (off the main loop, batched); results may come back out
    // of order across its workers: only a newer one than the slot holds is kept.
    const seq = ++slot.seq;
    this.#expressions.evaluate(slot.compiled.expression, input, twin.params).then(
      (out) => {
        twin.inflight--;
        if (seq < slot.applied) return this.changed(twin);
        slot.applied = seq;
        slot.value = out;
        slot.error = null;
        slot.at = now;
        this.changed(twin);
      },
      (err: unknown) => {
        twin.inflight--;
        if (seq < slot.applied) return this.changed(twin);
        slot.applied = seq;
        slot.value = null;
        slot.error = `transformation failed: ${describeEvalError(err)}`;
        slot.at = now;
        this.#logFailure(twin, slot);
        this.changed(twin);
      },
    );
  }

  #logFailure(twin: Twin, slot: Slot): void {
    const key = `${twin.record.id}/${slot.record.id}`;
    const now = Date.now();
    if (now - (this.#lastLog.get(key) ?? -Infinity) < this.#logEveryMs) return;
    this.#lastLog.set(key, now);
    this.#log?.warn(
      { instance: twin.record.id, attribute: slot.record.id },
      `digital twin ${twin.record.name}: attribute ${slot.name}: ${slot.error} (logged at most once a minute)`,
    );
  }

  /** An input of `twin` changed: publish soon when its model publishes on change. */
  changed(twin: Twin): void {
    if (twin.state !== 'running' || !twin.model.publishOnChange || twin.scheduled || twin.inflight > 0)
      return;
    twin.scheduled = true;
    queueMicrotask(
      (twin.flush ??= () => {
        twin.scheduled = false;
        if (twin.state === 'running' && this.#twins.get(twin.record.id) === twin) this.publish(twin);
      }),
    );
  }

  /** Assembles and publishes `twin`'s payload now. */
  publish(twin: Twin): void {
    if (this.#closed || twin.state !== 'running') return;
    const now = Date.now();
    // Marks per attribute as numbers and short lists (not one object per attribute): a payload
    // is built for every change of every instance, so its allocations count.
    const c = twin.compiled!;
    const stale: string[] = [];
    let errors: Record<string, string> | null = null;
    const staleAfter = twin.model.staleAfterMs;
    for (const slot of twin.slots) {
      let error = slot.error;
      const age = ageOf(slot, now);
      if (slot.nested) {
        const bad = slot.nested.find((n) => n.state !== 'running');
        if (bad)
          error = `nested instance ${bad.record.name} is ${bad.state}${bad.error ? `: ${bad.error}` : ''}`;
      }
      if (
        slot.record.attributeType !== 'AssetHierarchy' &&
        (age === null || (staleAfter > 0 && age > staleAfter))
      )
        stale.push(slot.name);
      if (error !== null) (errors ??= {})[slot.name] = error;
    }
    const payload: TwinPayload = {
      instanceId: twin.record.id,
      instance: twin.record.name,
      model: twin.model.name,
      timestamp: now,
      data: c.data(c.consts, c.slots, slotValue),
      ageMs: c.ages(twin.slots, now, ageOf),
      stale,
      errors: errors ?? {},
    };
    if ((twin.published & 255) === 0) {
      const size = Buffer.byteLength(JSON.stringify(payload));
      if (size > this.#maxPayloadBytes) {
        twin.state = 'error';
        twin.error = `payload of ${size} bytes exceeds the maximum of ${this.#maxPayloadBytes} (--datahub-max-payload)`;
        this.#log?.error({ instance: twin.record.id }, `digital twin ${twin.record.name}: ${twin.error}`);
        return;
      }
    }
    twin.lastPayload = payload;
    twin.lastPublishedAt = now;
    twin.published++;
    try {
      this.#hub.publish(twin.record.topic, payload);
    } catch (err) {
      this.#log?.warn({ err, instance: twin.record.id }, 'digital twin payload not published');
    }
    for (const e of twin.embeddedBy) this.changed(e);
  }

  status(id: string) {
    const t = this.#twins.get(id);
    if (!t) return null;
    return {
      state: t.state,
      error: t.error,
      lastPublishedAt: t.lastPublishedAt,
      published: t.published,
      failedAttributes: t.slots
        .filter((x) => x.error?.startsWith('transformation failed'))
        .map((x) => x.name),
    };
  }

  #teardown(): void {
    for (const { sub } of this.#subjects.values()) sub.unsubscribe();
    this.#subjects.clear();
    for (const { off } of this.#unsTopics.values()) off();
    this.#unsTopics.clear();
    for (const t of this.#timers.values()) clearInterval(t);
    this.#timers.clear();
    for (const t of this.#twins.values()) t.state = 'stopped';
    this.#twins.clear();
  }

  close(): void {
    if (this.#closed) return;
    this.#offChange();
    if (this.#rebuildTimer) clearTimeout(this.#rebuildTimer);
    this.#teardown();
    this.#closed = true;
    if (this.#ownSandbox) void this.#expressions.close();
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
