/**
 * The HTTP(S) server every service runs on: Fastify with a certificate created on first start and
 * kept in the data directory, strict bodies and lenient query strings, form bodies, cookies, the
 * one error shape, request logging without secrets, and a listen/close pair that names the option
 * to change when a port is taken and finishes in-flight requests on shutdown.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { hostname } from 'node:os';
import { join } from 'node:path';
import Fastify, {
  LogController,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type preValidationHookHandler,
} from 'fastify';
import cookie from '@fastify/cookie';
import type { Logger } from 'pino';
import { installErrorHandler } from './error-handler.js';
import { checkPagingQuery, pagingCheckOf } from '../paging/rest.js';
import { installJsonBodyParser } from './json-body.js';
import { answerPlainHttpOnTls } from './plain-http-hint.js';
import { lazyRequestLogger } from './request-logger.js';
import { lazySchemaCompilers } from './lazy-schemas.js';
import { selfSignedCertificate } from './self-signed.js';
import { AppError, ERRORS } from '../errors.js';
import { ConfigError, PortInUseError } from '../config.js';
import { Value } from '@sinclair/typebox/value';
import { HTTP_OPTIONS, type GraphqlConfig, type HttpConfig } from '../service/options.js';
import { setGraphqlDefaults } from '../graphql/defaults.js';
import { noteResponse } from '../memory.js';

export interface HttpAppOptions {
  logger: Logger;
  /** The service's GraphQL options: the defaults of every endpoint mounted on the app. */
  graphql?: Partial<GraphqlConfig>;
  /** Plain HTTP (behind a TLS-terminating proxy); HTTPS otherwise. */
  plainHttp: boolean;
  /** Where the self-signed certificate is kept (`<dataDir>/tls/`). */
  dataDir: string;
  /** A certificate and key of the user's, instead of the self-signed one. */
  tlsCertFile?: string | undefined;
  tlsKeyFile?: string | undefined;
  bodyLimit?: number;
  /**
   * The service's HTTP timeouts and connection limit (`--http-*`); a missing one takes its
   * default (`HTTP_DEFAULTS`).
   */
  limits?: Partial<HttpConfig>;
}

/** Defaults of the `--http-*` options, from their schema. */
export const HTTP_DEFAULTS: HttpConfig = Value.Default(HTTP_OPTIONS, {}) as HttpConfig;

/** The `--http-*` options with their defaults filled in, checked against each other. */
export function httpLimits(given: Partial<HttpConfig> = {}): HttpConfig {
  const limits = { ...HTTP_DEFAULTS };
  for (const key of Object.keys(HTTP_DEFAULTS) as (keyof HttpConfig)[]) {
    const v = given[key];
    if (v !== undefined) limits[key] = v;
  }
  if (limits.httpHeadersTimeout > limits.httpRequestTimeout) {
    throw new ConfigError(
      `http-headers-timeout (${limits.httpHeadersTimeout}) cannot be longer than http-request-timeout (${limits.httpRequestTimeout})`,
    );
  }
  return limits;
}

export interface TlsMaterial {
  cert: string;
  key: string;
  /** Whether it was created by this call (first start). */
  created: boolean;
  certFile: string;
}

/** Loads the service's certificate, creating a self-signed one on first start. */
export async function ensureCertificate(
  dataDir: string,
  certFile?: string,
  keyFile?: string,
): Promise<TlsMaterial> {
  if (certFile || keyFile) {
    if (!certFile || !keyFile) throw new ConfigError('tls-cert and tls-key must be given together');
    return {
      cert: readFileSync(certFile, 'utf8'),
      key: readFileSync(keyFile, 'utf8'),
      created: false,
      certFile,
    };
  }
  const dir = join(dataDir, 'tls');
  const crt = join(dir, 'server.crt');
  const key = join(dir, 'server.key');
  if (existsSync(crt) && existsSync(key)) {
    return { cert: readFileSync(crt, 'utf8'), key: readFileSync(key, 'utf8'), created: false, certFile: crt };
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const now = new Date();
  const host = hostname() || 'localhost';
  const pems = selfSignedCertificate({
    commonName: host,
    notBefore: new Date(now.getTime() - 60_000),
    notAfter: new Date(now.getTime() + 825 * 24 * 3600 * 1000),
    dnsNames: ['localhost', host],
    ipAddresses: ['127.0.0.1', '::1'],
  });
  writeFileSync(key, pems.private, { mode: 0o600 });
  writeFileSync(crt, pems.cert, { mode: 0o644 });
  return { cert: pems.cert, key: pems.private, created: true, certFile: crt };
}

const SECRET_QUERY = /([?&](?:client_secret|password|token|access_token|jwtAccess|code)=)[^&]*/gi;

/** A URL with the values of secret-bearing query parameters replaced. */
export function redactUrlQuery(url: string): string {
  return url.replace(SECRET_QUERY, '$1[redacted]');
}

export async function createHttpApp(
  options: HttpAppOptions,
): Promise<{ app: FastifyInstance; tls: TlsMaterial | null }> {
  const tls = options.plainHttp
    ? null
    : await ensureCertificate(options.dataDir, options.tlsCertFile, options.tlsKeyFile);
  const limits = httpLimits(options.limits);
  const nodeServerOptions = nodeDeadlines(limits);
  const compilers = lazySchemaCompilers();
  const app = Fastify({
    // Request logs carry method, path and peer; never headers, and no secret query values.
    loggerInstance: options.logger.child(
      {},
      {
        serializers: {
          req: requestSerializer,
          res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
        },
      },
    ),
    // A TLS handshake that does not finish within the headers deadline is cut too (silent sockets).
    ...(tls
      ? {
          https: {
            cert: tls.cert,
            key: tls.key,
            handshakeTimeout: limits.httpHeadersTimeout,
            ...nodeServerOptions,
          },
        }
      : { http: nodeServerOptions }),
    requestTimeout: limits.httpRequestTimeout,
    keepAliveTimeout: limits.httpKeepAliveTimeout,
    // Inactivity of the socket (neither side sends); upgraded sockets (WebSockets) are left alone.
    connectionTimeout: limits.httpIdleTimeout,
    bodyLimit: options.bodyLimit ?? 10 * 1024 * 1024,
    // One line per request, at debug (below): at info, two lines a request drown everything else.
    logController: new LogController({ disableRequestLogging: true }),
    // A request's logger is made when the request first logs (most never do).
    childLoggerFactory: lazyRequestLogger,
    // Idle keep-alive connections are closed at shutdown; in-flight requests finish first.
    forceCloseConnections: 'idle',
    return503OnClosing: true,
    ajv: {
      customOptions: {
        // Strict bodies: an unknown field is an error, never silently dropped.
        removeAdditional: false,
        coerceTypes: 'array',
        useDefaults: true,
        allErrors: false,
      },
    },
    // Validators and serializers compiled on a route's first use (lazy-schemas.ts).
    schemaController: { compilersFactory: compilers },
  }) as unknown as FastifyInstance;
  compilers.adopt(app);
  app.addHook('onResponse', logRequestLine);
  if (tls) answerPlainHttpOnTls(app.server, { firstByteTimeoutMs: limits.httpHeadersTimeout });
  installJsonBodyParser(app);
  // Connections beyond the limit are closed by Node as they are accepted.
  app.server.maxConnections = limits.httpMaxConnections;
  trackConnections(app);
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string' },
    (_request, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)));
    },
  );
  const routes = recordRoutes(app);
  routeLists.set(app, routes);
  await app.register(cookie);
  installErrorHandler(app);
  // `1e309` and `Infinity` pass the schema as numbers (Ajv coerces query strings to Infinity, and
  // JSON.parse reads 1e309 as Infinity), and no route means to take them: a 400 before the handler.
  app.addHook('preHandler', (request, _reply, done) => {
    const where =
      nonFinite(request.query, 'querystring') ??
      nonFinite(request.params, 'params') ??
      nonFinite(request.body, 'body');
    done(where ? new AppError(ERRORS.badRequest, `${where} must be a finite number`) : undefined);
  });
  if (options.graphql) {
    const g = options.graphql;
    setGraphqlDefaults(app, {
      maxQueryBytes: g.graphqlMaxQueryBytes,
      maxAliases: g.graphqlMaxAliases,
      maxFields: g.graphqlMaxFields,
      cacheBytes: g.graphqlCacheBytes,
    });
  }
  return { app, tls };
}

/**
 * The deadlines of Node's server. Node checks the header and request deadlines of open connections
 * on an interval: a tenth of the shorter deadline (at least 50 ms, at most Node's default of 30 s)
 * keeps the overshoot small.
 */
function nodeDeadlines(limits: HttpConfig) {
  return {
    headersTimeout: limits.httpHeadersTimeout,
    requestTimeout: limits.httpRequestTimeout,
    connectionsCheckingInterval: Math.min(
      30_000,
      Math.max(50, Math.floor(Math.min(limits.httpHeadersTimeout, limits.httpRequestTimeout) / 10)),
    ),
  };
}

/**
 * The path of the first non-finite number in a parsed query, params or JSON body, if any (walked
 * without recursion, so a deeply nested body cannot overflow the stack; at most 1,000,000 values).
 */
function nonFinite(root: unknown, name: string): string | undefined {
  // Most requests carry only strings: no number, no walk.
  if (root === null || typeof root !== 'object') {
    return typeof root === 'number' && !Number.isFinite(root) ? name : undefined;
  }
  // Each entry keeps its key and parent; a path is spelt out only for the number found.
  const stack: WalkEntry[] = [{ value: root, key: '', parent: null }];
  for (let budget = 1_000_000; stack.length > 0 && budget > 0; budget--) {
    const entry = stack.pop()!;
    const { value } = entry;
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) return `${name}${pathOf(entry)}`;
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], key: i, parent: entry });
      continue;
    }
    // Plain objects only (JSON, and the query string's null-prototype records), no class instances.
    const proto = Object.getPrototypeOf(value) as object | null;
    if (proto !== null && proto !== Object.prototype && Object.getPrototypeOf(proto) !== null) continue;
    for (const [key, v] of Object.entries(value).reverse()) stack.push({ value: v, key, parent: entry });
  }
  return undefined;
}

interface WalkEntry {
  value: unknown;
  key: string | number;
  parent: WalkEntry | null;
}

/** ` a.b[2]` for an entry of nonFinite's walk ('' for the root), as the old walk spelt it. */
function pathOf(entry: WalkEntry): string {
  const keys: (string | number)[] = [];
  for (let e: WalkEntry | null = entry; e?.parent; e = e.parent) keys.push(e.key);
  let path = '';
  for (const key of keys.reverse()) {
    path = typeof key === 'number' ? `${path}[${key}]` : path ? `${path}.${key}` : key;
  }
  return path ? ` ${path}` : '';
}

export interface RouteInfo {
  method: string;
  url: string;
  permission: string | undefined;
  /** The query parameters its query string schema declares (none without a schema). */
  query: string[];
  /** It also answers WebSocket upgrades (a GraphQL endpoint's subscriptions). */
  socket: boolean;
}

const routeLists = new WeakMap<FastifyInstance, RouteInfo[]>();

/** Every route registered on an app made by `createHttpApp` (the auth coverage test walks them). */
export function listRoutes(app: FastifyInstance): RouteInfo[] {
  return [...(routeLists.get(app) ?? [])];
}

/** Request serializer for the logger: no headers, secret query values redacted. */
export const requestSerializer = (req: { method?: string; url?: string; ip?: string; id?: string }) => ({
  method: req.method,
  url: req.url ? redactUrlQuery(req.url) : req.url,
  remoteAddress: req.ip,
});

export interface ListenOptions {
  host: string;
  port: number;
  /** The option that sets this port, for the message when it is taken (`port`). */
  optionName: string;
  envName: string;
}

/** Listens, answering the base URL; a taken port stops the start with a message naming the option. */
export async function listen(app: FastifyInstance, options: ListenOptions, secure: boolean): Promise<string> {
  try {
    await app.listen({ host: options.host, port: options.port });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new PortInUseError(
        `port ${options.port} is already in use; choose another with --${options.optionName} or ${options.envName}`,
      );
    }
    throw err;
  }
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : options.port;
  const host = options.host === '0.0.0.0' || options.host === '::' ? 'localhost' : options.host;
  return `${secure ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

interface ConnectionTracker {
  /** Every accepted TCP connection (for HTTPS the raw socket under the TLS one). */
  sockets: Set<Socket>;
  /** Connections with a request between its complete headers and the end of its reply. */
  busy: Set<Socket>;
  /** Connections handed over to a WebSocket (closed by their own plugin). */
  upgraded: Set<Socket>;
}

const trackers = new WeakMap<FastifyInstance, ConnectionTracker>();

/** The TCP connection under a socket (the raw one of a TLS socket). */
const rawOf = (socket: Socket): Socket =>
  ((socket as Socket & { _parent?: Socket })._parent ?? socket) as Socket;

function trackConnections(app: FastifyInstance): void {
  const t: ConnectionTracker = { sockets: new Set(), busy: new Set(), upgraded: new Set() };
  trackers.set(app, t);
  const server = app.server;
  server.on('connection', (socket: Socket) => {
    t.sockets.add(socket);
    socket.once('close', () => {
      t.sockets.delete(socket);
      t.busy.delete(socket);
      t.upgraded.delete(socket);
    });
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = rawOf(req.socket);
    t.busy.add(socket);
    res.once('close', () => t.busy.delete(socket));
  });
  server.on('upgrade', (req: IncomingMessage) => {
    const socket = rawOf(req.socket);
    t.upgraded.add(socket);
    // An in-process connection (in-process-socket.ts) never was a `connection`: forget it on close.
    if (!t.sockets.has(socket)) socket.once('close', () => t.upgraded.delete(socket));
  });
}

/**
 * At shutdown, the connections that carry no request: idle keep-alive ones, and those that never
 * delivered complete headers (a silent socket, a TLS handshake never finished, half a header).
 * Waiting for them would let any client hold the shutdown for the headers timeout.
 */
function dropConnectionsWithoutRequest(app: FastifyInstance): void {
  app.server.closeIdleConnections();
  const t = trackers.get(app);
  if (!t) return;
  for (const socket of t.sockets) {
    if (!t.busy.has(socket) && !t.upgraded.has(socket)) socket.destroy();
  }
}

/**
 * Graceful close: stop accepting, let in-flight requests finish, and after `timeoutMs` cut the
 * connections still open. Connections without a request in progress are closed at once.
 * Answers whether everything finished in time.
 */
export async function closeGracefully(
  app: FastifyInstance,
  timeoutMs: number,
  logger?: Logger,
): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
    timer.unref();
  });
  const closing = app.close();
  dropConnectionsWithoutRequest(app);
  // A keep-alive connection whose request finishes after close() began becomes idle only then:
  // close idle connections as they appear, so that close() does not wait for the client.
  const sweeper = setInterval(() => dropConnectionsWithoutRequest(app), 25);
  const result = await Promise.race([closing.then(() => 'closed' as const), timeout]);
  clearInterval(sweeper);
  clearTimeout(timer);
  if (result === 'closed') return true;
  logger?.warn({ timeoutMs }, 'in-flight requests did not finish in time; closing their connections');
  app.server.closeAllConnections();
  await closing;
  return false;
}

/** One line per request at debug, with who made a bridged call (`bridgedBy`, see BridgeActor). */
function logRequestLine(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
  noteResponse();
  if (request.log.level === 'debug' || request.log.level === 'trace')
    request.log.debug(
      {
        req: request,
        res: reply,
        responseTime: reply.elapsedTime,
        ...(request.auth?.bridged ? { bridgedBy: request.auth.bridged } : {}),
      },
      'request completed',
    );
  done();
}

/**
 * Lists the app's routes as they are added (for the route inventory), and installs the paging
 * check on every route that declares paging parameters (paging/rest.ts).
 */
function recordRoutes(app: FastifyInstance): RouteInfo[] {
  const routes: RouteInfo[] = [];
  app.addHook('onRoute', (r) => {
    const querySchema = r.schema?.querystring as { properties?: object } | undefined;
    const query = Object.keys(querySchema?.properties ?? {});
    for (const method of [r.method].flat()) {
      routes.push({
        method,
        url: r.url ?? r.path,
        permission: r.config?.permission,
        query,
        socket: r.wsHandler !== undefined,
      });
    }
    // Paging parameters are checked the same way on every route that declares one (paging/rest.ts).
    const paging = pagingCheckOf(querySchema);
    if (paging) {
      const check: preValidationHookHandler = (request, _reply, done) => {
        try {
          checkPagingQuery(request.query as Record<string, unknown>, paging);
          done();
        } catch (err) {
          done(err as Error);
        }
      };
      r.preValidation = [...(r.preValidation ? [r.preValidation].flat() : []), check];
    }
  });
  return routes;
}
