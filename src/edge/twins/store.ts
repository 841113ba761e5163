/**
 * The twins' configuration as held in memory (bounded by `TwinsLimits`): its lookups, its lists and
 * the checks of its rules. `TwinsService` extends it with the changes, written through to the
 * repository and told to the listeners.
 */
import { badRequest, conflict, notFound } from '../../kernel/errors.js';
import {
  checkSingleMqttTopic,
  checkSingleSubject,
  PLACEHOLDER,
  type HierarchyTree,
  type NamedListRequest,
  type Opt,
  type OwnerListRequest,
  type Page,
  type TwinsLimits,
} from './requests.js';
import type {
  DynamicAttributeRecord,
  HierarchyNodeRecord,
  InstanceRecord,
  KeyValueRecord,
  ModelRecord,
  NodeAttributeKind,
  PlacementRecord,
  TransformationRecord,
} from './types.js';

const DEFAULT_LIMIT = 50;

export class TwinsStore {
  readonly models = new Map<string, ModelRecord>();
  readonly instances = new Map<string, InstanceRecord>();
  readonly statics = new Map<string, KeyValueRecord>();
  readonly parameters = new Map<string, KeyValueRecord>();
  readonly dynamics = new Map<string, DynamicAttributeRecord>();
  readonly transformations = new Map<string, TransformationRecord>();
  readonly nodes = new Map<string, HierarchyNodeRecord>();
  readonly placements = new Map<string, PlacementRecord>();
  readonly limits: TwinsLimits;

  protected constructor(limits: TwinsLimits) {
    this.limits = limits;
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

  protected checkName(value: string, what: string): string {
    const v = value.trim();
    if (v === '') throw badRequest(`${what} must not be empty`);
    if (v === '__proto__') throw badRequest(`${what} must not be __proto__`);
    if (v.length > this.limits.maxNameLength)
      throw badRequest(`${what} is longer than ${this.limits.maxNameLength} characters`);
    return v;
  }

  protected checkValue(value: string, what: string): string {
    if (Buffer.byteLength(value) > this.limits.maxValueBytes)
      throw badRequest(`${what} is larger than ${this.limits.maxValueBytes} bytes`);
    return value;
  }

  protected checkNonNegative(value: number, what: string, max: number): number {
    if (!Number.isInteger(value) || value < 0 || value > max)
      throw badRequest(`${what} must be an integer from 0 to ${max}, got ${value}`);
    return value;
  }

  /** The owner of an attribute or parameter: the model, or one of its instances. */
  protected ownerOf(
    modelId: string,
    instanceId: Opt<string>,
  ): { model: ModelRecord; instanceId: string | null } {
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

  protected checkOwnerRoom(modelId: string, instanceId: string | null): void {
    if (this.#ownedCount(modelId, instanceId) >= this.limits.maxAttributesPerOwner)
      throw badRequest(
        `the ${instanceId ? 'instance' : 'model'} already has ${this.limits.maxAttributesPerOwner} attributes and parameters, the most allowed`,
      );
  }

  protected checkInterval(ms: number): number {
    this.checkNonNegative(ms, 'PublishIntervalMs', 86_400_000);
    if (ms !== 0 && ms < 100)
      throw badRequest(`PublishIntervalMs must be 0 (off) or at least 100, got ${ms}`);
    return ms;
  }

  protected uniqueModelName(name: string, except?: string): void {
    for (const m of this.models.values())
      if (m.name === name && m.id !== except) throw conflict(`a model named ${JSON.stringify(name)} exists`);
  }

  listModels(input: Opt<NamedListRequest>): Page<ModelRecord> {
    return this.#page([...this.models.values()], input, { Name: (m) => m.name, Assets: (m) => m.assets });
  }

  protected instanceTopic(topic: string, except?: string): string {
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

  protected uniqueInstanceName(modelId: string, name: string, except?: string): void {
    for (const i of this.instances.values())
      if (i.modelId === modelId && i.name === name && i.id !== except)
        throw conflict(`model ${modelId} already has an instance named ${JSON.stringify(name)}`);
  }

  listInstances(input: Opt<NamedListRequest>): Page<InstanceRecord> {
    let all = [...this.instances.values()];
    if (input?.ModelID) all = all.filter((i) => i.modelId === input.ModelID);
    return this.#page(all, input, { Name: (i) => i.name, Topic: (i) => i.topic });
  }

  protected kv(kind: 'static' | 'parameter') {
    return kind === 'static' ? this.statics : this.parameters;
  }

  protected uniqueKey(
    kind: 'static' | 'parameter',
    modelId: string,
    instanceId: string | null,
    key: string,
    except?: string,
  ) {
    for (const r of this.kv(kind).values())
      if (r.modelId === modelId && r.instanceId === instanceId && r.key === key && r.id !== except)
        throw conflict(
          `the ${instanceId ? 'instance' : 'model'} already has a ${kind === 'static' ? 'static attribute' : 'parameter'} ${JSON.stringify(key)}`,
        );
  }

  keyValue(kind: 'static' | 'parameter', id: string): KeyValueRecord {
    const r = this.kv(kind).get(id);
    if (!r) throw notFound(`${kind === 'static' ? 'static attribute' : 'parameter'} ${id} does not exist`);
    return r;
  }

  listKeyValues(kind: 'static' | 'parameter', input: Opt<OwnerListRequest>): Page<KeyValueRecord> {
    return this.#page(this.#owned(this.kv(kind), input), input, {});
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

  dynamic(id: string): DynamicAttributeRecord {
    const r = this.dynamics.get(id);
    if (!r) throw notFound(`dynamic attribute ${id} does not exist`);
    return r;
  }

  /** The rules of a dynamic attribute, on create and on update (the merged record). */
  protected checkDynamic(r: DynamicAttributeRecord): void {
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

  protected uniqueDynamicName(r: DynamicAttributeRecord): void {
    for (const o of this.dynamics.values())
      if (o.modelId === r.modelId && o.instanceId === r.instanceId && o.name === r.name && o.id !== r.id)
        throw conflict(
          `the ${r.instanceId ? 'instance' : 'model'} already has a dynamic attribute ${JSON.stringify(r.name)}`,
        );
  }

  listDynamics(input: Opt<OwnerListRequest>): Page<DynamicAttributeRecord> {
    return this.#page(this.#owned(this.dynamics, input), input, {});
  }

  listTransformations(input: Opt<NamedListRequest>): Page<TransformationRecord> {
    return this.#page([...this.transformations.values()], input, {});
  }

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

  protected nodesShowing(attributeId: string): string[] {
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
