/** Thin translation between `/cc/v2` and the integration service. */
import { GraphQLError, GraphQLScalarType, Kind, valueFromASTUntyped } from 'graphql';
import type { IResolvers } from 'mercurius';
import type { GraphqlContext } from '../../kernel/graphql.js';
import {
  groupedProviders,
  UUID_PATTERN,
  type PropertyDef,
  type ProviderDef,
  type When,
} from './catalogue.js';
import type {
  CreateInstanceRequest,
  CreateSubscriptionRequest,
  InstanceView,
  IntegrationService,
  UpdateInstanceRequest,
  UpdateSubscriptionRequest,
} from './service.js';

export interface IntegrationsContext {
  integrations: IntegrationService;
}

type Ctx = GraphqlContext & IntegrationsContext;

const JSONScalar = new GraphQLScalarType({
  name: 'JSON',
  serialize: (v) => v,
  parseValue: (v) => v,
  parseLiteral: (ast, variables) => valueFromASTUntyped(ast, variables),
});

const uuid = (v: unknown): string => {
  if (typeof v !== 'string' || !UUID_PATTERN.test(v)) {
    throw new GraphQLError(
      `UUID cannot represent ${JSON.stringify(v)}: expected a UUID such as 6f1d2c9e-4b7a-4e55-9a0c-3d8f1b2e7c41`,
    );
  }
  return v.toLowerCase();
};

/** UUID: variables and literals that are not UUIDs fail validation, before execution. */
const UUIDScalar = new GraphQLScalarType({
  name: 'UUID',
  serialize: (v) => v,
  parseValue: uuid,
  parseLiteral: (ast) => {
    if (ast.kind !== Kind.STRING) throw new GraphQLError('UUID must be a string');
    return uuid(ast.value);
  },
});

const describe = (w: When | undefined) =>
  w ? `when ${w.property} is ${w.in.map((v) => JSON.stringify(v)).join(' or ')}` : null;

function propertyView(d: PropertyDef) {
  return {
    Name: d.name,
    Label: d.label,
    Description: d.description,
    Type: d.type,
    Required: d.required === true,
    RequiredWhen: describe(d.requiredWhen),
    AppliesWhen: describe(d.appliesWhen),
    Default: d.default ?? null,
    Enum: d.enum ? [...d.enum] : null,
    Min: d.min ?? null,
    Max: d.max ?? null,
    Secret: d.secret === true,
    Config: { Required: d.required === true },
  };
}

const providerView = (p: ProviderDef) => ({
  ProviderID: p.id,
  Name: p.name,
  Group: p.group,
  Description: p.description,
  IsExperimental: p.experimental,
  Hidden: p.hidden,
  Transport: p.transport,
});

export const resolvers: IResolvers<never, Ctx> = {
  JSON: JSONScalar,
  UUID: UUIDScalar,
  Instance: {
    InstanceState: async (i: InstanceView, _a, ctx) => (await ctx.integrations.status(i.ID)).InstanceState,
  },
  Query: {
    ListProviders: (_r, args, ctx) => {
      const page = ctx.integrations.listProviders(args.input);
      return { Items: page.Items.map(providerView), Total: page.Total };
    },
    ListGroupedProviders: (_r, args: { input?: { IncludeHidden?: boolean | null } | null }) =>
      groupedProviders(args.input?.IncludeHidden === true).map((g) => ({
        Group: g.group,
        IsExperimental: g.experimental,
        Providers: g.providers.map(providerView),
      })),
    GetProviderSchema: (_r, args: { input: { ProviderID: string } }, ctx) => {
      const p = ctx.integrations.provider(args.input.ProviderID);
      return {
        ProviderID: p.id,
        Name: p.name,
        IsExperimental: p.experimental,
        Hidden: p.hidden,
        Properties: p.properties.map(propertyView),
        Rules: p.rules,
      };
    },
    ListInstances: (_r, args, ctx) => ctx.integrations.listInstances(args.input),
    GetInstance: (_r, args: { input: { InstanceID: string } }, ctx) =>
      ctx.integrations.getInstance(args.input.InstanceID),
    GetInstanceStatus: (_r, args: { input: { InstanceID: string } }, ctx) =>
      ctx.integrations.status(args.input.InstanceID),
    GetInstanceQueue: (_r, args: { input: { InstanceID: string } }, ctx) =>
      ctx.integrations.queue(args.input.InstanceID),
    ListSubscriptions: (_r, args, ctx) => ctx.integrations.listSubscriptions(args.input),
  },
  Mutation: {
    CreateInstance: (_r, args: { input: CreateInstanceRequest }, ctx) =>
      ctx.integrations.createInstance(args.input),
    UpdateInstance: (_r, args: { input: UpdateInstanceRequest }, ctx) =>
      ctx.integrations.updateInstance(args.input),
    DeleteInstance: (_r, args: { input: { InstanceID: string } }, ctx) =>
      ctx.integrations.deleteInstance(args.input.InstanceID),
    CreateSubscription: (_r, args: { input: CreateSubscriptionRequest }, ctx) =>
      ctx.integrations.createSubscription(args.input),
    UpdateSubscription: (_r, args: { input: UpdateSubscriptionRequest }, ctx) =>
      ctx.integrations.updateSubscription(args.input),
    DeleteSubscription: (_r, args: { input: { TopicID: string } }, ctx) =>
      ctx.integrations.deleteSubscription(args.input.TopicID),
  },
};
