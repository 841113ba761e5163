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
 *   `graphql-transport-ws`. GraphiQL is off. A service whose hook allows it (`socketInitAuth`)
 *   takes a socket's credentials from its `connection_init` payload (`socket-auth.ts`).
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
import type { WebSocket, WebSocketServer } from 'ws';
import mercurius, { type IResolvers, type MercuriusContext } from 'mercurius';
import { buildSchema, specifiedRules, validate, type ValidationRule } from 'graphql';
import { AppError, ERRORS } from '../errors.js';
import { jsonBytes } from '../http/json-bytes.js';
import type { AuthContext } from '../http/auth-types.js';
import { formatErrors, guardSubscribeResolvers } from './errors.js';
import {
  cacheEntries,
  checkDocumentShape,
  checkQuerySize,
  MAX_DOCUMENT_NESTING,
  DEFAULT_CACHE_BYTES,
  DEFAULT_MAX_ALIASES,
  DEFAULT_MAX_FIELDS,
  DEFAULT_MAX_QUERY_BYTES,
  DEFAULT_LIST_SIZE,
  DEFAULT_MAX_COST,
  DEFAULT_MAX_DEPTH,
  queryLimitsRule,
  type DocumentLimits,
  type QueryLimits,
} from './limits.js';
import { isMutation, VIEWER_MUTATION_MESSAGE } from './permission.js';
import { authenticateOnConnectionInit } from './socket-auth.js';
import { graphqlDefaultsOf } from './defaults.js';
import { directAnswers } from './direct.js';

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
  /**
   * Query, Mutation, Subscription and type resolvers, as mercurius takes them (source `never`: each
   * field resolver names the type of its own parent object).
   */
  resolvers: IResolvers<never, GraphqlContext & TContext>;
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
  /** Largest query document, bytes (default 64 KiB); checked before parsing. */
  maxQueryBytes?: number;
  /** Most aliases in a document (default 100). */
  maxAliases?: number;
  /** Most fields written in a document (default 500), `__typename` included. */
  maxFields?: number;
  /** Memory for the endpoint's parsed and compiled query caches, bytes (default 64 MiB). */
  cacheBytes?: number;
  /** Route permission of the endpoint's routes (default `read`). */
  permission?: 'read' | 'public';
  /**
   * Compile a query with graphql-jit after it has run this many times (mercurius's `jit`);
   * default 1, so repeated queries (dashboards, paging walks) run compiled. 0 turns it off.
   */
  jit?: number;
  /**
   * Root Query fields answered without the executor when the document is plain (`direct.ts`): the
   * resolver's value written as JSON straight from the selection. Their resolvers must only read
   * (a query the writer cannot answer exactly runs again in mercurius).
   */
  directQueries?: readonly string[];
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
  const defaults = graphqlDefaultsOf(app);
  const documentLimits = {
    maxQueryBytes: positiveInteger(
      options.maxQueryBytes ?? defaults.maxQueryBytes ?? DEFAULT_MAX_QUERY_BYTES,
      'maxQueryBytes',
    ),
    maxAliases: positiveInteger(
      options.maxAliases ?? defaults.maxAliases ?? DEFAULT_MAX_ALIASES,
      'maxAliases',
    ),
    maxFields: positiveInteger(options.maxFields ?? defaults.maxFields ?? DEFAULT_MAX_FIELDS, 'maxFields'),
  };
  const cacheBytes = positiveInteger(
    options.cacheBytes ?? defaults.cacheBytes ?? DEFAULT_CACHE_BYTES,
    'cacheBytes',
  );
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

  const baseContext = contextOf(options, publish);

  if (subscriptions && !app.hasDecorator('websocketServer')) {
    await app.register(websocket, { options: { maxPayload: 1024 * 1024 } });
    app.addHook('onResponse', closeRefusedUpgrade);
  }

  await app.register(async (endpoint) => {
    if (subscriptions) guardSockets(endpoint.websocketServer);
    // Every route of this endpoint (POST, GET, the upgrade GET, Fastify's HEAD) is declared with
    // the permission; the authentication hook reads it from `routeOptions.config`. The upgrade
    // GET may carry its credentials in `connection_init` instead (when the service's hook allows).
    endpoint.addHook('onRoute', (route) => {
      route.config = { ...route.config, permission, ...(route.wsHandler ? { socketInitAuth: true } : {}) };
    });
    if (subscriptions) endpoint.addHook('onResponse', closeRefusedUpgrade);
    answerHooks(endpoint);
    if (options.directQueries?.length)
      directHook(endpoint, options, baseContext, { rules, limits: documentLimits });

    await endpoint.register(mercurius, {
      schema,
      resolvers: (subscriptions
        ? guardSubscribeResolvers(schema, options.resolvers)
        : options.resolvers) as unknown as IResolvers,
      path: options.path,
      graphiql: false,
      jit: options.jit ?? 1,
      cache: cacheEntries(cacheBytes, documentLimits),
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

    documentHooks(endpoint, documentLimits, rules, connectionCheckOf(app));

    pubsub = subscriptions ? (endpoint.graphql.pubsub as unknown as PublishingPubSub) : undefined;
  });

  return { path: options.path, publish };
}

/**
 * The direct answers of `options.directQueries` (direct.ts), in a `preHandler` of the endpoint:
 * after authentication and the checks of the body (the server's and this endpoint's hooks).
 */
function directHook<TContext extends object>(
  endpoint: FastifyInstance,
  options: GraphqlMountOptions<TContext>,
  baseContext: (request: FastifyRequest) => Promise<Record<string | symbol, unknown>>,
  checks: { rules: ValidationRule[]; limits: DocumentLimits },
): void {
  const direct = directAnswers(
    () => endpoint.graphql.schema,
    (options.resolvers as { Query?: Record<string, unknown> }).Query,
    options.directQueries ?? [],
    checks.rules,
    checks.limits,
  );
  endpoint.addHook('preHandler', async (request, reply) => {
    if (request.method !== 'POST') return;
    const bytes = await direct(request.body, async () => ({
      app: endpoint,
      reply,
      ...(await baseContext(request)),
    }));
    if (bytes) return reply.type('application/json; charset=utf-8').send(bytes);
  });
}

/**
 * How an endpoint answers: a request's own mistake as a 400 that says what, and an answer without
 * errors written as bytes.
 */
function answerHooks(endpoint: FastifyInstance): void {
  // An answer without errors leaves as bytes written piece by piece (json-bytes.ts: a page of
  // 1,000 registers cost 5 ms more as one string). With errors, mercurius's response schema
  // writes it, as before (it gives an error's path as strings).
  endpoint.addHook('preSerialization', async (_request, reply, payload) => {
    // Fastify sends a Buffer from a serializer as it is (its type says string).
    if (plainAnswer(payload)) reply.serializer(jsonBytes as unknown as (payload: unknown) => string);
    return payload;
  });
  // The body or query string of a request, before the route schema coerces it (123 would become
  // "123"): a mistake of the caller is a 400 that says what.
  endpoint.addHook('preValidation', async (request, reply) => {
    if (request.headers.upgrade !== undefined) return;
    const problem = requestProblem(request.method === 'POST' ? request.body : request.query);
    if (problem) {
      return reply.code(ERRORS.badRequest.status).send({
        errors: [{ message: problem, extensions: { code: ERRORS.badRequest.code } }],
        data: null,
      });
    }
  });
}

/** A GraphQL answer without errors (an object with `data`, no `errors`). */
const plainAnswer = (payload: unknown): boolean =>
  typeof payload === 'object' &&
  payload !== null &&
  !Array.isArray(payload) &&
  (payload as { errors?: unknown }).errors === undefined;

/** The context of every operation: the module's, the request, `publish` and the caller. */
function contextOf<TContext extends object>(
  options: GraphqlMountOptions<TContext>,
  publish: GraphqlEndpoint['publish'],
) {
  return async (request: FastifyRequest): Promise<Record<string | symbol, unknown>> => ({
    ...((await options.context?.(request)) ?? {}),
    request,
    publish,
    // Last, so that nothing a module returns can stand in for the caller.
    auth: request.auth ?? null,
  });
}

/** The checks of an endpoint's documents: size and shape, mutations for admins, subscriptions validated. */
function documentHooks(
  endpoint: FastifyInstance,
  documentLimits: DocumentLimits,
  rules: ValidationRule[],
  connectionCheck: GraphqlConnectionCheck | undefined,
): void {
  // Before parsing and before validation: the size and shape of the document. Errors thrown
  // here are not cached by mercurius, so refused documents do not stay in memory.
  endpoint.graphql.addHook('preParsing', async (_schema, source) => checkQuerySize(source, documentLimits));
  endpoint.graphql.addHook('preValidation', async (_schema, document) =>
    checkDocumentShape(document, documentLimits),
  );
  endpoint.graphql.addHook('preSubscriptionParsing', async (_schema, source) =>
    checkQuerySize(source, documentLimits),
  );

  // Before execution: a mutation needs an admin (or a bridged operator, see `Role`).
  endpoint.graphql.addHook('preExecution', async (_schema, document, context) => {
    const ctx = context as unknown as Record<string | symbol, unknown>;
    const operationName = typeof ctx[kOperationName] === 'string' ? ctx[kOperationName] : undefined;
    const auth = ctx.auth as AuthContext | null | undefined;
    if (auth?.role !== 'admin' && auth?.role !== 'operator' && isMutation(document, operationName)) {
      throw new AppError(ERRORS.graphqlForbidden, VIEWER_MUTATION_MESSAGE);
    }
  });

  // Mercurius runs no validation on a subscription: run the same rules as for queries.
  endpoint.graphql.addHook('preSubscriptionExecution', async (currentSchema, document, context) => {
    if (connectionCheck) {
      const ctx = context as unknown as { request: FastifyRequest; _connectionInit?: unknown };
      connectionCheck(ctx.request, ctx._connectionInit);
    }
    checkDocumentShape(document, documentLimits);
    const errors = validate(currentSchema, document, [...specifiedRules, ...rules]);
    if (errors[0]) throw errors[0];
  });
}

/**
 * The checks of a subscription socket's messages. Each wraps the socket's `emit` on `connection`,
 * the later one outside: the credentials of connection_init are checked before anything else.
 */
function guardSockets(wss: WebSocketServer): void {
  refuseDeepSocketDocuments(wss);
  authenticateOnConnectionInit(wss);
}

const guardedServers = new WeakSet<object>();

/**
 * Mercurius parses a subscription's document before any hook of ours runs (its
 * `preSubscriptionParsing` comes after `parse`): on the server's GraphQL sockets, a `subscribe`
 * (or legacy `start`) message whose query nests deeper than `MAX_DOCUMENT_NESTING` is answered
 * with the protocol's `error` message (`QUERY_TOO_DEEP`) and never reaches mercurius. Installed
 * on `connection`, which `@fastify/websocket` emits before it hands the socket to mercurius.
 */
function refuseDeepSocketDocuments(wss: WebSocketServer): void {
  if (guardedServers.has(wss)) return;
  guardedServers.add(wss);
  wss.on('connection', (socket: WebSocket) => {
    if (socket.protocol !== 'graphql-transport-ws' && socket.protocol !== 'graphql-ws') return;
    const emit = socket.emit.bind(socket);
    socket.emit = ((event: string | symbol, ...args: unknown[]): boolean => {
      if (event === 'message') {
        const refusal = deepDocumentRefusal(args[0]);
        if (refusal) {
          socket.send(refusal);
          return true;
        }
      }
      return emit(event, ...args);
    }) as typeof socket.emit;
  });
}

/** Whether `text` has more than `max` of `(`, `[` and `{`, wherever they are. */
function openingsOver(text: string, max: number): boolean {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c === 0x28 || c === 0x5b || c === 0x7b) && ++n > max) return true;
  }
  return false;
}

/** The `error` message for a subscribe message whose document is too deep; null otherwise. */
function deepDocumentRefusal(data: unknown): string | null {
  const text = Buffer.isBuffer(data) ? data.toString('utf8') : typeof data === 'string' ? data : null;
  // The query is a JSON string inside the message: read it only when the message has enough
  // opening brackets at all to be too deep (most messages have a handful).
  if (text === null || !openingsOver(text, MAX_DOCUMENT_NESTING)) return null;
  let message: { id?: unknown; payload?: { query?: unknown } } | null;
  try {
    message = JSON.parse(text) as { id?: unknown; payload?: { query?: unknown } } | null;
  } catch {
    return null; // mercurius answers that it is not JSON
  }
  const query = message?.payload?.query;
  if (typeof query !== 'string') return null;
  try {
    checkQuerySize(query, { maxQueryBytes: Infinity });
    return null;
  } catch (err) {
    const e = err as AppError;
    return JSON.stringify({
      id: message?.id,
      type: 'error',
      payload: [{ message: e.message, extensions: { code: e.code } }],
    });
  }
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

/** What is wrong with a request's `{ query, variables, operationName }`, or undefined. */
function requestProblem(params: unknown): string | undefined {
  if (params === null || typeof params !== 'object' || Array.isArray(params))
    return 'the request must be an object { query, variables, operationName }';
  const { query, variables, operationName } = params as Record<string, unknown>;
  if (typeof query !== 'string') return `query must be a string, got ${describe(query)}`;
  if (variables !== undefined && variables !== null) {
    let vars = variables;
    // GET carries variables as JSON text.
    if (typeof vars === 'string') {
      try {
        vars = JSON.parse(vars);
      } catch {
        return 'variables must be an object (JSON text on GET)';
      }
    }
    if (vars === null || typeof vars !== 'object' || Array.isArray(vars))
      return `variables must be an object, got ${describe(variables)}`;
  }
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string')
    return `operationName must be a string, got ${describe(operationName)}`;
  return undefined;
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}

/**
 * A service's check of a subscription's WebSocket: the upgrade request (authenticated by the
 * service's hook) and the `connection_init` payload; throws an `AppError` to refuse the
 * subscription (the edge's CSRF rule for the session cookie).
 */
export type GraphqlConnectionCheck = (request: FastifyRequest, connectionInit: unknown) => void;

const kConnectionCheck = Symbol.for('millwright.graphqlConnectionCheck');

/** Sets the connection check of every GraphQL endpoint mounted on `app` later. */
export function setGraphqlConnectionCheck(app: FastifyInstance, check: GraphqlConnectionCheck): void {
  (app as unknown as Record<symbol, GraphqlConnectionCheck>)[kConnectionCheck] = check;
}

function connectionCheckOf(app: FastifyInstance): GraphqlConnectionCheck | undefined {
  return (app as unknown as Record<symbol, GraphqlConnectionCheck | undefined>)[kConnectionCheck];
}

function positiveInteger(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`GraphQL option ${name} must be a positive integer`);
  return value;
}
