/**
 * The twins' domain rules: models, instances, static and dynamic attributes, parameters,
 * transformations, hierarchies and asset placements. No GraphQL here: the resolvers translate.
 * The whole configuration is held in memory (bounded by `TwinsLimits`) and written through to the
 * repository; each committed change is told to the listeners (the runtime). The lookups, lists and
 * checks are `TwinsStore`'s (store.ts), the requests and limits are in requests.ts.
 */
import { badRequest, conflict } from '../../kernel/errors.js';
import { uuidv7 } from '../../kernel/ids.js';
import type { TwinsRepository } from './repository.js';
import {
  DEFAULT_STALE_AFTER_MS,
  DEFAULT_TWINS_LIMITS,
  defaultTopic,
  type CreateDynamicAttributeRequest,
  type CreateInstanceRequest,
  type CreateKeyValueRequest,
  type CreateModelRequest,
  type CreateTransformationRequest,
  type HierarchyInput,
  type HierarchyTree,
  type Opt,
  type PlacementInput,
  type TwinsLimits,
  type UpdateDynamicAttributeRequest,
  type UpdateInstanceRequest,
  type UpdateKeyValueRequest,
  type UpdateModelRequest,
  type UpdateTransformationRequest,
} from './requests.js';
import { TwinsStore } from './store.js';
import { compileTransformation } from './transform.js';
import type {
  DynamicAttributeRecord,
  HierarchyNodeRecord,
  InstanceRecord,
  KeyValueRecord,
  ModelRecord,
  PlacementRecord,
  TransformationRecord,
  TwinsChange,
} from './types.js';

export * from './requests.js';

export class TwinsService extends TwinsStore {
  readonly #repo: TwinsRepository;
  readonly #listeners = new Set<(change: TwinsChange) => void>();

  private constructor(repo: TwinsRepository, limits: TwinsLimits) {
    super(limits);
    this.#repo = repo;
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

  // --- models

  async createModel(input: CreateModelRequest): Promise<ModelRecord> {
    if (this.models.size >= this.limits.maxModels)
      throw badRequest(`there are already ${this.limits.maxModels} models, the most allowed`);
    const name = this.checkName(input.Name, 'Name');
    this.uniqueModelName(name);
    const now = Date.now();
    const m: ModelRecord = {
      id: uuidv7(now),
      name,
      assets: this.checkName(input.Assets, 'Assets'),
      description: input.Description ?? '',
      publishOnChange: input.PublishOnChange ?? true,
      publishIntervalMs: this.checkInterval(input.PublishIntervalMs ?? 0),
      staleAfterMs: this.checkNonNegative(
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

  async updateModel(input: UpdateModelRequest): Promise<ModelRecord> {
    const old = this.model(input.ID);
    const m: ModelRecord = { ...old, updatedAt: Date.now() };
    if (input.Name != null) {
      m.name = this.checkName(input.Name, 'Name');
      this.uniqueModelName(m.name, m.id);
    }
    if (input.Assets != null) m.assets = this.checkName(input.Assets, 'Assets');
    if (input.Description != null) m.description = input.Description;
    if (input.PublishOnChange != null) m.publishOnChange = input.PublishOnChange;
    if (input.PublishIntervalMs != null) m.publishIntervalMs = this.checkInterval(input.PublishIntervalMs);
    if (input.StaleAfterMs != null)
      m.staleAfterMs = this.checkNonNegative(input.StaleAfterMs, 'StaleAfterMs', 86_400_000);
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

  // --- instances

  async createInstance(input: CreateInstanceRequest): Promise<InstanceRecord> {
    const model = this.model(input.ModelID);
    if (this.instances.size >= this.limits.maxInstances)
      throw badRequest(`there are already ${this.limits.maxInstances} instances, the most allowed`);
    const name = this.checkName(input.Name, 'Name');
    this.uniqueInstanceName(model.id, name);
    const now = Date.now();
    const i: InstanceRecord = {
      id: uuidv7(now),
      modelId: model.id,
      name,
      description: input.Description ?? '',
      source: input.Source ?? 'local',
      topic: this.instanceTopic(input.Topic ?? defaultTopic(model.name, name)),
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
      i.name = this.checkName(input.Name, 'Name');
      this.uniqueInstanceName(i.modelId, i.name, i.id);
    }
    if (input.Description != null) i.description = input.Description;
    if (input.Source != null) i.source = input.Source;
    if (input.Topic != null) i.topic = this.instanceTopic(input.Topic, i.id);
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

  // --- static attributes and parameters

  async createKeyValue(kind: 'static' | 'parameter', input: CreateKeyValueRequest): Promise<KeyValueRecord> {
    const { model, instanceId } = this.ownerOf(input.ModelID, input.InstanceID);
    this.checkOwnerRoom(model.id, instanceId);
    const key = this.checkName(input.Key, 'Key');
    this.uniqueKey(kind, model.id, instanceId, key);
    const now = Date.now();
    const r: KeyValueRecord = {
      id: uuidv7(now),
      modelId: model.id,
      instanceId,
      key,
      value: this.checkValue(input.Value, 'Value'),
      createdAt: now,
      updatedAt: now,
    };
    await this.#repo.insert(kind, r);
    this.kv(kind).set(r.id, r);
    this.#changed(kind, r.id);
    return r;
  }

  async updateKeyValue(kind: 'static' | 'parameter', input: UpdateKeyValueRequest): Promise<KeyValueRecord> {
    const r: KeyValueRecord = { ...this.keyValue(kind, input.ID), updatedAt: Date.now() };
    if (input.Key != null) {
      r.key = this.checkName(input.Key, 'Key');
      this.uniqueKey(kind, r.modelId, r.instanceId, r.key, r.id);
    }
    if (input.Value != null) r.value = this.checkValue(input.Value, 'Value');
    await this.#repo.update(kind, r);
    this.kv(kind).set(r.id, r);
    this.#changed(kind, r.id);
    return r;
  }

  async deleteKeyValue(kind: 'static' | 'parameter', id: string): Promise<boolean> {
    this.keyValue(kind, id);
    const nodes = this.nodesShowing(id);
    await this.#repo.batch([
      { op: 'remove', table: 'node', ids: nodes },
      { op: 'remove', table: kind, ids: [id] },
    ]);
    for (const n of nodes) this.nodes.delete(n);
    this.kv(kind).delete(id);
    this.#changed(kind, id);
    return true;
  }

  // --- dynamic attributes

  async createDynamic(input: CreateDynamicAttributeRequest): Promise<DynamicAttributeRecord> {
    const { model, instanceId } = this.ownerOf(input.ModelID, input.InstanceID);
    this.checkOwnerRoom(model.id, instanceId);
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
      name: this.checkName(input.Name, 'Name'),
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
    this.checkDynamic(r);
    this.uniqueDynamicName(r);
    await this.#repo.insert('dynamic', r);
    this.dynamics.set(r.id, r);
    this.#changed('dynamic', r.id);
    return r;
  }

  async updateDynamic(input: UpdateDynamicAttributeRequest): Promise<DynamicAttributeRecord> {
    const r: DynamicAttributeRecord = { ...this.dynamic(input.ID), updatedAt: Date.now() };
    if (input.Name != null) r.name = this.checkName(input.Name, 'Name');
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
    this.checkDynamic(r);
    this.uniqueDynamicName(r);
    await this.#repo.update('dynamic', r);
    this.dynamics.set(r.id, r);
    this.#changed('dynamic', r.id);
    return r;
  }

  async deleteDynamic(id: string): Promise<boolean> {
    this.dynamic(id);
    const nodes = this.nodesShowing(id);
    await this.#repo.batch([
      { op: 'remove', table: 'node', ids: nodes },
      { op: 'remove', table: 'dynamic', ids: [id] },
    ]);
    for (const n of nodes) this.nodes.delete(n);
    this.dynamics.delete(id);
    this.#changed('dynamic', id);
    return true;
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
      name: this.checkName(input.Name, 'Name'),
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
    if (input.Name != null) t.name = this.checkName(input.Name, 'Name');
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

  // --- hierarchy

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
        const name = this.checkName(n.Name, `${where}.Node.Name`);
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

  async updateNode(input: {
    ID: string;
    Name?: Opt<string>;
    Position?: Opt<number>;
  }): Promise<HierarchyNodeRecord> {
    const n: HierarchyNodeRecord = { ...this.node(input.ID) };
    if (input.Name != null) {
      n.name = this.checkName(input.Name, 'Name');
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
}
