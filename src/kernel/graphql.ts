/**
 * GraphQL mounting shared by the three services: one call per endpoint, several endpoints on one
 * Fastify instance (the edge serves `/devicehub/v2`, `/digital-twins`, `/cc/v2`...; the UNS serves
 * `/mqtt/gql`). Each endpoint is mercurius in its own encapsulated context, so schemas, resolvers,
 * hooks and subscription topics never leak from one endpoint to another.
 *
 * ```ts
 * import { mountGraphql, type GraphqlContext } from '../../kernel/graphql.js';
 *
 * const endpoint = await mountGraphql<{ devices: DeviceService }>(app, {
 *   path: '/devicehub/v2',
 *   schema: readFileSync(new URL('./schema.graphql', import.meta.url), 'utf8'),
 *   context: () => ({ devices }),
 *   subscriptions: true,
 *   resolvers: {
 *     Query: { Device: (_root, args, ctx) => ctx.devices.get(args.ID) },      // AppError → GraphQL error
 *     Mutation: {
 *       DeleteDevice: async (_root, args, ctx) => {                          // admin only (403 otherwise)
 *         await ctx.devices.remove(args.ID);
 *         await ctx.publish('DEVICE_DELETED', { DeviceDeleted: args.ID });
 *         return true;
 *       },
 *     },
 *     Subscription: { DeviceDeleted: { subscribe: (_root, _args, ctx) => ctx.pubsub.subscribe('DEVICE_DELETED') } },
 *   },
 * });
 * // elsewhere (a DataHub subscriber, a background job): await endpoint.publish(topic, payload)
 * ```
 *
 * What every endpoint gets:
 * - `POST <path>` with a JSON body `{ query, variables, operationName }`; `GET <path>` for queries;
 *   with `subscriptions`, the same `GET <path>` upgrades to a WebSocket speaking `graphql-ws` or
 *   `graphql-transport-ws`. GraphiQL is off.
 * - Every route of the endpoint carries `config: { permission }` (`read` unless told otherwise),
 *   which the service's authentication hook reads; the upgrade GET goes through that hook too.
 * - Resolver context: `auth` (`request.auth`, from the upgrade request for subscriptions),
 *   `request`, `publish(topic, payload)`, mercurius's `pubsub` (in a `subscribe` resolver:
 *   `ctx.pubsub.subscribe(topic)`), and whatever `options.context` returns.
 * - A caller that is not an admin cannot run a mutation: HTTP 403 with
 *   `{ errors: [{ message: 'viewer role cannot run mutations', extensions: { code: 'FORBIDDEN' } }], data: null }`.
 * - Validation before execution (also for subscriptions, which mercurius would otherwise not
 *   validate): the specification's rules, a depth limit and a static cost limit; a violation is an
 *   HTTP 400 GraphQL error (`query depth 15 exceeds the maximum of 12`).
 * - Errors: an `AppError` thrown by a resolver is a GraphQL error with the AppError's message and
 *   `extensions.code`; anything else is logged (`request.log.error`) and answered as
 *   `internal error`. Resolver errors keep HTTP 200; errors before execution (authentication,
 *   malformed bodies, validation) carry their HTTP status, still in the GraphQL shape.
 *
 * Subscriptions need `@fastify/websocket` once per server: the first endpoint mounted with
 * `subscriptions` registers it on `app` unless it is already there. A service that also has plain
 * WebSocket routes registers `@fastify/websocket` itself, before mounting. Mount every endpoint of
 * a server on the same instance (or register `@fastify/websocket` on their common ancestor first):
 * two registrations would both answer the same upgrade.
 */
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import websocket from '@fastify/websocket';
import mercurius, { type IResolvers, type MercuriusContext } from 'mercurius';
import {
  buildSchema,
  getNamedType,
  getNullableType,
  getOperationAST,
  GraphQLError,
  isInterfaceType,
  isListType,
  isObjectType,
  Kind,
  SchemaMetaFieldDef,
  specifiedRules,
  TypeMetaFieldDef,
  validate,
  type DocumentNode,
  type ExecutionResult,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLFormattedError,
  type GraphQLNamedType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
  type ValueNode,
} from 'graphql';
import { AppError } from './errors.js';
import type { AuthContext } from './http/auth-types.js';

export const DEFAULT_MAX_DEPTH = 12;
export const DEFAULT_MAX_COST = 5000;
/** The factor of a list field whose size no `Limit`/`limit`/`first` argument states. */
export const DEFAULT_LIST_SIZE = 10;
/**
 * Introspection is exempt from the depth and cost limits (the standard introspection query is
 * 13 deep), but lists inside it may nest only this deep: the standard query needs 3
 * (`types { fields { args } }`); `types { fields { type { fields ... } } }` is how introspection
 * is turned into an amplification attack.
 */
export const MAX_INTROSPECTION_LIST_NESTING = 3;

export const VIEWER_MUTATION_MESSAGE = 'viewer role cannot run mutations';

/** What every resolver receives (plus what `options.context` returns). */
export interface GraphqlContext {
  /** The caller (`request.auth`); for subscriptions, the caller of the WebSocket upgrade. */
  auth: AuthContext | null;
  /** The HTTP request; for subscriptions, the upgrade request. */
  request: FastifyRequest;
  /** Publishes to the subscribers of this endpoint (see `GraphqlEndpoint.publish`). */
  publish: (topic: string, payload: unknown) => Promise<void>;
  /** Mercurius's subscription helper; in a `subscribe` resolver: `ctx.pubsub.subscribe(topic)`. */
  pubsub: MercuriusContext['pubsub'];
  app: FastifyInstance;
}

export interface GraphqlMountOptions<TContext extends object = object> {
  /** Where the endpoint answers, e.g. `/devicehub/v2`. */
  path: string;
  /** The schema, in SDL. */
  schema: string;
  /** Query, Mutation, Subscription and type resolvers, as mercurius takes them. */
  resolvers: IResolvers<any, GraphqlContext & TContext>;
  /** Extra resolver context, built per request (per connection for subscriptions). */
  context?: (request: FastifyRequest) => TContext | Promise<TContext>;
  /** GraphQL subscriptions over a WebSocket on the same path. */
  subscriptions?: boolean;
  /** Deepest field nesting allowed (default 12). */
  maxDepth?: number;
  /** Highest static cost allowed (default 5000); see `queryLimitsRule`. */
  maxCost?: number;
  /** The factor of a list field without a size argument (default 10). */
  defaultListSize?: number;
  /** Route permission of the endpoint's routes (default `read`). */
  permission?: 'read' | 'public';
  /**
   * Compile a query with graphql-jit after it has run this many times (mercurius's `jit`);
   * default 1, so repeated queries (dashboards, paging walks) run compiled. 0 turns it off.
   */
  jit?: number;
}

/** A mounted endpoint. */
export interface GraphqlEndpoint {
  path: string;
  /**
   * Delivers `payload` to the subscriptions of this endpoint listening on `topic` (a subscription
   * resolver `subscribe: (_r, _a, ctx) => ctx.pubsub.subscribe(topic)`; the payload is the
   * subscription's root value, so `{ FieldName: value }` by default). Throws when the endpoint
   * was mounted without `subscriptions`.
   */
  publish: (topic: string, payload: unknown) => Promise<void>;
}

interface PublishingPubSub {
  publish: (event: { topic: string; payload: unknown }, callback?: () => void) => void;
}

const kOperationName = Symbol('graphql.operationName');

/** Mounts one GraphQL endpoint on `app`; see the top of this file. */
export async function mountGraphql<TContext extends object = object>(
  app: FastifyInstance,
  options: GraphqlMountOptions<TContext>,
): Promise<GraphqlEndpoint> {
  const permission = options.permission ?? 'read';
  const limits: QueryLimits = {
    maxDepth: positiveInteger(options.maxDepth ?? DEFAULT_MAX_DEPTH, 'maxDepth'),
    maxCost: positiveInteger(options.maxCost ?? DEFAULT_MAX_COST, 'maxCost'),
    defaultListSize: positiveInteger(options.defaultListSize ?? DEFAULT_LIST_SIZE, 'defaultListSize'),
  };
  const schema = buildSchema(options.schema);
  const subscriptions = options.subscriptions === true;
  const rules = [queryLimitsRule(limits)];

  let pubsub: PublishingPubSub | undefined;
  const publish = (topic: string, payload: unknown): Promise<void> => {
    if (!pubsub) {
      return Promise.reject(new Error(`GraphQL endpoint ${options.path} was mounted without subscriptions`));
    }
    const target = pubsub;
    return new Promise((resolve) => target.publish({ topic, payload }, () => resolve()));
  };

  const baseContext = async (request: FastifyRequest): Promise<Record<string | symbol, unknown>> => ({
    ...((await options.context?.(request)) ?? {}),
    request,
    publish,
    // Last, so that nothing a module returns can stand in for the caller.
    auth: request.auth ?? null,
  });

  if (subscriptions && !app.hasDecorator('websocketServer')) {
    await app.register(websocket, { options: { maxPayload: 1024 * 1024 } });
    app.addHook('onResponse', closeRefusedUpgrade);
  }

  await app.register(async (endpoint) => {
    // Every route of this endpoint (POST, GET, the upgrade GET, Fastify's HEAD) is declared with
    // the permission; the authentication hook reads it from `routeOptions.config`.
    endpoint.addHook('onRoute', (route) => {
      route.config = { ...route.config, permission };
    });
    if (subscriptions) endpoint.addHook('onResponse', closeRefusedUpgrade);

    await endpoint.register(mercurius, {
      schema,
      resolvers: (subscriptions
        ? guardSubscribeResolvers(schema, options.resolvers)
        : options.resolvers) as unknown as IResolvers,
      path: options.path,
      graphiql: false,
      jit: options.jit ?? 1,
      additionalRouteOptions: { config: { permission } },
      validationRules: rules,
      errorFormatter: formatErrors,
      context: async (request) => {
        const context = await baseContext(request);
        const body = request.body as { operationName?: unknown } | undefined;
        context[kOperationName] = request.method === 'POST' ? body?.operationName : undefined;
        return context;
      },
      ...(subscriptions
        ? { subscription: { context: (_socket: unknown, request: FastifyRequest) => baseContext(request) } }
        : {}),
    });

    // Before execution: a mutation needs an admin.
    endpoint.graphql.addHook('preExecution', async (_schema, document, context) => {
      const ctx = context as unknown as Record<string | symbol, unknown>;
      const operationName = typeof ctx[kOperationName] === 'string' ? ctx[kOperationName] : undefined;
      const auth = ctx.auth as AuthContext | null | undefined;
      if (auth?.role !== 'admin' && isMutation(document, operationName)) {
        throw new AppError(403, 'FORBIDDEN', VIEWER_MUTATION_MESSAGE);
      }
    });

    // Mercurius runs no validation on a subscription: run the same rules as for queries.
    endpoint.graphql.addHook('preSubscriptionExecution', async (currentSchema, document) => {
      const errors = validate(currentSchema, document, [...specifiedRules, ...rules]);
      if (errors[0]) throw errors[0];
    });

    pubsub = subscriptions ? (endpoint.graphql.pubsub as unknown as PublishingPubSub) : undefined;
  });

  return { path: options.path, publish };
}

/**
 * An upgrade request answered over HTTP (refused by the authentication hook, say) leaves its
 * socket open: `@fastify/websocket` closes it only when its own onRequest hook ran, and a hook
 * added before it (the authentication hook) that refuses the request skips that. The socket,
 * paused and never read again, then stays half-open forever and keeps `app.close()` from ending.
 */
function closeRefusedUpgrade(request: FastifyRequest, _reply: unknown, done: () => void): void {
  const socket = request.raw.socket as Socket | undefined;
  if (request.headers.upgrade !== undefined && socket && !socket.destroyed) socket.destroy();
  done();
}

// ---------------------------------------------------------------------------------------------
// Errors

/**
 * Mercurius's error formatter for every error of this endpoint: execution results, errors thrown
 * before execution (validation, the viewer check, the authentication hook, malformed bodies) and
 * subscription events.
 */
function formatErrors(
  execution: ExecutionResult & Required<Pick<ExecutionResult, 'errors'>>,
  context: MercuriusContext,
): { statusCode: number; response: { errors: GraphQLFormattedError[]; data: ExecutionResult['data'] } } {
  const log = logOf(context);
  let statusCode = 200;
  const errors: GraphQLFormattedError[] = [];
  for (const error of execution.errors) {
    const original = error.originalError as (Error & { statusCode?: unknown; errors?: unknown }) | undefined;
    const executing = error.path !== undefined;
    if (original && Array.isArray(original.errors)) {
      // Mercurius's wrapper of validation errors (and of "GET cannot mutate").
      statusCode = Math.max(statusCode, httpStatusOf(original) ?? 400);
      for (const inner of original.errors as Error[]) errors.push(formatted(toGraphqlError(inner)));
      continue;
    }
    const exposed = exposedError(error, executing);
    if (exposed) {
      errors.push({ ...formatted(error), message: exposed.message, ...extensionsOf(error, exposed.code) });
      if (!executing) statusCode = Math.max(statusCode, exposed.status);
    } else {
      log.error({ err: original ?? error }, 'graphql: unexpected error');
      errors.push({ ...formatted(error), message: 'internal error', extensions: { code: 'internal' } });
      if (!executing) statusCode = Math.max(statusCode, 500);
    }
  }
  return { statusCode, response: { errors, data: execution.data ?? null } };
}

/** What of an error may be shown to the caller, or undefined to mask it. */
function exposedError(
  error: GraphQLError,
  executing: boolean,
): { message: string; code?: string; status: number } | undefined {
  const original = error.originalError as (Error & { statusCode?: unknown; code?: unknown }) | undefined;
  if (original instanceof AppError)
    return { message: original.message, code: original.code, status: original.status };
  // GraphQL's own errors (syntax, validation, coercion) and deliberate GraphQL errors.
  if (!original || original instanceof GraphQLError) return { message: error.message, status: 400 };
  if (original instanceof mercurius.ErrorWithProps) {
    return { message: original.message, status: httpStatusOf(original) ?? 200 };
  }
  // Before execution: Fastify's and mercurius's client errors (malformed body, media type...).
  const status = httpStatusOf(original);
  if (!executing && status !== undefined && status < 500) {
    return {
      message: original.message,
      code: typeof original.code === 'string' ? original.code : undefined,
      status,
    };
  }
  return undefined;
}

function httpStatusOf(err: { statusCode?: unknown }): number | undefined {
  const status = err.statusCode;
  return typeof status === 'number' && status >= 400 && status <= 599 ? status : undefined;
}

function extensionsOf(
  error: GraphQLError,
  code: string | undefined,
): Pick<GraphQLFormattedError, 'extensions'> {
  const extensions = { ...error.extensions, ...(code === undefined ? {} : { code }) };
  return Object.keys(extensions).length > 0 ? { extensions } : {};
}

function formatted(error: GraphQLError): GraphQLFormattedError {
  return error.toJSON();
}

function toGraphqlError(err: Error): GraphQLError {
  if (err instanceof GraphQLError) return err;
  const extensions = (err as { extensions?: Record<string, unknown> }).extensions;
  return new GraphQLError(err.message, { originalError: err, ...(extensions ? { extensions } : {}) });
}

function logOf(context: MercuriusContext | undefined): Pick<FastifyRequest['log'], 'error'> {
  const ctx = context as (Partial<MercuriusContext> & { request?: FastifyRequest }) | undefined;
  return ctx?.reply?.request?.log ?? ctx?.request?.log ?? ctx?.app?.log ?? console;
}

/**
 * A `subscribe` resolver's error reaches the WebSocket client without the error formatter: map it
 * here the same way (AppError shown with its code, anything else logged and masked).
 */
function guardSubscribeResolvers<T extends object>(schema: GraphQLSchema, resolvers: T): T {
  const typeName = schema.getSubscriptionType()?.name;
  const fields = typeName ? (resolvers as Record<string, unknown>)[typeName] : undefined;
  if (!typeName || !fields || typeof fields !== 'object') return resolvers;
  const guarded: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(fields)) {
    const subscribe = (field as { subscribe?: unknown } | undefined)?.subscribe;
    if (typeof subscribe !== 'function') {
      guarded[name] = field;
      continue;
    }
    guarded[name] = {
      ...(field as object),
      subscribe: async (root: unknown, args: unknown, context: Record<string, unknown>, info: unknown) => {
        try {
          return await subscribe(root, args, context, info);
        } catch (err) {
          if (err instanceof GraphQLError) throw err;
          if (err instanceof AppError)
            throw new GraphQLError(err.message, { extensions: { code: err.code } });
          logOf(context as unknown as MercuriusContext).error({ err }, 'graphql: unexpected error');
          throw new GraphQLError('internal error', { extensions: { code: 'internal' } });
        }
      },
    };
  }
  return { ...resolvers, [typeName]: guarded };
}

// ---------------------------------------------------------------------------------------------
// Permission

/**
 * Whether the operation that will run is a mutation. When it cannot be told (several operations
 * and no valid name, which execution will refuse anyway), any mutation in the document counts.
 */
export function isMutation(document: DocumentNode, operationName?: string): boolean {
  const operation = getOperationAST(document, operationName);
  if (operation) return operation.operation === 'mutation';
  return document.definitions.some((d) => d.kind === Kind.OPERATION_DEFINITION && d.operation === 'mutation');
}

// ---------------------------------------------------------------------------------------------
// Depth and cost

export interface QueryLimits {
  maxDepth: number;
  maxCost: number;
  defaultListSize: number;
}

export interface QueryMeasure {
  /** Deepest field nesting; top-level fields are depth 1. Introspection fields do not count. */
  depth: number;
  /**
   * Static cost: every field costs 1, plus the cost of its selection; for a list field, the cost
   * of its selection is multiplied by the list's size: its `Limit`/`limit`/`first` argument (also
   * found inside an input object argument, `input: { Limit: 50 }`), else the size argument of
   * the enclosing field (`ListDevices(input: { Limit: 50 }) { Items { ... } }`), else the default
   * list size. A variable counts with its default value, or the default list size.
   */
  cost: number;
  /** Deepest nesting of lists inside introspection fields. */
  introspectionListNesting: number;
}

const LIMIT_ARGUMENTS = new Set(['Limit', 'limit', 'first']);

/**
 * A validation rule enforcing the depth and cost limits, with messages such as
 * `query depth 15 exceeds the maximum of 12` and `query cost 10101 exceeds the maximum of 5000`.
 * It only reads the document, so mercurius may cache its verdict per query text.
 */
export function queryLimitsRule(limits: QueryLimits): ValidationRule {
  return (context: ValidationContext) => ({
    OperationDefinition(node: OperationDefinitionNode) {
      const measure = measureOperation(
        context.getSchema(),
        node,
        (name) => context.getFragment(name),
        limits,
      );
      const kind = node.operation;
      if (measure.depth > limits.maxDepth) {
        context.reportError(
          new GraphQLError(`${kind} depth ${measure.depth} exceeds the maximum of ${limits.maxDepth}`, {
            nodes: [node],
            extensions: { code: 'QUERY_TOO_DEEP' },
          }),
        );
      }
      if (measure.cost > limits.maxCost) {
        context.reportError(
          new GraphQLError(`${kind} cost ${measure.cost} exceeds the maximum of ${limits.maxCost}`, {
            nodes: [node],
            extensions: { code: 'QUERY_TOO_COSTLY' },
          }),
        );
      }
      if (measure.introspectionListNesting > MAX_INTROSPECTION_LIST_NESTING) {
        context.reportError(
          new GraphQLError(
            `introspection nests lists ${measure.introspectionListNesting} deep, the maximum is ${MAX_INTROSPECTION_LIST_NESTING}`,
            { nodes: [node], extensions: { code: 'QUERY_TOO_COSTLY' } },
          ),
        );
      }
    },
  });
}

/** Measures one operation of a document (fragments expanded, each fragment measured once). */
export function measureOperation(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  getFragment: (name: string) => FragmentDefinitionNode | null | undefined,
  limits: Pick<QueryLimits, 'defaultListSize'>,
): QueryMeasure {
  const variableDefaults = new Map<string, number>();
  for (const definition of operation.variableDefinitions ?? []) {
    const value = definition.defaultValue;
    if (value?.kind === Kind.INT) variableDefaults.set(definition.variable.name.value, Number(value.value));
  }
  const fragmentMeasures = new Map<string, { depth: number; cost: number }>();
  const fragmentNesting = new Map<string, number>();
  const visiting = new Set<string>();
  let introspectionListNesting = 0;

  const sizeOf = (value: ValueNode): number | undefined => {
    if (value.kind === Kind.INT) return Math.max(0, Number(value.value));
    if (value.kind === Kind.VARIABLE) return variableDefaults.get(value.name.value);
    return undefined;
  };
  const limitOf = (field: FieldNode): number | undefined => {
    for (const argument of field.arguments ?? []) {
      if (LIMIT_ARGUMENTS.has(argument.name.value)) return sizeOf(argument.value);
    }
    for (const argument of field.arguments ?? []) {
      if (argument.value.kind !== Kind.OBJECT) continue;
      for (const inner of argument.value.fields) {
        if (LIMIT_ARGUMENTS.has(inner.name.value)) return sizeOf(inner.value);
      }
    }
    return undefined;
  };
  const fieldDefinition = (parent: GraphQLNamedType | undefined, name: string) => {
    if (name === SchemaMetaFieldDef.name) return SchemaMetaFieldDef;
    if (name === TypeMetaFieldDef.name) return TypeMetaFieldDef;
    if (parent && (isObjectType(parent) || isInterfaceType(parent))) return parent.getFields()[name];
    return undefined;
  };
  const typeCondition = (name: string | undefined, parent: GraphQLNamedType | undefined) =>
    name === undefined ? parent : (schema.getType(name) ?? undefined);

  /** Lists nested inside an introspection field. */
  const nesting = (selectionSet: SelectionSetNode, parent: GraphQLNamedType | undefined): number => {
    let deepest = 0;
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) {
        const type = fieldDefinition(parent, selection.name.value)?.type;
        const own = type && isListType(getNullableType(type)) ? 1 : 0;
        const inner = selection.selectionSet
          ? nesting(selection.selectionSet, type && getNamedType(type))
          : 0;
        deepest = Math.max(deepest, own + inner);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        deepest = Math.max(
          deepest,
          nesting(selection.selectionSet, typeCondition(selection.typeCondition?.name.value, parent)),
        );
      } else {
        const name = selection.name.value;
        let value = fragmentNesting.get(name);
        if (value === undefined) {
          const fragment = getFragment(name);
          if (!fragment || visiting.has(name)) continue; // unknown or cyclic: validation reports it
          visiting.add(name);
          value = nesting(fragment.selectionSet, typeCondition(fragment.typeCondition.name.value, parent));
          visiting.delete(name);
          fragmentNesting.set(name, value);
        }
        deepest = Math.max(deepest, value);
      }
    }
    return deepest;
  };

  const measure = (
    selectionSet: SelectionSetNode,
    parent: GraphQLNamedType | undefined,
    inheritedLimit: number | undefined,
  ): { depth: number; cost: number } => {
    let depth = 0;
    let cost = 0;
    for (const selection of selectionSet.selections) {
      let inner: { depth: number; cost: number };
      if (selection.kind === Kind.FIELD) {
        const name = selection.name.value;
        if (name.startsWith('__')) {
          if (selection.selectionSet) {
            const type = fieldDefinition(parent, name)?.type;
            const found = nesting(selection.selectionSet, type && getNamedType(type));
            introspectionListNesting = Math.max(introspectionListNesting, found);
          }
          continue;
        }
        const type = fieldDefinition(parent, name)?.type;
        const list = type !== undefined && isListType(getNullableType(type));
        const limit = limitOf(selection);
        const children = selection.selectionSet
          ? measure(selection.selectionSet, type && getNamedType(type), list ? undefined : limit)
          : { depth: 0, cost: 0 };
        const factor = list ? (limit ?? inheritedLimit ?? limits.defaultListSize) : 1;
        inner = { depth: 1 + children.depth, cost: 1 + factor * children.cost };
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        inner = measure(
          selection.selectionSet,
          typeCondition(selection.typeCondition?.name.value, parent),
          inheritedLimit,
        );
      } else {
        const name = selection.name.value;
        const key = `${name}\u0000${inheritedLimit ?? ''}`;
        let known = fragmentMeasures.get(key);
        if (!known) {
          const fragment = getFragment(name);
          if (!fragment || visiting.has(name)) continue; // unknown or cyclic: validation reports it
          visiting.add(name);
          known = measure(
            fragment.selectionSet,
            typeCondition(fragment.typeCondition.name.value, parent),
            inheritedLimit,
          );
          visiting.delete(name);
          fragmentMeasures.set(key, known);
        }
        inner = known;
      }
      depth = Math.max(depth, inner.depth);
      cost += inner.cost;
    }
    return { depth, cost };
  };

  const root = schema.getRootType(operation.operation) ?? undefined;
  const { depth, cost } = measure(operation.selectionSet, root, undefined);
  return { depth, cost, introspectionListNesting };
}

function positiveInteger(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`GraphQL option ${name} must be a positive integer`);
  return value;
}
