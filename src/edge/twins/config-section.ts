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
 * `TwinsRepository.inTransaction`), step by step (`config-apply.ts`, each keyed list through the
 * kernel's `applyKeyed`): the rules (names, topics, limits, transformations that compile, nested
 * references) are those of the API, and nothing touches the live service until the transaction
 * committed; then the live service reads its tables again (`reload`) and the runtime re-resolves
 * every instance.
 *
 * The document's shape, its export and how versions compare are `config-document.ts`.
 */
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
import { applyTwins } from './config-apply.js';
import {
  covers,
  exportTwins,
  isObject,
  normalize,
  unite,
  type TwinsSection,
  type TwinsSectionModel,
} from './config-document.js';
import { TwinsRepository } from './repository.js';
import type { TwinsService } from './service.js';
import { compileTransformation } from './transform.js';

export {
  exportTwins,
  type TwinsSection,
  type TwinsSectionDynamic,
  type TwinsSectionInstance,
  type TwinsSectionKeyValue,
  type TwinsSectionModel,
  type TwinsSectionNode,
  type TwinsSectionTransformation,
} from './config-document.js';

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
    // A service over the apply's transaction: every read and write goes through ctx.trx.
    const x = await this.#service.over(TwinsRepository.inTransaction(ctx.trx));
    const current = exportTwins(x);
    const target = normalize(
      ctx.mode === 'merge-apply' ? this.merge(current, next).merged : next,
      ctx.mode === 'use',
    );
    await applyTwins(x, current, target, ctx);
    ctx.afterCommit(() => this.#service.reload());
  }
}

export function twinsConfigSection(service: TwinsService): TwinsConfigSection {
  return new TwinsConfigSection(service);
}
