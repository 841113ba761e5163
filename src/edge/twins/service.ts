/**
 * The twins' domain rules: models, instances, static and dynamic attributes, parameters,
 * transformations, hierarchies and asset placements. No GraphQL here: the resolvers translate.
 * The whole configuration is held in memory (bounded by `TwinsLimits`) and written through to the
 * repository; each committed change is told to the listeners (the runtime).
 */
import { badRequest, conflict, notFound } from '../../kernel/errors.js';
import { uuidv7 } from '../../kernel/ids.js';
import { isValidSubject } from '../datahub/index.js';
import type { TwinsRepository } from './repository.js';
import { compileTransformation } from './transform.js';
import type {
  AttributeType,
  DynamicAttributeRecord,
  DynamicAttributeType,
  HierarchyNodeRecord,
  InstanceRecord,
  InstanceSource,
  KeyValueRecord,
  ModelRecord,
  NodeAttributeKind,
  PlacementRecord,
  TransformationRecord,
  TwinsChange,
} from './types.js';

/** Bounds of the twins' configuration (docs/security.md, "Digital twins"). */
export interface TwinsLimits {
  maxModels: number;
  maxInstances: number;
  /** Static + dynamic attributes + parameters of one model or one instance (its own). */
  maxAttributesPerOwner: number;
  /** Dynamic attributes in all. */
  maxDynamicAttributes: number;
  maxTransformations: number;
  /** Longest name, key or topic (characters). */
  maxNameLength: number;
  /** Longest static attribute or parameter value, and placement metadata as JSON (bytes). */
  maxValueBytes: number;
  maxHierarchyNodes: number;
  maxHierarchyDepth: number;
  maxPlacementsPerInstance: number;
  /** Largest page of a list. */
  maxLimit: number;
}

export const DEFAULT_TWINS_LIMITS: TwinsLimits = {
  maxModels: 1000,
  maxInstances: 10_000,
  maxAttributesPerOwner: 500,
  maxDynamicAttributes: 200_000,
  maxTransformations: 10_000,
  maxNameLength: 256,
  maxValueBytes: 64 * 1024,
  maxHierarchyNodes: 1000,
  maxHierarchyDepth: 16,
  maxPlacementsPerInstance: 100,
  maxLimit: 1000,
};

const DEFAULT_LIMIT = 50;
const DEFAULT_STALE_AFTER_MS = 10_000;

// ---------------------------------------------------------------------------------------------
// Requests (wire shapes, as the resolvers pass them)

type Opt<T> = T | null | undefined;

export interface CreateModelRequest {
  Name: string;
  Assets: string;
  Description?: Opt<string>;
  PublishOnChange?: Opt<boolean>;
  PublishIntervalMs?: Opt<number>;
  StaleAfterMs?: Opt<number>;
}
export interface UpdateModelRequest extends Partial<CreateModelRequest> {
  ID: string;
}
export interface CreateInstanceRequest {
  ModelID: string;
  Name: string;
  Description?: Opt<string>;
  Source?: Opt<InstanceSource>;
  Topic?: Opt<string>;
  Enabled?: Opt<boolean>;
}
export interface UpdateInstanceRequest {
  ID: string;
  Name?: Opt<string>;
  Description?: Opt<string>;
  Source?: Opt<InstanceSource>;
  Topic?: Opt<string>;
  Enabled?: Opt<boolean>;
}
export interface CreateKeyValueRequest {
  ModelID: string;
  InstanceID?: Opt<string>;
  Key: string;
  Value: string;
}
export interface UpdateKeyValueRequest {
  ID: string;
  Key?: Opt<string>;
  Value?: Opt<string>;
}
export interface CreateDynamicAttributeRequest {
  ModelID: string;
  InstanceID?: Opt<string>;
  Name: string;
  Description?: Opt<string>;
  Type?: Opt<DynamicAttributeType>;
  AttributeType?: Opt<AttributeType>;
  Topic?: Opt<string>;
  TransformationID?: Opt<string>;
  NestedModelID?: Opt<string>;
  NestedInstanceID?: Opt<string>;
}
export interface UpdateDynamicAttributeRequest extends Partial<
  Omit<CreateDynamicAttributeRequest, 'ModelID'>
> {
  ID: string;
}
export interface CreateTransformationRequest {
  Name: string;
  Description?: Opt<string>;
  Expression: string;
}
export interface UpdateTransformationRequest {
  ID: string;
  Name?: Opt<string>;
  Description?: Opt<string>;
  Expression?: Opt<string>;
}
export interface OwnerListRequest {
  ModelID?: Opt<string>;
  InstanceID?: Opt<string>;
  Limit?: Opt<number>;
  Offset?: Opt<number>;
}
export interface NamedListRequest {
  ModelID?: Opt<string>;
  Limit?: Opt<number>;
  Offset?: Opt<number>;
  Filter?: Opt<Record<string, Opt<Record<string, unknown>>>>;
  Sort?: Opt<ReadonlyArray<{ Field: string; Order?: Opt<string> }> | { Field: string; Order?: Opt<string> }>;
}
export interface HierarchyInput {
  Node: {
    Position?: Opt<number>;
    Name: string;
    IsFolder?: Opt<boolean>;
    AttributeID?: Opt<string>;
    AttributeType?: Opt<string>;
    NodeType?: Opt<string>;
  };
  Childs?: Opt<HierarchyInput[]>;
}
export interface PlacementInput {
  InstanceID: string;
  Path: string;
  Metadata?: unknown;
}

export interface Page<T> {
  Items: T[];
  Total: number;
}

/** One node of a hierarchy as it reads back. */
export interface HierarchyTree {
  node: HierarchyNodeRecord;
  children: HierarchyTree[];
}

// ---------------------------------------------------------------------------------------------

/** A subject to publish on: valid, without wildcards. */
export function checkSingleSubject(topic: string, what: string): void {
  if (!isValidSubject(topic))
    throw badRequest(
      `${what} ${JSON.stringify(topic)} must be a single DataHub subject: dot-separated tokens, no wildcards (* or >), no spaces`,
    );
}

/** An MQTT topic to subscribe to: one topic, no wildcards. */
export function checkSingleMqttTopic(topic: string, what: string): void {
  if (topic === '' || /[+#]/.test(topic) || topic.includes('\0') || topic.startsWith('$'))
    throw badRequest(
      `${what} ${JSON.stringify(topic)} must be a single MQTT topic: no wildcards (+ or #), not empty, not a $ topic`,
    );
}

/** `{{Param}}` placeholders of a topic. */
export const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g;

/** Default subject of an instance: `twins.<model>.<instance>`, each name made one token. */
export function defaultTopic(model: string, instance: string): string {
  const token = (s: string) => s.replace(/[^A-Za-z0-9_:-]/g, '_') || '_';
  return `twins.${token(model)}.${token(instance)}`;
}

export class TwinsService {
  readonly models = new Map<string, ModelRecord>();
  readonly instances = new Map<string, InstanceRecord>();
  readonly statics = new Map<string, KeyValueRecord>();
  readonly parameters = new Map<string, KeyValueRecord>();
  readonly dynamics = new Map<string, DynamicAttributeRecord>();
  readonly transformations = new Map<string, TransformationRecord>();
  readonly nodes = new Map<string, HierarchyNodeRecord>();
  readonly placements = new Map<string, PlacementRecord>();
  readonly limits: TwinsLimits;
  readonly #repo: TwinsRepository;
  readonly #listeners = new Set<(change: TwinsChange) => void>();

  private constructor(repo: TwinsRepository, limits: TwinsLimits) {
    this.#repo = repo;
    this.limits = limits;
  }

  static async load(repo: TwinsRepository, limits: Partial<TwinsLimits> = {}): Promise<TwinsService> {
    const s = new TwinsService(repo, { ...DEFAULT_TWINS_LIMITS, ...limits });
    await s.#fill(repo);
    return s;
  }

  async #fill(repo: TwinsRepository): Promise<void> {
    const read = async <T extends { id: string }>(table: Parameters<TwinsRepository['all']>[0]) =>
      new Map((await repo.all<T>(table)).map((r) => [r.id, r] as const));
    // Everything is read first, then swapped in at once: no reader sees half a configuration.
    const fresh = {
      models: await read<ModelRecord>('model'),
      instances: await read<InstanceRecord>('instance'),
      statics: await read<KeyValueRecord>('static'),
      parameters: await read<KeyValueRecord>('parameter'),
      dynamics: await read<DynamicAttributeRecord>('dynamic'),
      transformations: await read<TransformationRecord>('transformation'),
      nodes: await read<HierarchyNodeRecord>('node'),
      placements: await read<PlacementRecord>('placement'),
    };
    for (const [name, map] of Object.entries(fresh) as [keyof typeof fresh, Map<string, object>][]) {
      const mine = this[name] as Map<string, object>;
      mine.clear();
      for (const [id, r] of map) mine.set(id, r);
    }
  }

  /**
   * Reads the whole configuration again from the database (after a configuration template was
   * applied in a transaction of its own) and tells the listeners once (`reload`): the runtime
   * re-resolves every instance, keeping their last values.
   */
  async reload(): Promise<void> {
    await this.#fill(this.#repo);
    this.#changed('reload', '*');
  }

  /**
   * A service over `repo` (one bound to a transaction: `TwinsRepository.inTransaction`) with these
   * limits and no listeners: the configuration apply writes through it, so that its rules are the
   * API's.
   */
  async over(repo: TwinsRepository): Promise<TwinsService> {
    return TwinsService.load(repo, this.limits);
  }

  onChange(listener: (change: TwinsChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #changed(kind: TwinsChange['kind'], id: string): void {
    for (const l of this.#listeners) l({ kind, id });
  }

  // --- lookups

  model(id: string): ModelRecord {
    const m = this.models.get(id);
    if (!m) throw notFound(`model ${id} does not exist`);
    return m;
  }

  instance(id: string): InstanceRecord {
    const i = this.instances.get(id);
    if (!i) throw notFound(`instance ${id} does not exist`);
    return i;
  }

  transformation(id: string): TransformationRecord {
    const t = this.transformations.get(id);
    if (!t) throw notFound(`transformation ${id} does not exist`);
    return t;
  }

  instancesOf(modelId: string): InstanceRecord[] {
    return [...this.instances.values()].filter((i) => i.modelId === modelId);
  }

  /** The model's own records of a kind (instance-level ones excluded). */
  #ofModel<T extends { modelId: string; instanceId: string | null }>(
    map: Map<string, T>,
    modelId: string,
  ): T[] {
    return [...map.values()].filter((r) => r.modelId === modelId && r.instanceId === null);
  }

  /** Records in effect for an instance: the model's, with the instance's own replacing the same key. */
  #effective<T extends { modelId: string; instanceId: string | null }>(
    map: Map<string, T>,
    instance: InstanceRecord,
    keyOf: (r: T) => string,
  ): T[] {
    const byKey = new Map<string, T>();
    for (const r of map.values())
      if (r.modelId === instance.modelId && r.instanceId === null) byKey.set(keyOf(r), r);
    for (const r of map.values()) if (r.instanceId === instance.id) byKey.set(keyOf(r), r);
    return [...byKey.values()];
  }

  effectiveStatics(instance: InstanceRecord): KeyValueRecord[] {
    return this.#effective(this.statics, instance, (r) => r.key);
  }
  effectiveParameters(instance: InstanceRecord): KeyValueRecord[] {
    return this.#effective(this.parameters, instance, (r) => r.key);
  }
  effectiveDynamics(instance: InstanceRecord): DynamicAttributeRecord[] {
    return this.#effective(this.dynamics, instance, (r) => r.name);
  }

  counts(modelId: string, instance?: InstanceRecord) {
    if (instance)
      return {
        StaticAttributeCount: this.effectiveStatics(instance).length,
        DynamicAttributeCount: this.effectiveDynamics(instance).length,
        ParameterCount: this.effectiveParameters(instance).length,
      };
    return {
      StaticAttributeCount: this.#ofModel(this.statics, modelId).length,
      DynamicAttributeCount: this.#ofModel(this.dynamics, modelId).length,
      ParameterCount: this.#ofModel(this.parameters, modelId).length,
    };
  }

  // --- checks

  #name(value: string, what: string): string {
    const v = value.trim();
    if (v === '') throw badRequest(`${what} must not be empty`);
    if (v === '__proto__') throw badRequest(`${what} must not be __proto__`);
    if (v.length > this.limits.maxNameLength)
      throw badRequest(`${what} is longer than ${this.limits.maxNameLength} characters`);
    return v;
  }

  #value(value: string, what: string): string {
    if (Buffer.byteLength(value) > this.limits.maxValueBytes)
      throw badRequest(`${what} is larger than ${this.limits.maxValueBytes} bytes`);
    return value;
  }

  #nonNegative(value: number, what: string, max: number): number {
    if (!Number.isInteger(value) || value < 0 || value > max)
      throw badRequest(`${what} must be an integer from 0 to ${max}, got ${value}`);
    return value;
  }

  /** The owner of an attribute or parameter: the model, or one of its instances. */
  #owner(modelId: string, instanceId: Opt<string>): { model: ModelRecord; instanceId: string | null } {
    const model = this.model(modelId);
    if (instanceId) {
      const inst = this.instance(instanceId);
      if (inst.modelId !== model.id)
        throw badRequest(
          `instance ${instanceId} is an instance of model ${inst.modelId}, not of ${model.id}`,
        );
    }
    return { model, instanceId: instanceId ?? null };
  }

  #ownedCount(modelId: string, instanceId: string | null): number {
    let n = 0;
    for (const map of [this.statics, this.parameters, this.dynamics] as Map<
      string,
      KeyValueRecord | DynamicAttributeRecord
    >[])
      for (const r of map.values()) if (r.modelId === modelId && r.instanceId === instanceId) n++;
    return n;
  }

  #checkOwnerRoom(modelId: string, instanceId: string | null): void {
    if (this.#ownedCount(modelId, instanceId) >= this.limits.maxAttributesPerOwner)
      throw badRequest(
        `the ${instanceId ? 'instance' : 'model'} already has ${this.limits.maxAttributesPerOwner} attributes and parameters, the most allowed`,
      );
  }

  // --- models

  async createModel(input: CreateModelRequest): Promise<ModelRecord> {
    if (this.models.size >= this.limits.maxModels)
      throw badRequest(`there are already ${this.limits.maxModels} models, the most allowed`);
    const name = this.#name(input.Name, 'Name');
    this.#uniqueModelName(name);
    const now = Date.now();
    const m: ModelRecord = {
      id: uuidv7(now),
      name,
      assets: this.#name(input.Assets, 'Assets'),
      description: input.Description ?? '',
      publishOnChange: input.PublishOnChange ?? true,
      publishIntervalMs: this.#interval(input.PublishIntervalMs ?? 0),
      staleAfterMs: this.#nonNegative(
        input.StaleAfterMs ?? DEFAULT_STALE_AFTER_MS,
        'StaleAfterMs',
        86_400_000,
      ),
      createdAt: now,
      updatedAt: now,
    };
    await this.#repo.insert('model', m);
    this.models.set(m.id, m);
    this.#changed('model', m.id);
    return m;
  }

  #interval(ms: number): number {
    this.#nonNegative(ms, 'PublishIntervalMs', 86_400_000);
    if (ms !== 0 && ms < 100)
      throw badRequest(`PublishIntervalMs must be 0 (off) or at least 100, got ${ms}`);
    return ms;
  }

  #uniqueModelName(name: string, except?: string): void {
    for (const m of this.models.values())
      if (m.name === name && m.id !== except) throw conflict(`a model named ${JSON.stringify(name)} exists`);
  }

  async updateModel(input: UpdateModelRequest): Promise<ModelRecord> {
    const old = this.model(input.ID);
    const m: ModelRecord = { ...old, updatedAt: Date.now() };
    if (input.Name != null) {
      m.name = this.#name(input.Name, 'Name');
      this.#uniqueModelName(m.name, m.id);
    }
    if (input.Assets != null) m.assets = this.#name(input.Assets, 'Assets');
    if (input.Description != null) m.description = input.Description;
    if (input.PublishOnChange != null) m.publishOnChange = input.PublishOnChange;
    if (input.PublishIntervalMs != null) m.publishIntervalMs = this.#interval(input.PublishIntervalMs);
    if (input.StaleAfterMs != null)
      m.staleAfterMs = this.#nonNegative(input.StaleAfterMs, 'StaleAfterMs', 86_400_000);
    await this.#repo.update('model', m);
    this.models.set(m.id, m);
    this.#changed('model', m.id);
    return m;
  }

  /** Deletes the model with its instances, attributes, parameters, hierarchy and placements. */
  async deleteModel(id: string): Promise<boolean> {
    this.model(id);
    const instances = this.instancesOf(id).map((i) => i.id);
    const inModel = <T extends { id: string; modelId: string }>(map: Map<string, T>) =>
      [...map.values()].filter((r) => r.modelId === id).map((r) => r.id);
    const statics = inModel(this.statics);
    const params = inModel(this.parameters);
    const dyn = inModel(this.dynamics);
    const nodes = inModel(this.nodes);
    const instSet = new Set(instances);
    const places = [...this.placements.values()].filter((p) => instSet.has(p.instanceId)).map((p) => p.id);
    await this.#repo.batch([
      { op: 'remove', table: 'static', ids: statics },
      { op: 'remove', table: 'parameter', ids: params },
      { op: 'remove', table: 'dynamic', ids: dyn },
      { op: 'remove', table: 'node', ids: nodes },
      { op: 'remove', table: 'placement', ids: places },
      { op: 'remove', table: 'instance', ids: instances },
      { op: 'remove', table: 'model', ids: [id] },
    ]);
    for (const x of statics) this.statics.delete(x);
    for (const x of params) this.parameters.delete(x);
    for (const x of dyn) this.dynamics.delete(x);
    for (const x of nodes) this.nodes.delete(x);
    for (const x of places) this.placements.delete(x);
    for (const x of instances) this.instances.delete(x);
    this.models.delete(id);
    this.#changed('model', id);
    return true;
  }

  listModels(input: Opt<NamedListRequest>): Page<ModelRecord> {
    return this.#page([...this.models.values()], input, { Name: (m) => m.name, Assets: (m) => m.assets });
  }

  // --- instances

  #instanceTopic(topic: string, except?: string): string {
    checkSingleSubject(topic, 'Topic');
    if (topic.startsWith('devicehub.') || topic.startsWith('_INBOX.'))
      throw badRequest(
        `Topic ${JSON.stringify(topic)} is reserved (devicehub.* and _INBOX.* belong to the DataHub)`,
      );
    for (const i of this.instances.values())
      if (i.topic === topic && i.id !== except)
        throw conflict(`instance ${i.name} (${i.id}) already publishes on ${topic}`);
    return topic;
  }

  #uniqueInstanceName(modelId: string, name: string, except?: string): void {
    for (const i of this.instances.values())
      if (i.modelId === modelId && i.name === name && i.id !== except)
        throw conflict(`model ${modelId} already has an instance named ${JSON.stringify(name)}`);
  }

  async createInstance(input: CreateInstanceRequest): Promise<InstanceRecord> {
    const model = this.model(input.ModelID);
    if (this.instances.size >= this.limits.maxInstances)
      throw badRequest(`there are already ${this.limits.maxInstances} instances, the most allowed`);
    const name = this.#name(input.Name, 'Name');
    this.#uniqueInstanceName(model.id, name);
    const now = Date.now();
    const i: InstanceRecord = {
      id: uuidv7(now),
      modelId: model.id,
      name,
      description: input.Description ?? '',
      source: input.Source ?? 'local',
      topic: this.#instanceTopic(input.Topic ?? defaultTopic(model.name, name)),
      enabled: input.Enabled ?? true,
      createdAt: now,
      updatedAt: now,
    };
    await this.#repo.insert('instance', i);
    this.instances.set(i.id, i);
    this.#changed('instance', i.id);
    return i;
  }

  async updateInstance(input: UpdateInstanceRequest): Promise<InstanceRecord> {
    const old = this.instance(input.ID);
    const i: InstanceRecord = { ...old, updatedAt: Date.now() };
    if (input.Name != null) {
      i.name = this.#name(input.Name, 'Name');
      this.#uniqueInstanceName(i.modelId, i.name, i.id);
    }
    if (input.Description != null) i.description = input.Description;
    if (input.Source != null) i.source = input.Source;
    if (input.Topic != null) i.topic = this.#instanceTopic(input.Topic, i.id);
    if (input.Enabled != null) i.enabled = input.Enabled;
    await this.#repo.update('instance', i);
    this.instances.set(i.id, i);
    this.#changed('instance', i.id);
    return i;
  }

  async deleteInstance(id: string): Promise<boolean> {
    this.instance(id);
    const own = <T extends { id: string; instanceId: string | null }>(map: Map<string, T>) =>
      [...map.values()].filter((r) => r.instanceId === id).map((r) => r.id);
    const statics = own(this.statics);
    const params = own(this.parameters);
    const dyn = own(this.dynamics);
    const places = own(this.placements);
    await this.#repo.batch([
      { op: 'remove', table: 'static', ids: statics },
      { op: 'remove', table: 'parameter', ids: params },
      { op: 'remove', table: 'dynamic', ids: dyn },
      { op: 'remove', table: 'placement', ids: places },
      { op: 'remove', table: 'instance', ids: [id] },
    ]);
    for (const x of statics) this.statics.delete(x);
    for (const x of params) this.parameters.delete(x);
    for (const x of dyn) this.dynamics.delete(x);
    for (const x of places) this.placements.delete(x);
    this.instances.delete(id);
    this.#changed('instance', id);
    return true;
  }

  listInstances(input: Opt<NamedListRequest>): Page<InstanceRecord> {
    let all = [...this.instances.values()];
    if (input?.ModelID) all = all.filter((i) => i.modelId === input.ModelID);
    return this.#page(all, input, { Name: (i) => i.name, Topic: (i) => i.topic });
  }

  // --- static attributes and parameters

  #kv(kind: 'static' | 'parameter') {
    return kind === 'static' ? this.statics : this.parameters;
  }

  #uniqueKey(
    kind: 'static' | 'parameter',
    modelId: string,
    instanceId: string | null,
    key: string,
    except?: string,
  ) {
    for (const r of this.#kv(kind).values())
      if (r.modelId === modelId && r.instanceId === instanceId && r.key === key && r.id !== except)
        throw conflict(
          `the ${instanceId ? 'instance' : 'model'} already has a ${kind === 'static' ? 'static attribute' : 'parameter'} ${JSON.stringify(key)}`,
        );
  }

  async createKeyValue(kind: 'static' | 'parameter', input: CreateKeyValueRequest): Promise<KeyValueRecord> {
    const { model, instanceId } = this.#owner(input.ModelID, input.InstanceID);
    this.#checkOwnerRoom(model.id, instanceId);
    const key = this.#name(input.Key, 'Key');
    this.#uniqueKey(kind, model.id, instanceId, key);
    const now = Date.now();
    const r: KeyValueRecord = {
      id: uuidv7(now),
      modelId: model.id,
      instanceId,
      key,
      value: this.#value(input.Value, 'Value'),
      createdAt: now,
      updatedAt: now,
    };
    await this.#repo.insert(kind, r);
    this.#kv(kind).set(r.id, r);
    this.#changed(kind, r.id);
    return r;
  }

  keyValue(kind: 'static' | 'parameter', id: string): KeyValueRecord {
    const r = this.#kv(kind).get(id);
    if (!r) throw notFound(`${kind === 'static' ? 'static attribute' : 'parameter'} ${id} does not exist`);
    return r;
  }

  async updateKeyValue(kind: 'static' | 'parameter', input: UpdateKeyValueRequest): Promise<KeyValueRecord> {
    const r: KeyValueRecord = { ...this.keyValue(kind, input.ID), updatedAt: Date.now() };
    if (input.Key != null) {
      r.key = this.#name(input.Key, 'Key');
      this.#uniqueKey(kind, r.modelId, r.instanceId, r.key, r.id);
    }
    if (input.Value != null) r.value = this.#value(input.Value, 'Value');
    await this.#repo.update(kind, r);
    this.#kv(kind).set(r.id, r);
    this.#changed(kind, r.id);
    return r;
  }

  async deleteKeyValue(kind: 'static' | 'parameter', id: string): Promise<boolean> {
    this.keyValue(kind, id);
    const nodes = this.#nodesShowing(id);
    await this.#repo.batch([
      { op: 'remove', table: 'node', ids: nodes },
      { op: 'remove', table: kind, ids: [id] },
    ]);
    for (const n of nodes) this.nodes.delete(n);
    this.#kv(kind).delete(id);
    this.#changed(kind, id);
    return true;
  }

  listKeyValues(kind: 'static' | 'parameter', input: Opt<OwnerListRequest>): Page<KeyValueRecord> {
    return this.#page(this.#owned(this.#kv(kind), input), input, {});
  }

  #owned<T extends { modelId: string; instanceId: string | null }>(
    map: Map<string, T>,
    input: Opt<OwnerListRequest>,
  ): T[] {
    let all = [...map.values()];
    if (input?.InstanceID) {
      const inst = this.instances.get(input.InstanceID);
      // An instance's list: what is in effect for it (the model's and its own).
      all = inst
        ? all.filter((r) => r.modelId === inst.modelId && (r.instanceId === null || r.instanceId === inst.id))
        : [];
      if (input.ModelID) all = all.filter((r) => r.modelId === input.ModelID);
    } else if (input?.ModelID) {
      all = all.filter((r) => r.modelId === input.ModelID && r.instanceId === null);
    }
    return all;
  }

  // --- dynamic attributes

  dynamic(id: string): DynamicAttributeRecord {
    const r = this.dynamics.get(id);
    if (!r) throw notFound(`dynamic attribute ${id} does not exist`);
    return r;
  }

  /** The rules of a dynamic attribute, on create and on update (the merged record). */
  #checkDynamic(r: DynamicAttributeRecord): void {
    if (r.nestedModelId && r.nestedInstanceId)
      throw badRequest('NestedModelID and NestedInstanceID: set one, leave the other null');
    if (r.type === 'nestedModel') {
      if (!r.nestedModelId && !r.nestedInstanceId)
        throw badRequest('a nestedModel attribute needs NestedModelID or NestedInstanceID (one of them)');
      if (r.nestedModelId) this.model(r.nestedModelId);
      if (r.nestedInstanceId) this.instance(r.nestedInstanceId);
      if (r.transformationId) throw badRequest('a nestedModel attribute takes no TransformationID');
      return;
    }
    if (r.nestedModelId || r.nestedInstanceId)
      throw badRequest(`NestedModelID and NestedInstanceID belong to Type nestedModel, not ${r.type}`);
    if (r.transformationId) this.transformation(r.transformationId);
    if (r.attributeType === 'AssetHierarchy') return;
    if (r.topic === '') throw badRequest(`a ${r.attributeType} attribute needs a Topic`);
    if (r.topic.length > this.limits.maxNameLength)
      throw badRequest(`Topic is longer than ${this.limits.maxNameLength} characters`);
    // Placeholders stand for one token each.
    const shape = r.topic.replace(PLACEHOLDER, 'p');
    if (r.attributeType === 'Regular') checkSingleSubject(shape, 'Topic');
    else checkSingleMqttTopic(shape, 'Topic');
  }

  #uniqueDynamicName(r: DynamicAttributeRecord): void {
    for (const o of this.dynamics.values())
      if (o.modelId === r.modelId && o.instanceId === r.instanceId && o.name === r.name && o.id !== r.id)
        throw conflict(
          `the ${r.instanceId ? 'instance' : 'model'} already has a dynamic attribute ${JSON.stringify(r.name)}`,
        );
  }

  async createDynamic(input: CreateDynamicAttributeRequest): Promise<DynamicAttributeRecord> {
    const { model, instanceId } = this.#owner(input.ModelID, input.InstanceID);
    this.#checkOwnerRoom(model.id, instanceId);
    if (this.dynamics.size >= this.limits.maxDynamicAttributes)
      throw badRequest(
        `there are already ${this.limits.maxDynamicAttributes} dynamic attributes, the most allowed`,
      );
    const now = Date.now();
    const nested = input.NestedModelID != null || input.NestedInstanceID != null;
    const r: DynamicAttributeRecord = {
      id: uuidv7(now),
      modelId: model.id,
      instanceId,
      name: this.#name(input.Name, 'Name'),
      description: input.Description ?? '',
      type: input.Type ?? (nested ? 'nestedModel' : 'topic'),
      attributeType: input.AttributeType ?? 'Regular',
      topic: (input.Topic ?? '').trim(),
      transformationId: input.TransformationID ?? null,
      nestedModelId: input.NestedModelID ?? null,
      nestedInstanceId: input.NestedInstanceID ?? null,
      createdAt: now,
      updatedAt: now,
    };
    this.#checkDynamic(r);
    this.#uniqueDynamicName(r);
    await this.#repo.insert('dynamic', r);
    this.dynamics.set(r.id, r);
    this.#changed('dynamic', r.id);
    return r;
  }

  async updateDynamic(input: UpdateDynamicAttributeRequest): Promise<DynamicAttributeRecord> {
    const r: DynamicAttributeRecord = { ...this.dynamic(input.ID), updatedAt: Date.now() };
    if (input.Name != null) r.name = this.#name(input.Name, 'Name');
    if (input.Description != null) r.description = input.Description;
    if (input.Type != null) r.type = input.Type;
    if (input.AttributeType != null) r.attributeType = input.AttributeType;
    if (input.Topic != null) r.topic = input.Topic.trim();
    // An explicit null clears; absent keeps.
    if (input.TransformationID !== undefined) r.transformationId = input.TransformationID;
    // Setting one of the two nested references clears the other unless both are given.
    if (input.NestedModelID !== undefined || input.NestedInstanceID !== undefined) {
      r.nestedModelId = input.NestedModelID ?? null;
      r.nestedInstanceId = input.NestedInstanceID ?? null;
    }
    this.#checkDynamic(r);
    this.#uniqueDynamicName(r);
    await this.#repo.update('dynamic', r);
    this.dynamics.set(r.id, r);
    this.#changed('dynamic', r.id);
    return r;
  }

  async deleteDynamic(id: string): Promise<boolean> {
    this.dynamic(id);
    const nodes = this.#nodesShowing(id);
    await this.#repo.batch([
      { op: 'remove', table: 'node', ids: nodes },
      { op: 'remove', table: 'dynamic', ids: [id] },
    ]);
    for (const n of nodes) this.nodes.delete(n);
    this.dynamics.delete(id);
    this.#changed('dynamic', id);
    return true;
  }

  listDynamics(input: Opt<OwnerListRequest>): Page<DynamicAttributeRecord> {
    return this.#page(this.#owned(this.dynamics, input), input, {});
  }

  // --- transformations

  async createTransformation(input: CreateTransformationRequest): Promise<TransformationRecord> {
    if (this.transformations.size >= this.limits.maxTransformations)
      throw badRequest(
        `there are already ${this.limits.maxTransformations} transformations, the most allowed`,
      );
    compileTransformation(input.Expression);
    const now = Date.now();
    const t: TransformationRecord = {
      id: uuidv7(now),
      name: this.#name(input.Name, 'Name'),
      description: input.Description ?? '',
      expression: input.Expression,
      createdAt: now,
      updatedAt: now,
    };
    await this.#repo.insert('transformation', t);
    this.transformations.set(t.id, t);
    this.#changed('transformation', t.id);
    return t;
  }

  async updateTransformation(input: UpdateTransformationRequest): Promise<TransformationRecord> {
    const t: TransformationRecord = { ...this.transformation(input.ID), updatedAt: Date.now() };
    if (input.Name != null) t.name = this.#name(input.Name, 'Name');
    if (input.Description != null) t.description = input.Description;
    if (input.Expression != null) {
      compileTransformation(input.Expression);
      t.expression = input.Expression;
    }
    await this.#repo.update('transformation', t);
    this.transformations.set(t.id, t);
    this.#changed('transformation', t.id);
    return t;
  }

  async deleteTransformation(id: string): Promise<boolean> {
    this.transformation(id);
    const users = [...this.dynamics.values()].filter((d) => d.transformationId === id);
    if (users.length > 0)
      throw conflict(
        `transformation ${id} is used by dynamic attribute(s) ${users
          .slice(0, 5)
          .map((u) => `${u.name} (${u.id})`)
          .join(', ')}; unset their TransformationID first`,
      );
    await this.#repo.remove('transformation', [id]);
    this.transformations.delete(id);
    this.#changed('transformation', id);
    return true;
  }

  listTransformations(input: Opt<NamedListRequest>): Page<TransformationRecord> {
    return this.#page([...this.transformations.values()], input, {});
  }

  // --- hierarchy

  /** What an attribute ID of a node refers to, within the model. */
  attributeOf(
    modelId: string,
    id: string,
  ): { kind: NodeAttributeKind; record: KeyValueRecord | DynamicAttributeRecord } | null {
    const s = this.statics.get(id);
    if (s && s.modelId === modelId) return { kind: 'static', record: s };
    const d = this.dynamics.get(id);
    if (d && d.modelId === modelId) return { kind: 'dynamic', record: d };
    const p = this.parameters.get(id);
    if (p && p.modelId === modelId) return { kind: 'parameter', record: p };
    return null;
  }

  #nodesShowing(attributeId: string): string[] {
    const direct = [...this.nodes.values()].filter((n) => n.attributeId === attributeId).map((n) => n.id);
    // With their subtrees (an attribute node has no children in practice, but be thorough).
    const out = new Set(direct);
    let grew = true;
    while (grew) {
      grew = false;
      for (const n of this.nodes.values())
        if (n.parentId && out.has(n.parentId) && !out.has(n.id)) {
          out.add(n.id);
          grew = true;
        }
    }
    return [...out];
  }

  /** Replaces the model's hierarchy with `input`. */
  async saveAllHierarchy(modelId: string, input: HierarchyInput[]): Promise<HierarchyTree[]> {
    this.model(modelId);
    const created: HierarchyNodeRecord[] = [];
    const walk = (items: HierarchyInput[], parentId: string | null, depth: number, path: string) => {
      if (depth > this.limits.maxHierarchyDepth)
        throw badRequest(`the hierarchy is deeper than ${this.limits.maxHierarchyDepth} levels at ${path}`);
      const names = new Set<string>();
      items.forEach((item, index) => {
        const n = item.Node;
        const where = `${path}[${index}]`;
        const name = this.#name(n.Name, `${where}.Node.Name`);
        if (names.has(name))
          throw badRequest(`${where}.Node.Name ${JSON.stringify(name)} appears twice under one parent`);
        names.add(name);
        const isFolder = n.IsFolder ?? !n.AttributeID;
        let attributeType: string | null = n.AttributeType ?? null;
        if (isFolder && n.AttributeID) throw badRequest(`${where}: a folder has no AttributeID`);
        if (!isFolder) {
          if (!n.AttributeID) throw badRequest(`${where}: a node that is not a folder needs an AttributeID`);
          const attr = this.attributeOf(modelId, n.AttributeID);
          if (!attr)
            throw badRequest(
              `${where}.Node.AttributeID ${n.AttributeID} is no attribute or parameter of model ${modelId}`,
            );
          if (attributeType !== null && attributeType !== attr.kind)
            throw badRequest(
              `${where}.Node.AttributeType is ${JSON.stringify(attributeType)} but ${n.AttributeID} is a ${attr.kind} attribute`,
            );
          attributeType = attr.kind;
          if (item.Childs && item.Childs.length > 0)
            throw badRequest(`${where}: an attribute node has no children`);
        }
        const rec: HierarchyNodeRecord = {
          id: uuidv7(),
          modelId,
          parentId,
          position: n.Position ?? index,
          name,
          isFolder,
          attributeId: isFolder ? null : n.AttributeID!,
          attributeType,
          nodeType: n.NodeType ?? (isFolder ? 'folder' : 'attribute'),
        };
        created.push(rec);
        if (created.length > this.limits.maxHierarchyNodes)
          throw badRequest(`the hierarchy has more than ${this.limits.maxHierarchyNodes} nodes`);
        if (item.Childs) walk(item.Childs, rec.id, depth + 1, `${where}.Childs`);
      });
    };
    walk(input, null, 1, 'input');
    const old = [...this.nodes.values()].filter((n) => n.modelId === modelId).map((n) => n.id);
    await this.#repo.batch([
      { op: 'remove', table: 'node', ids: old },
      ...created.map((record) => ({ op: 'insert' as const, table: 'node' as const, record })),
    ]);
    for (const id of old) this.nodes.delete(id);
    for (const n of created) this.nodes.set(n.id, n);
    this.#changed('hierarchy', modelId);
    return this.hierarchy(modelId);
  }

  hierarchy(modelId: string): HierarchyTree[] {
    this.model(modelId);
    const byParent = new Map<string | null, HierarchyNodeRecord[]>();
    for (const n of this.nodes.values()) {
      if (n.modelId !== modelId) continue;
      const list = byParent.get(n.parentId) ?? [];
      list.push(n);
      byParent.set(n.parentId, list);
    }
    const build = (parent: string | null): HierarchyTree[] =>
      (byParent.get(parent) ?? [])
        .sort((a, b) => a.position - b.position || a.name.localeCompare(b.name))
        .map((node) => ({ node, children: build(node.id) }));
    return build(null);
  }

  node(id: string): HierarchyNodeRecord {
    const n = this.nodes.get(id);
    if (!n) throw notFound(`hierarchy node ${id} does not exist`);
    return n;
  }

  async updateNode(input: {
    ID: string;
    Name?: Opt<string>;
    Position?: Opt<number>;
  }): Promise<HierarchyNodeRecord> {
    const n: HierarchyNodeRecord = { ...this.node(input.ID) };
    if (input.Name != null) {
      n.name = this.#name(input.Name, 'Name');
      for (const o of this.nodes.values())
        if (o.modelId === n.modelId && o.parentId === n.parentId && o.name === n.name && o.id !== n.id)
          throw conflict(`a sibling node is already named ${JSON.stringify(n.name)}`);
    }
    if (input.Position != null) n.position = input.Position;
    await this.#repo.update('node', n);
    this.nodes.set(n.id, n);
    this.#changed('hierarchy', n.modelId);
    return n;
  }

  async deleteNode(id: string): Promise<boolean> {
    const n = this.node(id);
    const out = new Set([id]);
    let grew = true;
    while (grew) {
      grew = false;
      for (const o of this.nodes.values())
        if (o.parentId && out.has(o.parentId) && !out.has(o.id)) {
          out.add(o.id);
          grew = true;
        }
    }
    await this.#repo.remove('node', [...out]);
    for (const x of out) this.nodes.delete(x);
    this.#changed('hierarchy', n.modelId);
    return true;
  }

  // --- asset placements

  /** Replaces the placements of every instance named in `items`; answers their placements. */
  async setInstanceAssetHierarchy(items: PlacementInput[]): Promise<PlacementRecord[]> {
    const byInstance = new Map<string, PlacementInput[]>();
    items.forEach((item, index) => {
      this.instance(item.InstanceID);
      const path = item.Path.trim().replace(/^\/+|\/+$/g, '');
      if (path === '' || path.split('/').some((p) => p.trim() === ''))
        throw badRequest(`Items[${index}].Path must be a path of non-empty segments separated by /`);
      if (path.length > this.limits.maxNameLength * 4)
        throw badRequest(`Items[${index}].Path is longer than ${this.limits.maxNameLength * 4} characters`);
      if (item.Metadata !== undefined && item.Metadata !== null) {
        if (typeof item.Metadata !== 'object' || Array.isArray(item.Metadata))
          throw badRequest(`Items[${index}].Metadata must be a JSON object`);
        if (Buffer.byteLength(JSON.stringify(item.Metadata)) > this.limits.maxValueBytes)
          throw badRequest(`Items[${index}].Metadata is larger than ${this.limits.maxValueBytes} bytes`);
      }
      const list = byInstance.get(item.InstanceID) ?? [];
      list.push({ ...item, Path: path });
      byInstance.set(item.InstanceID, list);
    });
    const removed: string[] = [];
    const added: PlacementRecord[] = [];
    for (const [instanceId, list] of byInstance) {
      if (list.length > this.limits.maxPlacementsPerInstance)
        throw badRequest(
          `instance ${instanceId} has more than ${this.limits.maxPlacementsPerInstance} placements`,
        );
      for (const p of this.placements.values()) if (p.instanceId === instanceId) removed.push(p.id);
      for (const p of list)
        added.push({ id: uuidv7(), instanceId, path: p.Path, metadata: p.Metadata ?? null });
    }
    await this.#repo.batch([
      { op: 'remove', table: 'placement', ids: removed },
      ...added.map((record) => ({ op: 'insert' as const, table: 'placement' as const, record })),
    ]);
    for (const id of removed) this.placements.delete(id);
    for (const p of added) this.placements.set(p.id, p);
    for (const id of byInstance.keys()) this.#changed('placement', id);
    return added;
  }

  placementsOf(instanceId?: Opt<string>): PlacementRecord[] {
    const all = [...this.placements.values()];
    return instanceId ? all.filter((p) => p.instanceId === instanceId) : all;
  }

  // --- paging

  #page<T extends { id: string; createdAt: number }>(
    all: T[],
    input: Opt<NamedListRequest | OwnerListRequest>,
    fields: Record<string, (r: T) => string>,
  ): Page<T> {
    const limit = input?.Limit ?? DEFAULT_LIMIT;
    const offset = input?.Offset ?? 0;
    if (!Number.isInteger(limit) || limit < 1 || limit > this.limits.maxLimit)
      throw badRequest(`Limit must be from 1 to ${this.limits.maxLimit}, got ${limit}`);
    if (!Number.isInteger(offset) || offset < 0) throw badRequest(`Offset must be 0 or more, got ${offset}`);
    const named = input as Opt<NamedListRequest>;
    let items = all;
    for (const [field, cond] of Object.entries(named?.Filter ?? {})) {
      if (!cond) continue;
      const get = fields[field];
      if (!get)
        throw badRequest(
          `Filter.${field} is not a filterable field; fields: ${Object.keys(fields).join(', ')}`,
        );
      items = items.filter((r) => matches(get(r), cond, field));
    }
    const sorts = named?.Sort ? (Array.isArray(named.Sort) ? named.Sort : [named.Sort]) : [];
    const keys = sorts.map((s: { Field: string; Order?: Opt<string> }) => {
      const get = s.Field === 'CreatedAt' ? (r: T) => r.createdAt : fields[s.Field];
      if (!get)
        throw badRequest(
          `Sort.Field ${JSON.stringify(s.Field)} is not sortable; fields: ${[...Object.keys(fields), 'CreatedAt'].join(', ')}`,
        );
      return { get, dir: s.Order === 'DESC' ? -1 : 1 };
    });
    items = [...items].sort((a, b) => {
      for (const k of keys) {
        const x = k.get(a);
        const y = k.get(b);
        if (x < y) return -k.dir;
        if (x > y) return k.dir;
      }
      return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
    });
    return { Items: items.slice(offset, offset + limit), Total: items.length };
  }
}

function matches(value: string, cond: Record<string, unknown>, field: string): boolean {
  for (const [op, arg] of Object.entries(cond)) {
    if (arg === null || arg === undefined) continue;
    const v = value.toLowerCase();
    switch (op) {
      case 'Eq':
        if (value !== arg) return false;
        break;
      case 'Ne':
        if (value === arg) return false;
        break;
      case 'Contains':
        if (!v.includes(String(arg).toLowerCase())) return false;
        break;
      case 'StartsWith':
        if (!v.startsWith(String(arg).toLowerCase())) return false;
        break;
      case 'In':
        if (!(arg as string[]).includes(value)) return false;
        break;
      default:
        throw badRequest(`Filter.${field}.${op} is not supported`);
    }
  }
  return true;
}
