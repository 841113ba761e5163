/** Thin translation between `/digital-twins` and the twins' service and runtime. */
import { GraphQLError, GraphQLScalarType, Kind, valueFromASTUntyped } from 'graphql';
import type { IResolvers } from 'mercurius';
import { notFound, tooManyRequests } from '../../kernel/errors.js';
import type { GraphqlContext } from '../../kernel/graphql.js';
import { MILLWRIGHT_VERSION } from '../../kernel/version.js';
import { EDGE_API_VERSION } from '../versions/index.js';
import type { TwinsApi } from './module.js';
import type { HierarchyTree, PlacementInput } from './service.js';
import { pushStream } from './streams.js';
import { preparePlayground } from './playground.js';
import type {
  DynamicAttributeRecord,
  HierarchyNodeRecord,
  InstanceRecord,
  KeyValueRecord,
  ModelRecord,
  PlacementRecord,
  TransformationRecord,
} from './types.js';

export interface TwinsContext {
  twins: TwinsApi;
}
type Ctx = GraphqlContext & TwinsContext;

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function uuid(value: unknown): string {
  if (typeof value !== 'string' || !UUID_RE.test(value))
    throw new GraphQLError(
      `UUID cannot represent ${JSON.stringify(value)}: expected 8-4-4-4-12 hexadecimal digits`,
    );
  return value.toLowerCase();
}

const UUIDScalar = new GraphQLScalarType({
  name: 'UUID',
  serialize: (v) => v,
  parseValue: uuid,
  parseLiteral: (ast) => {
    if (ast.kind !== Kind.STRING) throw new GraphQLError('UUID must be a string');
    return uuid(ast.value);
  },
});

const JSONScalar = new GraphQLScalarType({
  name: 'JSON',
  serialize: (v) => v,
  parseValue: (v) => v,
  parseLiteral: (ast, variables) => valueFromASTUntyped(ast, variables),
});

const iso = (ms: number) => new Date(ms).toISOString();

export function modelView(twins: TwinsApi, m: ModelRecord) {
  const s = twins.service;
  return {
    ID: m.id,
    Name: m.name,
    Assets: m.assets,
    Description: m.description,
    PublishOnChange: m.publishOnChange,
    PublishIntervalMs: m.publishIntervalMs,
    StaleAfterMs: m.staleAfterMs,
    InstanceCount: s.instancesOf(m.id).length,
    ...s.counts(m.id),
    CreatedAt: iso(m.createdAt),
    UpdatedAt: iso(m.updatedAt),
  };
}

export function instanceView(twins: TwinsApi, i: InstanceRecord) {
  const s = twins.service;
  return {
    ID: i.id,
    ModelID: i.modelId,
    ModelName: s.models.get(i.modelId)?.name ?? '',
    Name: i.name,
    Description: i.description,
    Source: i.source,
    Topic: i.topic,
    Enabled: i.enabled,
    ...s.counts(i.modelId, i),
    CreatedAt: iso(i.createdAt),
    UpdatedAt: iso(i.updatedAt),
  };
}

const keyValueView = (r: KeyValueRecord) => ({
  ID: r.id,
  ModelID: r.modelId,
  InstanceID: r.instanceId,
  Key: r.key,
  Value: r.value,
  CreatedAt: iso(r.createdAt),
  UpdatedAt: iso(r.updatedAt),
});

const transformationView = (t: TransformationRecord) => ({
  ID: t.id,
  Name: t.name,
  Description: t.description,
  Expression: t.expression,
  CreatedAt: iso(t.createdAt),
  UpdatedAt: iso(t.updatedAt),
});

function dynamicView(twins: TwinsApi, d: DynamicAttributeRecord) {
  const t = d.transformationId ? twins.service.transformations.get(d.transformationId) : undefined;
  return {
    ID: d.id,
    ModelID: d.modelId,
    InstanceID: d.instanceId,
    Name: d.name,
    Description: d.description,
    Type: d.type,
    AttributeType: d.attributeType,
    Topic: d.topic,
    TransformationID: d.transformationId,
    Transformation: t ? transformationView(t) : null,
    NestedModelID: d.nestedModelId,
    NestedInstanceID: d.nestedInstanceId,
    CreatedAt: iso(d.createdAt),
    UpdatedAt: iso(d.updatedAt),
  };
}

const nodeView = (n: HierarchyNodeRecord) => ({
  ID: n.id,
  Position: n.position,
  Name: n.name,
  IsFolder: n.isFolder,
  AttributeID: n.attributeId,
  AttributeType: n.attributeType,
  NodeType: n.nodeType,
});

function treeView(twins: TwinsApi, modelId: string, trees: HierarchyTree[]): unknown[] {
  return trees.map((t) => {
    const attr = t.node.attributeId ? twins.service.attributeOf(modelId, t.node.attributeId) : null;
    return {
      Name: t.node.name,
      Node: nodeView(t.node),
      Attr: attr
        ? attr.kind === 'dynamic'
          ? { Kind: 'dynamic', ...stripFns(dynamicView(twins, attr.record as DynamicAttributeRecord)) }
          : { Kind: attr.kind, ...keyValueView(attr.record as KeyValueRecord) }
        : null,
      Childs: treeView(twins, modelId, t.children),
    };
  });
}

function stripFns<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => typeof v !== 'function')) as T;
}

const placementView = (p: PlacementRecord) => ({
  InstanceID: p.instanceId,
  Path: p.path,
  Metadata: p.metadata,
});

const pageOf = <R, V>(page: { Items: R[]; Total: number }, view: (r: R) => V) => ({
  Items: page.Items.map(view),
  Total: page.Total,
});

/** Opens a subscription stream, within the edge's bound on concurrent twin streams. */
function openStream(ctx: Ctx) {
  const t = ctx.twins;
  if (t.streams.open >= t.streams.max)
    throw tooManyRequests(`there are already ${t.streams.max} digital twin subscriptions, the most allowed`);
  t.streams.open++;
  let closed = false;
  return () => {
    if (!closed) {
      closed = true;
      t.streams.open--;
    }
  };
}

export const resolvers: IResolvers<never, Ctx> = {
  UUID: UUIDScalar,
  JSON: JSONScalar,
  Model: {
    Instances: (m: { ID: string }, _a: unknown, ctx: Ctx) =>
      ctx.twins.service.instancesOf(m.ID).map((i) => instanceView(ctx.twins, i)),
  },
  Query: {
    Version: () => ({ Git: `v${MILLWRIGHT_VERSION}`, Version: EDGE_API_VERSION }),
    GetModel: (_r, a: { ID: string }, ctx) => {
      const m = ctx.twins.service.models.get(a.ID);
      return m ? modelView(ctx.twins, m) : null;
    },
    ListModels: (_r, a, ctx) => pageOf(ctx.twins.service.listModels(a.input), (m) => modelView(ctx.twins, m)),
    GetInstance: (_r, a: { ID: string }, ctx) => {
      const i = ctx.twins.service.instances.get(a.ID);
      return i ? instanceView(ctx.twins, i) : null;
    },
    ListInstances: (_r, a, ctx) =>
      pageOf(ctx.twins.service.listInstances(a.input), (i) => instanceView(ctx.twins, i)),
    GetInstanceStatus: (_r, a: { ID: string }, ctx) => {
      ctx.twins.service.instance(a.ID);
      const s = ctx.twins.runtime.status(a.ID);
      if (!s)
        return {
          InstanceID: a.ID,
          State: 'stopped',
          Error: null,
          LastPublishedAt: null,
          Published: 0,
          FailedAttributes: [],
        };
      return {
        InstanceID: a.ID,
        State: s.state,
        Error: s.error,
        LastPublishedAt: s.lastPublishedAt,
        Published: s.published,
        FailedAttributes: s.failedAttributes,
      };
    },
    GetInstancePayload: (_r, a: { ID: string }, ctx) => {
      ctx.twins.service.instance(a.ID);
      return ctx.twins.runtime.twin(a.ID)?.lastPayload ?? null;
    },
    ListStaticAttributes: (_r, a, ctx) =>
      pageOf(ctx.twins.service.listKeyValues('static', a.input), keyValueView),
    ListParameters: (_r, a, ctx) =>
      pageOf(ctx.twins.service.listKeyValues('parameter', a.input), keyValueView),
    ListDynamicAttributes: (_r, a, ctx) =>
      pageOf(ctx.twins.service.listDynamics(a.input), (d) => dynamicView(ctx.twins, d)),
    GetTransformation: (_r, a: { ID: string }, ctx) => {
      const t = ctx.twins.service.transformations.get(a.ID);
      return t ? transformationView(t) : null;
    },
    ListTransformations: (_r, a, ctx) =>
      pageOf(ctx.twins.service.listTransformations(a.input), transformationView),
    GetHierarchy: (_r, a: { modelId: string }, ctx) =>
      treeView(ctx.twins, a.modelId, ctx.twins.service.hierarchy(a.modelId)),
    GetInstanceAssetHierarchy: (_r, a: { InstanceID?: string | null }, ctx) =>
      ctx.twins.service.placementsOf(a.InstanceID).map(placementView),
  },
  Mutation: {
    CreateModel: async (_r, a, ctx) => modelView(ctx.twins, await ctx.twins.service.createModel(a.input)),
    UpdateModel: async (_r, a, ctx) => modelView(ctx.twins, await ctx.twins.service.updateModel(a.input)),
    DeleteModel: (_r, a, ctx) => ctx.twins.service.deleteModel(a.input.ID),
    CreateInstance: async (_r, a, ctx) =>
      instanceView(ctx.twins, await ctx.twins.service.createInstance(a.input)),
    UpdateInstance: async (_r, a, ctx) =>
      instanceView(ctx.twins, await ctx.twins.service.updateInstance(a.input)),
    DeleteInstance: (_r, a, ctx) => ctx.twins.service.deleteInstance(a.input.ID),
    CreateStaticAttribute: async (_r, a, ctx) =>
      keyValueView(await ctx.twins.service.createKeyValue('static', a.input)),
    UpdateStaticAttribute: async (_r, a, ctx) =>
      keyValueView(await ctx.twins.service.updateKeyValue('static', a.input)),
    DeleteStaticAttribute: (_r, a, ctx) => ctx.twins.service.deleteKeyValue('static', a.input.ID),
    CreateParameter: async (_r, a, ctx) =>
      keyValueView(await ctx.twins.service.createKeyValue('parameter', a.input)),
    UpdateParameter: async (_r, a, ctx) =>
      keyValueView(await ctx.twins.service.updateKeyValue('parameter', a.input)),
    DeleteParameter: (_r, a, ctx) => ctx.twins.service.deleteKeyValue('parameter', a.input.ID),
    CreateDynamicAttribute: async (_r, a, ctx) =>
      dynamicView(ctx.twins, await ctx.twins.service.createDynamic(a.input)),
    UpdateDynamicAttribute: async (_r, a, ctx) =>
      dynamicView(ctx.twins, await ctx.twins.service.updateDynamic(a.input)),
    DeleteDynamicAttribute: (_r, a, ctx) => ctx.twins.service.deleteDynamic(a.input.ID),
    CreateTransformation: async (_r, a, ctx) =>
      transformationView(await ctx.twins.service.createTransformation(a.input)),
    UpdateTransformation: async (_r, a, ctx) =>
      transformationView(await ctx.twins.service.updateTransformation(a.input)),
    DeleteTransformation: (_r, a, ctx) => ctx.twins.service.deleteTransformation(a.input.ID),
    SaveAllHierarchy: async (_r, a, ctx) =>
      treeView(ctx.twins, a.modelId, await ctx.twins.service.saveAllHierarchy(a.modelId, a.input)),
    UpdateHierarchyNode: async (_r, a, ctx) => nodeView(await ctx.twins.service.updateNode(a.input)),
    DeleteHierarchyNode: (_r, a, ctx) => ctx.twins.service.deleteNode(a.input.ID),
    SetInstanceAssetHierarchy: async (_r, a: { input: { Items: PlacementInput[] } }, ctx) =>
      (await ctx.twins.service.setInstanceAssetHierarchy(a.input.Items)).map(placementView),
  },
  Subscription: {
    DataAccess: {
      subscribe: (_r, a: { input: { InstanceID: string } }, ctx) => {
        const inst = ctx.twins.service.instances.get(a.input.InstanceID);
        if (!inst) throw notFound(`instance ${a.input.InstanceID} does not exist`);
        const release = openStream(ctx);
        const holder: { sub?: { unsubscribe(): void } } = {};
        const stream = pushStream<unknown>(() => {
          holder.sub?.unsubscribe();
          release();
        });
        const message = (payload: unknown) => ({
          DataAccess: { InstanceID: inst.id, Topic: inst.topic, Payload: payload },
        });
        holder.sub = ctx.twins.hub.subscribe(inst.topic, {
          callback: (msg) => stream.push(message(msg.json())),
        });
        return stream;
      },
    },
    PlaygroundMessages: {
      subscribe: (
        _r,
        a: {
          input: {
            Expression: string;
            Messages?: unknown[] | null;
            Topic?: string | null;
            AttributeType?: string | null;
            Params?: unknown;
          };
        },
        ctx,
      ) => {
        const input = a.input;
        const playground = preparePlayground(ctx.twins, {
          expression: input.Expression,
          messages: input.Messages ?? [],
          topic: input.Topic ?? null,
          attributeType: input.AttributeType ?? null,
          params: input.Params,
        });
        const release = openStream(ctx);
        const holder: { stop?: () => void } = {};
        const stream = pushStream<unknown>(() => {
          holder.stop?.();
          release();
        });
        holder.stop = playground.run({
          push: (o) =>
            stream.push({
              PlaygroundMessages: { Source: o.source, Input: o.input, Output: o.output, Error: o.error },
            }),
          end: () => stream.end(),
        });
        return stream;
      },
    },
  },
};
