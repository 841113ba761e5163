/**
 * The HTTP(S) server every service runs on: Fastify with a certificate created on first start and
 * kept in the data directory, strict bodies and lenient query strings, form bodies, cookies, the
 * one error shape, request logging without secrets, and a listen/close pair that names the option
 * to change when a port is taken and finishes in-flight requests on shutdown.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import cookie from '@fastify/cookie';
import type { Logger } from 'pino';
import { generate } from 'selfsigned';
import { installErrorHandler } from './error-handler.js';
import { installJsonBodyParser } from './json-body.js';
import { answerPlainHttpOnTls } from './plain-http-hint.js';
import { ConfigError, PortInUseError, type GraphqlConfig } from '../config.js';
import { setGraphqlDefaults } from '../graphql/mount.js';

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
  const pems = await generate([{ name: 'commonName', value: hostname() || 'localhost' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate: new Date(now.getTime() - 60_000),
    notAfterDate: new Date(now.getTime() + 825 * 24 * 3600 * 1000),
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 2, value: hostname() || 'localhost' },
          { type: 7, ip: '127.0.0.1' },
          { type: 7, ip: '::1' },
        ],
      },
    ],
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
    ...(tls ? { https: { cert: tls.cert, key: tls.key } } : {}),
    bodyLimit: options.bodyLimit ?? 10 * 1024 * 1024,
    // One line per request, at debug (below): at info, two lines a request drown everything else.
    disableRequestLogging: true,
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
  }) as unknown as FastifyInstance;
  app.addHook('onResponse', (request, reply, done) => {
    if (request.log.level === 'debug' || request.log.level === 'trace')
      request.log.debug({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
    done();
  });
  if (tls) answerPlainHttpOnTls(app.server);
  installJsonBodyParser(app);
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string' },
    (_request, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)));
    },
  );
  const routes: RouteInfo[] = [];
  app.addHook('onRoute', (r) => {
    for (const method of [r.method].flat()) {
      routes.push({ method, url: r.url ?? r.path, permission: r.config?.permission });
    }
  });
  routeLists.set(app, routes);
  await app.register(cookie);
  installErrorHandler(app);
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

export interface RouteInfo {
  method: string;
  url: string;
  permission: string | undefined;
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

/**
 * Graceful close: stop accepting, let in-flight requests finish, and after `timeoutMs` cut the
 * connections still open. Answers whether everything finished in time.
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
  // A keep-alive connection whose request finishes after close() began becomes idle only then:
  // close idle connections as they appear, so that close() does not wait for the client.
  const sweeper = setInterval(() => app.server.closeIdleConnections(), 25);
  const result = await Promise.race([closing.then(() => 'closed' as const), timeout]);
  clearInterval(sweeper);
  clearTimeout(timer);
  if (result === 'closed') return true;
  logger?.warn({ timeoutMs }, 'in-flight requests did not finish in time; closing their connections');
  app.server.closeAllConnections();
  await closing;
  return false;
}
