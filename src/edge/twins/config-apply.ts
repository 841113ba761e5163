/**
 * The apply of the twins' section, step by step, over a `TwinsService` bound to the apply's
 * transaction (`TwinsService.over`): each keyed list (transformations, models, instances, static
 * attributes, parameters, dynamic attributes) through the kernel's `applyKeyed`, in the order that
 * lets references resolve by name:
 *
 * 1. transformations (created or updated; those the template leaves out go last, in 6);
 * 2. models (with `use`, those left out go first: their topics free up), then their instances;
 * 3. static attributes and parameters of every model and instance;
 * 4. dynamic attributes (transformations, models and instances exist by now);
 * 5. hierarchies the template gives (after the attributes their nodes show);
 * 6. with `use`, the transformations left out (no attribute uses them any more).
 */
import { AppError, ERRORS } from '../../kernel/errors.js';
import type { ApplyMode, SectionApplyContext } from '../../kernel/service/config-section.js';
import { applyKeyed, attemptItem, removeKeyed, type KeyedApply } from '../../kernel/service/keyed-section.js';
import {
  byName,
  byOwner,
  covers,
  fieldsDiffer,
  groupBy,
  hierarchyOf,
  ownerKey,
  type TwinsSection,
  type TwinsSectionDynamic,
  type TwinsSectionInstance,
  type TwinsSectionModel,
  type TwinsSectionNode,
} from './config-document.js';
import type { HierarchyInput, TwinsService } from './service.js';
import type {
  DynamicAttributeRecord,
  DynamicAttributeType,
  InstanceRecord,
  KeyValueRecord,
  ModelRecord,
  TransformationRecord,
} from './types.js';

/** A model or an instance of the template, with what the edge has of it. */
interface Owner {
  path: string;
  doc: TwinsSectionModel | TwinsSectionInstance;
  /** The current export of it (undefined: new). */
  cur: TwinsSectionModel | TwinsSectionInstance | undefined;
  model: ModelRecord;
  instance: InstanceRecord | null;
}

/** What the steps share. */
interface Run {
  x: TwinsService;
  ctx: SectionApplyContext;
  /** The mode of every list: the template is already merged for a merge-apply. */
  mode: ApplyMode;
  current: TwinsSection;
  target: TwinsSection;
  step(): void;
}

/** Applies `target` (normalised, merged for a merge-apply) over `current` (the export of `x`). */
export async function applyTwins(
  x: TwinsService,
  current: TwinsSection,
  target: TwinsSection,
  ctx: SectionApplyContext,
): Promise<void> {
  const total = target.transformations.length + target.models.length;
  let done = 0;
  const run: Run = {
    x,
    ctx,
    mode: ctx.mode === 'use' ? 'use' : 'legacy',
    current,
    target,
    step: () => ctx.progress(++done, total),
  };
  const transformations = await applyTransformations(run);
  const { models, owners } = await applyModels(run);
  await applyKeyValues(run, owners);
  await applyDynamics(run, owners);
  await applyHierarchies(run, models);
  await removeKeyed(transformations.leftOut, ctx, transformations.spec);
}

/** 1. transformations, by name (those left out are removed at the end). */
async function applyTransformations(run: Run) {
  const { x } = run;
  const spec: KeyedApply<TwinsSection['transformations'][number], TransformationRecord> = {
    section: 'twins',
    path: 'transformations',
    key: (t) => t.Name,
    rowKey: (r) => r.name,
    same: (was, t) =>
      was.expression === t.Expression && (t.Description ?? was.description) === was.description,
    create: async (t) => {
      await x.createTransformation(t);
    },
    update: async (t, was) => {
      await x.updateTransformation({ ID: was.id, Expression: t.Expression, Description: t.Description });
    },
    remove: async ([t]) => {
      await x.deleteTransformation(t!.id);
    },
    removeOneByOne: true,
    removeWhen: 'later',
    step: run.step,
  };
  const out = await applyKeyed(
    [...x.transformations.values()],
    run.target.transformations,
    { ...run.ctx, mode: run.mode },
    spec,
  );
  return { leftOut: out.leftOut, spec };
}

/** 2. models, then their instances (so that nested references by name resolve in 4). */
async function applyModels(run: Run) {
  const { x } = run;
  const curModels = byName(run.current.models, (m) => m.Name);
  const records = new Map<string, ModelRecord>();
  const fields = (m: TwinsSectionModel) => ({
    Assets: m.Assets,
    Description: m.Description,
    PublishOnChange: m.PublishOnChange,
    PublishIntervalMs: m.PublishIntervalMs,
    StaleAfterMs: m.StaleAfterMs,
  });
  const out = await applyKeyed(
    [...x.models.values()],
    run.target.models,
    { ...run.ctx, mode: run.mode },
    {
      section: 'twins',
      path: 'models',
      key: (m) => m.Name,
      rowKey: (r) => r.name,
      same: (was, m) => !fieldsDiffer(curModels.get(was.name), fields(m)),
      create: async (m) => {
        records.set(m.Name, await x.createModel({ Name: m.Name, ...fields(m) }));
      },
      update: async (m, was) => {
        records.set(m.Name, await x.updateModel({ ID: was.id, ...fields(m) }));
      },
      remove: async ([m]) => {
        await x.deleteModel(m!.id);
      },
      removeOneByOne: true,
    },
  );
  for (const u of out.unchanged) records.set(u.item.Name, u.row);
  const models: Array<{ path: string; doc: TwinsSectionModel; record: ModelRecord }> = [];
  const owners: Owner[] = [];
  for (const [i, doc] of run.target.models.entries()) {
    const record = records.get(doc.Name);
    if (!record) continue;
    const path = `models[${i}]`;
    const cur = curModels.get(doc.Name);
    models.push({ path, doc, record });
    owners.push({ path, doc, cur, model: record, instance: null });
    owners.push(...(await applyInstances(run, path, doc, cur, record)));
    run.step();
  }
  return { models, owners };
}

/** The instances of one model of the template. */
async function applyInstances(
  run: Run,
  path: string,
  doc: TwinsSectionModel,
  cur: TwinsSectionModel | undefined,
  model: ModelRecord,
): Promise<Owner[]> {
  const { x } = run;
  const curInstances = byName(cur?.Instances, (i) => i.Name);
  const records = new Map<string, InstanceRecord>();
  const fields = (i: TwinsSectionInstance) => ({
    Description: i.Description,
    Topic: i.Topic,
    Source: i.Source,
    Enabled: i.Enabled,
  });
  const instances = doc.Instances ?? [];
  const out = await applyKeyed(
    x.instancesOf(model.id),
    instances,
    { ...run.ctx, mode: run.mode },
    {
      section: 'twins',
      path: `${path}.Instances`,
      key: (i) => i.Name,
      rowKey: (r) => r.name,
      same: (was, i) => !fieldsDiffer(curInstances.get(was.name), fields(i)),
      create: async (i) => {
        records.set(i.Name, await x.createInstance({ ModelID: model.id, Name: i.Name, ...fields(i) }));
      },
      update: async (i, was) => {
        records.set(i.Name, await x.updateInstance({ ID: was.id, ...fields(i) }));
      },
      remove: async ([i]) => {
        await x.deleteInstance(i!.id);
      },
      removeOneByOne: true,
    },
  );
  for (const u of out.unchanged) records.set(u.item.Name, u.row);
  const owners: Owner[] = [];
  for (const [j, inst] of instances.entries()) {
    const instance = records.get(inst.Name);
    if (instance)
      owners.push({
        path: `${path}.Instances[${j}]`,
        doc: inst,
        cur: curInstances.get(inst.Name),
        model,
        instance,
      });
  }
  return owners;
}

/**
 * 3. static attributes and parameters of every model and instance (the template names each key
 * once per owner: the indexes taken here are not made stale by what this step creates).
 */
async function applyKeyValues(run: Run, owners: Owner[]): Promise<void> {
  const { x } = run;
  const statics = byOwner(x.statics);
  const parameters = byOwner(x.parameters);
  for (const o of owners) {
    const instanceId = o.instance?.id ?? null;
    for (const [list, kind] of [
      ['StaticAttributes', 'static'],
      ['Parameters', 'parameter'],
    ] as const) {
      const mine = (kind === 'static' ? statics : parameters).get(ownerKey(o.model.id, instanceId)) ?? [];
      await applyKeyed(
        mine,
        o.doc[list] ?? [],
        { ...run.ctx, mode: run.mode },
        {
          section: 'twins',
          path: `${o.path}.${list}`,
          key: (k) => k.Key,
          rowKey: (r: KeyValueRecord) => r.key,
          same: (was, k) => was.value === k.Value,
          create: async (k) => {
            await x.createKeyValue(kind, {
              ModelID: o.model.id,
              InstanceID: instanceId,
              Key: k.Key,
              Value: k.Value,
            });
          },
          update: async (k, was) => {
            await x.updateKeyValue(kind, { ID: was.id, Value: k.Value });
          },
          remove: async ([r]) => {
            await x.deleteKeyValue(kind, r!.id);
          },
          removeOneByOne: true,
        },
      );
    }
  }
}

/** 4. dynamic attributes (transformations, models and instances exist by now). */
async function applyDynamics(run: Run, owners: Owner[]): Promise<void> {
  const { x } = run;
  const dynamics = byOwner(x.dynamics);
  const names: Names = {
    transformations: byName([...x.transformations.values()], (t) => t.name),
    models: byName([...x.models.values()], (m) => m.name),
    instances: byName([...x.instances.values()], (i) => `${i.modelId}/${i.name}`),
  };
  for (const o of owners) {
    const instanceId = o.instance?.id ?? null;
    const curDyns = byName(o.cur?.DynamicAttributes, (c) => c.Name);
    const mine = dynamics.get(ownerKey(o.model.id, instanceId)) ?? [];
    await applyKeyed(
      mine,
      o.doc.DynamicAttributes ?? [],
      { ...run.ctx, mode: run.mode },
      {
        section: 'twins',
        path: `${o.path}.DynamicAttributes`,
        key: (d) => d.Name,
        rowKey: (r: DynamicAttributeRecord) => r.name,
        same: (was, d) => !fieldsDiffer(curDyns.get(was.name), d),
        create: async (d) => {
          const input = dynamicInput(names, d);
          await x.createDynamic({ ModelID: o.model.id, InstanceID: instanceId, Name: d.Name, ...input });
        },
        update: async (d, was) => {
          await x.updateDynamic({ ID: was.id, ...dynamicInput(names, d) });
        },
        remove: async ([r]) => {
          await x.deleteDynamic(r!.id);
        },
        removeOneByOne: true,
      },
    );
  }
}

/** 5. hierarchies the template gives (after the attributes their nodes show). */
async function applyHierarchies(
  run: Run,
  models: Array<{ path: string; doc: TwinsSectionModel; record: ModelRecord }>,
): Promise<void> {
  const { x } = run;
  const nodes = groupBy(x.nodes.values(), (n) => n.modelId);
  const attributes = {
    static: byOwner(x.statics),
    parameter: byOwner(x.parameters),
    dynamic: byOwner(x.dynamics),
  };
  for (const { path, doc, record } of models) {
    if (doc.Hierarchy === undefined) continue;
    if (covers(hierarchyOf(x, nodes.get(record.id) ?? []), doc.Hierarchy, true)) continue;
    await attemptItem(run.ctx, 'twins', `${path}.Hierarchy`, () =>
      x.saveAllHierarchy(record.id, hierarchyInput(attributes, record.id, doc.Hierarchy!)),
    );
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
            ERRORS.badRequest,
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
    if (!m) throw new AppError(ERRORS.badRequest, `no model ${JSON.stringify(name)}`);
    return m;
  };
  let TransformationID: string | null = null;
  if (!nested && d.Transformation) {
    const t = names.transformations.get(d.Transformation);
    if (!t) throw new AppError(ERRORS.badRequest, `no transformation ${JSON.stringify(d.Transformation)}`);
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
        ERRORS.badRequest,
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
