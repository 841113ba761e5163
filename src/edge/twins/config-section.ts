/**
 * The twins' part of a configuration template, keyed by name (IDs differ from one edge to the
 * next):
 *
 *     { "transformations": [ { "Name", "Expression", "Description"? } ],
 *       "models": [ { "Name", "Assets", "Description"?, "PublishOnChange"?, "PublishIntervalMs"?,
 *                     "StaleAfterMs"?, "StaticAttributes"?: [ { "Key", "Value" } ],
 *                     "Parameters"?: [ { "Key", "Value" } ],
 *                     "DynamicAttributes"?: [ { "Name", "Description"?, "Type"?, "AttributeType"?,
 *                                               "Topic"?, "Transformation"?: name,
 *                                               "NestedModel"?: name,
 *                                               "NestedInstance"?: { "Model", "Instance" } } ],
 *                     "Instances"?: [ { "Name", "Description"?, "Topic"?, "Source"?, "Enabled"?,
 *                                       "StaticAttributes"?, "Parameters"?,
 *                                       "DynamicAttributes"? (the instance's own) } ] } ] }
 *
 * Hierarchies and asset placements are not in the section: an apply keeps the nodes that show an
 * attribute it keeps, and removes those of what it removes (docs/digital-twins.md).
 *
 * `apply` writes through a `TwinsService` over the apply's transaction (`TwinsService.over` with
 * `TwinsRepository.inTransaction`): the rules (names, topics, limits, transformations that
 * compile, nested references) are those of the API, and nothing touches the live service until
 * the transaction committed; then the live service reads its tables again (`reload`) and the
 * runtime re-resolves every instance.
 */
import { AppError } from '../../kernel/errors.js';
import type {
  ApplyMode,
  ConfigSection,
  SectionApplyContext,
  SectionDiff,
  SectionIssue,
} from '../../kernel/service/config-section.js';
import {
  canonical,
  checkObject,
  diffByKey,
  issueOf,
  join,
  mergeByKey,
} from '../../kernel/service/section-shape.js';
import { TwinsRepository } from './repository.js';
import type { HierarchyInput, TwinsService } from './service.js';
import { compileTransformation } from './transform.js';
import type {
  AttributeType,
  DynamicAttributeRecord,
  DynamicAttributeType,
  InstanceRecord,
  InstanceSource,
  KeyValueRecord,
  HierarchyNodeRecord,
  ModelRecord,
  NodeAttributeKind,
  TransformationRecord,
} from './types.js';

export interface TwinsSectionKeyValue {
  Key: string;
  Value: string;
}

export interface TwinsSectionDynamic {
  Name: string;
  Description?: string;
  Type?: DynamicAttributeType;
  AttributeType?: AttributeType;
  Topic?: string;
  /** A transformation by name (`topic` attributes). */
  Transformation?: string | null;
  /** Every instance of a model, by name (`nestedModel` attributes). */
  NestedModel?: string | null;
  /** One instance, by its model's name and its name (`nestedModel` attributes). */
  NestedInstance?: { Model: string; Instance: string } | null;
}

export interface TwinsSectionInstance {
  Name: string;
  Description?: string;
  Topic?: string;
  Source?: InstanceSource;
  Enabled?: boolean;
  /** The instance's own (they replace the model's of the same key or name). */
  StaticAttributes?: TwinsSectionKeyValue[];
  Parameters?: TwinsSectionKeyValue[];
  DynamicAttributes?: TwinsSectionDynamic[];
}

/** A node of a model's hierarchy; an attribute node names a model attribute by kind and name. */
export interface TwinsSectionNode {
  Name: string;
  Position?: number;
  IsFolder?: boolean;
  NodeType?: string | null;
  /** `static`, `dynamic` or `parameter` (attribute nodes). */
  AttributeKind?: NodeAttributeKind | null;
  /** The model's static attribute or parameter `Key`, or dynamic attribute `Name`. */
  Attribute?: string | null;
  Children?: TwinsSectionNode[];
}

export interface TwinsSectionModel {
  Name: string;
  Assets: string;
  Description?: string;
  PublishOnChange?: boolean;
  PublishIntervalMs?: number;
  StaleAfterMs?: number;
  StaticAttributes?: TwinsSectionKeyValue[];
  Parameters?: TwinsSectionKeyValue[];
  DynamicAttributes?: TwinsSectionDynamic[];
  Instances?: TwinsSectionInstance[];
  /** The whole hierarchy (`SaveAllHierarchy`): given, it replaces the model's. */
  Hierarchy?: TwinsSectionNode[];
}

export interface TwinsSectionTransformation {
  Name: string;
  Expression: string;
  Description?: string;
}

export interface TwinsSection {
  transformations: TwinsSectionTransformation[];
  models: TwinsSectionModel[];
}

const TRANSFORMATION_FIELDS = { Name: 'string', Expression: 'string', 'Description?': 'string' } as const;
const KV_FIELDS = { Key: 'string', Value: 'string' } as const;
const DYNAMIC_FIELDS = {
  Name: 'string',
  'Description?': 'string',
  'Type?': 'string',
  'AttributeType?': 'string',
  'Topic?': 'string',
  'Transformation?': 'string',
  'NestedModel?': 'string',
  'NestedInstance?': 'object',
} as const;
const LISTS = {
  'StaticAttributes?': 'array',
  'Parameters?': 'array',
  'DynamicAttributes?': 'array',
} as const;
const INSTANCE_FIELDS = {
  Name: 'string',
  'Description?': 'string',
  'Topic?': 'string',
  'Source?': 'string',
  'Enabled?': 'boolean',
  ...LISTS,
} as const;
const MODEL_FIELDS = {
  Name: 'string',
  Assets: 'string',
  'Description?': 'string',
  'PublishOnChange?': 'boolean',
  'PublishIntervalMs?': 'integer',
  'StaleAfterMs?': 'integer',
  ...LISTS,
  'Instances?': 'array',
  'Hierarchy?': 'array',
} as const;
const NODE_FIELDS = {
  Name: 'string',
  'Position?': 'integer',
  'IsFolder?': 'boolean',
  'NodeType?': 'string',
  'AttributeKind?': 'string',
  'Attribute?': 'string',
  'Children?': 'array',
} as const;
const NODE_KINDS: readonly string[] = ['static', 'dynamic', 'parameter'];
const TYPES: readonly string[] = ['topic', 'nestedModel'];
const ATTRIBUTE_TYPES: readonly string[] = ['Regular', 'UNS', 'AssetHierarchy'];
const SOURCES: readonly string[] = ['local', 'external'];

const byText =
  <T>(key: (x: T) => string) =>
  (a: T, b: T) =>
    key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0;

/** `items` grouped by `key` (one pass: the section is as large as the twins' limits allow). */
function groupBy<T>(items: Iterable<T>, key: (x: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const x of items) {
    const k = key(x);
    const list = out.get(k);
    if (list) list.push(x);
    else out.set(k, [x]);
  }
  return out;
}

const ownerKey = (modelId: string, instanceId: string | null) => `${modelId}/${instanceId ?? ''}`;
const byOwner = <T extends { modelId: string; instanceId: string | null }>(map: Map<string, T>) =>
  groupBy(map.values(), (r) => ownerKey(r.modelId, r.instanceId));
const byName = <T>(items: readonly T[] | undefined, key: (x: T) => string) =>
  new Map((items ?? []).map((x) => [key(x), x]));

/** The section of the configuration held by `s` (the live service, or one over a transaction). */
export function exportTwins(s: TwinsService): TwinsSection {
  const tName = (id: string | null) => (id ? (s.transformations.get(id)?.name ?? null) : null);
  const statics = byOwner(s.statics);
  const parameters = byOwner(s.parameters);
  const dynamics = byOwner(s.dynamics);
  const instances = groupBy(s.instances.values(), (i) => i.modelId);
  const nodes = groupBy(s.nodes.values(), (n) => n.modelId);
  const kv = (map: Map<string, KeyValueRecord[]>, modelId: string, inst: string | null) =>
    [...(map.get(ownerKey(modelId, inst)) ?? [])]
      .sort(byText((r) => r.key))
      .map((r) => ({ Key: r.key, Value: r.value }));
  const dynamic = (d: DynamicAttributeRecord): TwinsSectionDynamic => {
    const out: TwinsSectionDynamic = {
      Name: d.name,
      Description: d.description,
      Type: d.type,
      AttributeType: d.attributeType,
      Topic: d.topic,
    };
    if (d.type === 'topic') out.Transformation = tName(d.transformationId);
    else {
      out.NestedModel = d.nestedModelId ? (s.models.get(d.nestedModelId)?.name ?? null) : null;
      const inst = d.nestedInstanceId ? s.instances.get(d.nestedInstanceId) : undefined;
      const of = inst ? s.models.get(inst.modelId) : undefined;
      out.NestedInstance = inst && of ? { Model: of.name, Instance: inst.name } : null;
    }
    return out;
  };
  const dyn = (modelId: string, inst: string | null) =>
    [...(dynamics.get(ownerKey(modelId, inst)) ?? [])].sort(byText((r) => r.name)).map(dynamic);
  return {
    transformations: [...s.transformations.values()]
      .sort(byText((t) => t.name))
      .map((t) => ({ Name: t.name, Expression: t.expression, Description: t.description })),
    models: [...s.models.values()].sort(byText((m) => m.name)).map((m) => ({
      Name: m.name,
      Assets: m.assets,
      Description: m.description,
      PublishOnChange: m.publishOnChange,
      PublishIntervalMs: m.publishIntervalMs,
      StaleAfterMs: m.staleAfterMs,
      StaticAttributes: kv(statics, m.id, null),
      Parameters: kv(parameters, m.id, null),
      DynamicAttributes: dyn(m.id, null),
      Instances: [...(instances.get(m.id) ?? [])].sort(byText((i) => i.name)).map((i) => ({
        Name: i.name,
        Description: i.description,
        Topic: i.topic,
        Source: i.source,
        Enabled: i.enabled,
        StaticAttributes: kv(statics, m.id, i.id),
        Parameters: kv(parameters, m.id, i.id),
        DynamicAttributes: dyn(m.id, i.id),
      })),
      Hierarchy: hierarchyOf(s, nodes.get(m.id) ?? []),
    })),
  };
}

/** A model's hierarchy (its nodes) as the section writes it: attributes by kind and name. */
function hierarchyOf(s: TwinsService, nodes: HierarchyNodeRecord[]): TwinsSectionNode[] {
  const children = groupBy(nodes, (n) => n.parentId ?? '');
  const build = (parent: string): TwinsSectionNode[] =>
    [...(children.get(parent) ?? [])]
      .sort((a, b) => a.position - b.position || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((n) => {
        const out: TwinsSectionNode = {
          Name: n.name,
          Position: n.position,
          IsFolder: n.isFolder,
          NodeType: n.nodeType,
        };
        if (!n.isFolder && n.attributeId) {
          const a = s.attributeOf(n.modelId, n.attributeId);
          out.AttributeKind = a?.kind ?? null;
          out.Attribute = a ? ('key' in a.record ? a.record.key : a.record.name) : null;
        }
        out.Children = build(n.id);
        return out;
      });
  return build('');
}

// --- comparing and merging (lists of objects are keyed by `Name`, or `Key`)

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const itemKey = (v: unknown): string | undefined =>
  isObject(v) ? ((v.Name ?? v.Key) as string | undefined) : undefined;

/**
 * A list the template leaves out is an empty list (what `use` makes of it). A hierarchy left out
 * is left alone, but with `use`.
 */
function normalize(doc: TwinsSection, use: boolean): TwinsSection {
  const lists = <T extends object>(o: T, keys: string[]): T => {
    const out: Record<string, unknown> = { ...(o as Record<string, unknown>) };
    for (const k of keys) out[k] ??= [];
    return out as T;
  };
  const own = ['StaticAttributes', 'Parameters', 'DynamicAttributes'];
  return {
    transformations: doc.transformations,
    models: doc.models.map((m) => {
      const model = lists(m, [...own, 'Instances', ...(use ? ['Hierarchy'] : [])]);
      return { ...model, Instances: model.Instances!.map((i) => lists(i, own)) };
    }),
  };
}

/**
 * Whether `was` already is `now` as far as `now` says: fields `now` leaves out are kept by an
 * apply; keyed lists are compared item by item, and with `exact` (mode `use`) an item `now` does
 * not have is a change (it would be removed).
 */
function covers(was: unknown, now: unknown, exact: boolean): boolean {
  if (now === undefined) return true;
  if (Array.isArray(now)) {
    if (!Array.isArray(was)) return now.length === 0;
    if (exact && was.length !== now.length) return false;
    const cur = new Map(was.map((x) => [itemKey(x), x]));
    return now.every((n) => cur.has(itemKey(n)) && covers(cur.get(itemKey(n)), n, exact));
  }
  if (isObject(now)) {
    if (!isObject(was)) return false;
    return Object.entries(now).every(([k, v]) => covers(was[k], v, exact));
  }
  return canonical(was) === canonical(now);
}

/** Whether an apply of `now` changes a field of `was` (lists excluded: their items are theirs). */
const fieldsDiffer = (was: object | undefined, now: object): boolean =>
  !was ||
  Object.entries(now).some(
    ([k, v]) =>
      !Array.isArray(v) && v !== undefined && canonical((was as Record<string, unknown>)[k]) !== canonical(v),
  );

/** `current` with `template` over it: fields of the template win, keyed lists are united. */
function unite(current: unknown, template: unknown): unknown {
  if (template === undefined) return current;
  if (Array.isArray(template) && Array.isArray(current)) {
    const byKey = new Map(current.map((c) => [itemKey(c), c]));
    for (const t of template) byKey.set(itemKey(t), unite(byKey.get(itemKey(t)), t));
    return [...byKey.values()];
  }
  if (isObject(template) && isObject(current)) {
    const out: Record<string, unknown> = { ...current };
    for (const [k, v] of Object.entries(template)) out[k] = unite(current[k], v);
    return out;
  }
  return template;
}

// --- validation

function checkNamed(issues: SectionIssue[], path: string, items: unknown[], field: 'Name' | 'Key'): void {
  const seen = new Map<string, number>();
  items.forEach((x, i) => {
    const name = isObject(x) ? x[field] : undefined;
    if (typeof name !== 'string') return;
    if (name.trim() === '') issues.push({ path: join(join(path, i), field), message: 'must not be empty' });
    const dup = seen.get(name);
    if (dup !== undefined)
      issues.push({
        path: join(join(path, i), field),
        message: `${JSON.stringify(name)} is given twice (${join(path, dup)})`,
      });
    seen.set(name, i);
  });
}

export class TwinsConfigSection implements ConfigSection<TwinsSection> {
  readonly name = 'twins';
  readonly #service: TwinsService;

  constructor(service: TwinsService) {
    this.#service = service;
  }

  export(): Promise<TwinsSection> {
    return Promise.resolve(exportTwins(this.#service));
  }

  validate(doc: unknown): SectionIssue[] {
    const issues: SectionIssue[] = [];
    if (!checkObject(issues, '', doc, { transformations: 'array', models: 'array' })) return issues;
    const d = doc as TwinsSection;
    const s = this.#service;
    const transformations = new Set([...s.transformations.values()].map((t) => t.name));
    const models = new Set([...s.models.values()].map((m) => m.name));
    d.transformations.forEach((t, i) => {
      const path = join('transformations', i);
      if (!checkObject(issues, path, t, TRANSFORMATION_FIELDS)) return;
      transformations.add(t.Name);
      issueOf(issues, join(path, 'Expression'), () => compileTransformation(t.Expression));
    });
    checkNamed(issues, 'transformations', d.transformations, 'Name');
    for (const m of d.models) if (isObject(m) && typeof m.Name === 'string') models.add(m.Name);
    const oneOf = (path: string, v: unknown, allowed: readonly string[]) => {
      if (typeof v === 'string' && !allowed.includes(v))
        issues.push({ path, message: `must be one of ${allowed.join(', ')}` });
    };
    const owned = (path: string, o: object) => {
      for (const list of ['StaticAttributes', 'Parameters'] as const) {
        const items = ((o as Record<string, unknown>)[list] ?? []) as unknown[];
        items.forEach((x, i) => checkObject(issues, join(join(path, list), i), x, KV_FIELDS));
        checkNamed(issues, join(path, list), items, 'Key');
      }
      const dyns = ((o as Record<string, unknown>).DynamicAttributes ?? []) as unknown[];
      dyns.forEach((x, i) => {
        const p = join(join(path, 'DynamicAttributes'), i);
        if (
          !checkObject(issues, p, x, DYNAMIC_FIELDS, {
            nullable: ['Transformation', 'NestedModel', 'NestedInstance'],
          })
        )
          return;
        oneOf(join(p, 'Type'), x.Type, TYPES);
        oneOf(join(p, 'AttributeType'), x.AttributeType, ATTRIBUTE_TYPES);
        if (typeof x.Transformation === 'string' && !transformations.has(x.Transformation))
          issues.push({
            path: join(p, 'Transformation'),
            message: `no transformation ${JSON.stringify(x.Transformation)} in the template or on this edge`,
          });
        if (typeof x.NestedModel === 'string' && !models.has(x.NestedModel))
          issues.push({
            path: join(p, 'NestedModel'),
            message: `no model ${JSON.stringify(x.NestedModel)} in the template or on this edge`,
          });
        if (isObject(x.NestedInstance))
          checkObject(issues, join(p, 'NestedInstance'), x.NestedInstance, {
            Model: 'string',
            Instance: 'string',
          });
      });
      checkNamed(issues, join(path, 'DynamicAttributes'), dyns, 'Name');
    };
    d.models.forEach((m, i) => {
      const path = join('models', i);
      if (!checkObject(issues, path, m, MODEL_FIELDS)) return;
      if (m.Assets.trim() === '') issues.push({ path: join(path, 'Assets'), message: 'must not be empty' });
      owned(path, m);
      const instances = (m.Instances ?? []) as unknown[];
      instances.forEach((inst, j) => {
        const p = join(join(path, 'Instances'), j);
        if (!checkObject(issues, p, inst, INSTANCE_FIELDS)) return;
        oneOf(join(p, 'Source'), inst.Source, SOURCES);
        owned(p, inst);
      });
      checkNamed(issues, join(path, 'Instances'), instances, 'Name');
      const tree = (list: unknown[], p: string, depth: number): void => {
        if (depth > s.limits.maxHierarchyDepth) {
          issues.push({ path: p, message: `deeper than ${s.limits.maxHierarchyDepth} levels` });
          return;
        }
        list.forEach((n, k) => {
          const q = join(p, k);
          if (
            !checkObject(issues, q, n, NODE_FIELDS, { nullable: ['NodeType', 'AttributeKind', 'Attribute'] })
          )
            return;
          oneOf(join(q, 'AttributeKind'), n.AttributeKind, NODE_KINDS);
          if (n.Children) tree(n.Children as unknown[], join(q, 'Children'), depth + 1);
        });
        checkNamed(issues, p, list, 'Name');
      };
      if (m.Hierarchy) tree(m.Hierarchy as unknown[], join(path, 'Hierarchy'), 1);
    });
    checkNamed(issues, 'models', d.models, 'Name');
    return issues;
  }

  diff(current: TwinsSection, next: TwinsSection, mode: ApplyMode): SectionDiff {
    const target = normalize(
      mode === 'merge-apply' ? this.merge(current, next).merged : next,
      mode === 'use',
    );
    const exact = mode === 'use';
    const same = (was: object, now: object) => covers(was, now, exact);
    const t = diffByKey(current.transformations, target.transformations, (x) => x.Name, same, mode);
    const m = diffByKey(current.models, target.models, (x) => x.Name, same, mode);
    const out: SectionDiff = { added: [], changed: [], removed: [], restarts: [] };
    for (const k of ['added', 'changed', 'removed'] as const)
      out[k].push(...t[k].map((n) => `transformations.${n}`), ...m[k].map((n) => `models.${n}`));
    // No `restarts`: the runtime re-resolves the instances after the commit without a restart
    // (keeping their last values), and a merge-apply with restarts restarts the acquisition engine.
    return out;
  }

  merge(current: TwinsSection, template: TwinsSection): { merged: TwinsSection; overwrites: string[] } {
    const t = mergeByKey(current.transformations, template.transformations, (x) => x.Name);
    const byName = new Map(current.models.map((m) => [m.Name, m]));
    const overwrites = t.overwrites.map((n) => `transformations.${n}`);
    for (const m of template.models) {
      const was = byName.get(m.Name);
      const merged = (was ? unite(was, m) : m) as TwinsSectionModel;
      if (was && canonical(was) !== canonical(merged)) overwrites.push(`models.${m.Name}`);
      byName.set(m.Name, merged);
    }
    return { merged: { transformations: t.merged, models: [...byName.values()] }, overwrites };
  }

  async apply(next: TwinsSection, ctx: SectionApplyContext): Promise<void> {
    // A service over the apply's transaction: every read and write below goes through ctx.trx.
    const x = await this.#service.over(TwinsRepository.inTransaction(ctx.trx));
    const current = exportTwins(x);
    const target = normalize(
      ctx.mode === 'merge-apply' ? this.merge(current, next).merged : next,
      ctx.mode === 'use',
    );
    const use = ctx.mode === 'use';
    const attempt = async (item: string, fn: () => Promise<unknown>): Promise<boolean> => {
      try {
        await fn();
        return true;
      } catch (err) {
        const text = err instanceof Error ? err.message : String(err);
        const message = `section twins: ${item}: ${text}`;
        if (ctx.failFast)
          throw err instanceof AppError
            ? new AppError(err.status, err.code, message, { cause: err })
            : new Error(message, { cause: err });
        ctx.fail(`twins: ${item}`, message);
        return false;
      }
    };
    const total = target.transformations.length + target.models.length;
    let done = 0;
    const step = () => ctx.progress(++done, total);
    const curModels = new Map(current.models.map((m) => [m.Name, m]));
    const modelsByName = byName([...x.models.values()], (m) => m.name);

    // 1. use: models the template does not have go first (their topics become free).
    if (use) {
      const keep = new Set(target.models.map((m) => m.Name));
      for (const m of [...x.models.values()])
        if (!keep.has(m.name)) await attempt(`models "${m.name}" (removing)`, () => x.deleteModel(m.id));
    }

    // 2. transformations, by name
    const curT = new Map([...x.transformations.values()].map((t) => [t.name, t]));
    for (const [i, t] of target.transformations.entries()) {
      const was = curT.get(t.Name);
      await attempt(`transformations[${i}] (${t.Name})`, async () => {
        if (!was) await x.createTransformation(t);
        else if (was.expression !== t.Expression || (t.Description ?? was.description) !== was.description)
          await x.updateTransformation({ ID: was.id, Expression: t.Expression, Description: t.Description });
      });
      step();
    }

    // 3. models, then their instances (so that nested references by name resolve in 5)
    const models: Array<{ path: string; doc: TwinsSectionModel; record: ModelRecord }> = [];
    for (const [i, m] of target.models.entries()) {
      const path = `models[${i}]`;
      const was = modelsByName.get(m.Name);
      const cur = curModels.get(m.Name);
      let record = was;
      const fields = {
        Assets: m.Assets,
        Description: m.Description,
        PublishOnChange: m.PublishOnChange,
        PublishIntervalMs: m.PublishIntervalMs,
        StaleAfterMs: m.StaleAfterMs,
      };
      const ok = await attempt(`${path} (${m.Name})`, async () => {
        if (!was) record = await x.createModel({ Name: m.Name, ...fields });
        else if (fieldsDiffer(cur, fields)) record = await x.updateModel({ ID: was.id, ...fields });
      });
      if (ok && record) models.push({ path, doc: m, record });
    }
    const owners: Array<{
      path: string;
      doc: TwinsSectionModel | TwinsSectionInstance;
      cur: TwinsSectionModel | TwinsSectionInstance | undefined;
      model: ModelRecord;
      instance: InstanceRecord | null;
    }> = [];
    for (const { path, doc, record } of models) {
      const cur = curModels.get(doc.Name);
      owners.push({ path, doc, cur, model: record, instance: null });
      const instances = doc.Instances ?? [];
      const existing = byName(x.instancesOf(record.id), (i) => i.name);
      const curInstances = byName(cur?.Instances, (i) => i.Name);
      if (use) {
        const keep = new Set(instances.map((i) => i.Name));
        for (const i of existing.values())
          if (!keep.has(i.name))
            await attempt(`${path}.Instances "${i.name}" (removing)`, () => x.deleteInstance(i.id));
      }
      for (const [j, inst] of instances.entries()) {
        const p = `${path}.Instances[${j}]`;
        const was = existing.get(inst.Name);
        const curInst = curInstances.get(inst.Name);
        let rec = was;
        const fields = {
          Description: inst.Description,
          Topic: inst.Topic,
          Source: inst.Source,
          Enabled: inst.Enabled,
        };
        const ok = await attempt(`${p} (${inst.Name})`, async () => {
          if (!was) rec = await x.createInstance({ ModelID: record.id, Name: inst.Name, ...fields });
          else if (fieldsDiffer(curInst, fields)) rec = await x.updateInstance({ ID: was.id, ...fields });
        });
        if (ok && rec) owners.push({ path: p, doc: inst, cur: curInst, model: record, instance: rec });
      }
      step();
    }

    // 4. static attributes and parameters of every model and instance (the template names each key
    // once per owner: the indexes taken here are not made stale by what this step creates)
    const statics = byOwner(x.statics);
    const parameters = byOwner(x.parameters);
    for (const o of owners) {
      const instanceId = o.instance?.id ?? null;
      for (const [list, kind] of [
        ['StaticAttributes', 'static'],
        ['Parameters', 'parameter'],
      ] as const) {
        const items = o.doc[list] ?? [];
        const mine = (kind === 'static' ? statics : parameters).get(ownerKey(o.model.id, instanceId)) ?? [];
        const existing = byName(mine, (r) => r.key);
        if (use) {
          const keep = new Set(items.map((k) => k.Key));
          for (const r of mine)
            if (!keep.has(r.key))
              await attempt(`${o.path}.${list} "${r.key}" (removing)`, () => x.deleteKeyValue(kind, r.id));
        }
        for (const [k, item] of items.entries()) {
          const was = existing.get(item.Key);
          await attempt(`${o.path}.${list}[${k}] (${item.Key})`, async () => {
            if (!was)
              await x.createKeyValue(kind, {
                ModelID: o.model.id,
                InstanceID: instanceId,
                Key: item.Key,
                Value: item.Value,
              });
            else if (was.value !== item.Value)
              await x.updateKeyValue(kind, { ID: was.id, Value: item.Value });
          });
        }
      }
    }

    // 5. dynamic attributes (transformations, models and instances exist by now)
    const dynamics = byOwner(x.dynamics);
    const names: Names = {
      transformations: byName([...x.transformations.values()], (t) => t.name),
      models: byName([...x.models.values()], (m) => m.name),
      instances: byName([...x.instances.values()], (i) => `${i.modelId}/${i.name}`),
    };
    for (const o of owners) {
      const instanceId = o.instance?.id ?? null;
      const items = o.doc.DynamicAttributes ?? [];
      const mine = dynamics.get(ownerKey(o.model.id, instanceId)) ?? [];
      const existing = byName(mine, (r) => r.name);
      const curDyns = byName(o.cur?.DynamicAttributes, (c) => c.Name);
      if (use) {
        const keep = new Set(items.map((d) => d.Name));
        for (const r of mine)
          if (!keep.has(r.name))
            await attempt(`${o.path}.DynamicAttributes "${r.name}" (removing)`, () => x.deleteDynamic(r.id));
      }
      for (const [k, d] of items.entries()) {
        const was = existing.get(d.Name);
        const curDyn = curDyns.get(d.Name);
        await attempt(`${o.path}.DynamicAttributes[${k}] (${d.Name})`, async () => {
          const input = dynamicInput(names, d);
          if (!was)
            await x.createDynamic({ ModelID: o.model.id, InstanceID: instanceId, Name: d.Name, ...input });
          else if (fieldsDiffer(curDyn, d)) await x.updateDynamic({ ID: was.id, ...input });
        });
      }
    }

    // 6. hierarchies the template gives (after the attributes their nodes show)
    const nodes = groupBy(x.nodes.values(), (n) => n.modelId);
    const attributes = {
      static: byOwner(x.statics),
      parameter: byOwner(x.parameters),
      dynamic: byOwner(x.dynamics),
    };
    for (const { path, doc, record } of models) {
      if (doc.Hierarchy === undefined) continue;
      if (covers(hierarchyOf(x, nodes.get(record.id) ?? []), doc.Hierarchy, true)) continue;
      await attempt(`${path}.Hierarchy`, () =>
        x.saveAllHierarchy(record.id, hierarchyInput(attributes, record.id, doc.Hierarchy!)),
      );
    }

    // 7. use: transformations the template does not have (none of the attributes uses them now)
    if (use) {
      const keep = new Set(target.transformations.map((t) => t.Name));
      for (const t of [...x.transformations.values()])
        if (!keep.has(t.name))
          await attempt(`transformations "${t.name}" (removing)`, () => x.deleteTransformation(t.id));
    }

    ctx.afterCommit(() => this.#service.reload());
  }
}

/** The `SaveAllHierarchy` input of a hierarchy of the template (attributes by kind and name). */
function hierarchyInput(
  all: {
    static: Map<string, KeyValueRecord[]>;
    parameter: Map<string, KeyValueRecord[]>;
    dynamic: Map<string, DynamicAttributeRecord[]>;
  },
  modelId: string,
  nodes: TwinsSectionNode[],
): HierarchyInput[] {
  const key = ownerKey(modelId, null);
  const attributes = {
    static: byName(all.static.get(key), (r) => r.key),
    parameter: byName(all.parameter.get(key), (r) => r.key),
    dynamic: byName(all.dynamic.get(key), (r) => r.name),
  };
  const walk = (list: TwinsSectionNode[]): HierarchyInput[] =>
    list.map((n) => {
      let AttributeID: string | null = null;
      if (n.Attribute) {
        const kind = n.AttributeKind ?? 'dynamic';
        const a = attributes[kind].get(n.Attribute);
        if (!a)
          throw new AppError(
            400,
            'bad_request',
            `node ${JSON.stringify(n.Name)}: the model has no ${kind} attribute ${JSON.stringify(n.Attribute)}`,
          );
        AttributeID = a.id;
      }
      return {
        Node: {
          Name: n.Name,
          Position: n.Position,
          IsFolder: n.IsFolder,
          AttributeID,
          AttributeType: n.Attribute ? (n.AttributeKind ?? null) : null,
          NodeType: n.NodeType,
        },
        Childs: walk(n.Children ?? []),
      };
    });
  return walk(nodes);
}

interface Names {
  transformations: Map<string, TransformationRecord>;
  models: Map<string, ModelRecord>;
  /** By `<model id>/<instance name>`. */
  instances: Map<string, InstanceRecord>;
}

/** The service's input of a dynamic attribute of the template (references resolved by name). */
function dynamicInput(names: Names, d: TwinsSectionDynamic) {
  const nested =
    d.Type === 'nestedModel' || (d.Type === undefined && (!!d.NestedModel || !!d.NestedInstance));
  const model = (name: string) => {
    const m = names.models.get(name);
    if (!m) throw new AppError(400, 'bad_request', `no model ${JSON.stringify(name)}`);
    return m;
  };
  let TransformationID: string | null = null;
  if (!nested && d.Transformation) {
    const t = names.transformations.get(d.Transformation);
    if (!t) throw new AppError(400, 'bad_request', `no transformation ${JSON.stringify(d.Transformation)}`);
    TransformationID = t.id;
  }
  let NestedModelID: string | null = null;
  let NestedInstanceID: string | null = null;
  if (nested && d.NestedModel) NestedModelID = model(d.NestedModel).id;
  if (nested && d.NestedInstance) {
    const m = model(d.NestedInstance.Model);
    const i = names.instances.get(`${m.id}/${d.NestedInstance.Instance}`);
    if (!i)
      throw new AppError(
        400,
        'bad_request',
        `model ${JSON.stringify(m.name)} has no instance ${JSON.stringify(d.NestedInstance.Instance)}`,
      );
    NestedInstanceID = i.id;
  }
  return {
    Description: d.Description,
    Type: (nested ? 'nestedModel' : 'topic') as DynamicAttributeType,
    AttributeType: d.AttributeType,
    Topic: d.Topic ?? '',
    TransformationID,
    NestedModelID,
    NestedInstanceID,
  };
}

export function twinsConfigSection(service: TwinsService): TwinsConfigSection {
  return new TwinsConfigSection(service);
}
