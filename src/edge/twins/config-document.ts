/**
 * The twins' section of a configuration template as a document: its shape (`TwinsSection`), its
 * export from a `TwinsService`, and how two versions compare and merge (lists of objects keyed by
 * `Name`, or `Key`). The section itself (validate, diff, merge, apply) is `config-section.ts`; the
 * apply's steps are `config-apply.ts`.
 */
import { canonical } from '../../kernel/service/section-shape.js';
import type { TwinsService } from './service.js';
import type {
  AttributeType,
  DynamicAttributeRecord,
  DynamicAttributeType,
  HierarchyNodeRecord,
  InstanceSource,
  KeyValueRecord,
  NodeAttributeKind,
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

export const byText =
  <T>(key: (x: T) => string) =>
  (a: T, b: T) =>
    key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0;

/** `items` grouped by `key` (one pass: the section is as large as the twins' limits allow). */
export function groupBy<T>(items: Iterable<T>, key: (x: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const x of items) {
    const k = key(x);
    const list = out.get(k);
    if (list) list.push(x);
    else out.set(k, [x]);
  }
  return out;
}

export const ownerKey = (modelId: string, instanceId: string | null) => `${modelId}/${instanceId ?? ''}`;
export const byOwner = <T extends { modelId: string; instanceId: string | null }>(map: Map<string, T>) =>
  groupBy(map.values(), (r) => ownerKey(r.modelId, r.instanceId));
export const byName = <T>(items: readonly T[] | undefined, key: (x: T) => string) =>
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
export function hierarchyOf(s: TwinsService, nodes: HierarchyNodeRecord[]): TwinsSectionNode[] {
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

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
export const itemKey = (v: unknown): string | undefined =>
  isObject(v) ? ((v.Name ?? v.Key) as string | undefined) : undefined;

/**
 * A list the template leaves out is an empty list (what `use` makes of it). A hierarchy left out
 * is left alone, but with `use`.
 */
export function normalize(doc: TwinsSection, use: boolean): TwinsSection {
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
export function covers(was: unknown, now: unknown, exact: boolean): boolean {
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
export const fieldsDiffer = (was: object | undefined, now: object): boolean =>
  !was ||
  Object.entries(now).some(
    ([k, v]) =>
      !Array.isArray(v) && v !== undefined && canonical((was as Record<string, unknown>)[k]) !== canonical(v),
  );

/** `current` with `template` over it: fields of the template win, keyed lists are united. */
export function unite(current: unknown, template: unknown): unknown {
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
