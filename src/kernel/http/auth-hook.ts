/**
 * The authentication hook every service installs: every route needs credentials unless it declares
 * `config: { permission: 'public' }`; GET and HEAD default to `read`, other methods to `write`;
 * `write` needs the admin role. How credentials are checked, and any further rule of a service (the
 * edge's first-run bootstrap), is the service's: it passes them in.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { forbidden, unauthorized } from '../errors.js';
import type { AuthContext, Permission } from './auth-types.js';
import { deferSocketAuth } from './socket-auth.js';

export function routePermission(request: FastifyRequest): Permission {
  const declared = request.routeOptions.config?.permission;
  if (declared) return declared;
  return request.method === 'GET' || request.method === 'HEAD' ? 'read' : 'write';
}

export interface AuthHookOptions {
  /**
   * The caller of a request: `null` when it sent no credentials; throws a 401 `AppError` when it
   * sent credentials that are not valid.
   */
  authenticate(request: FastifyRequest): Promise<AuthContext | null>;
  /**
   * A service's own rule, run after authentication and before the role check; throws to refuse.
   * Answer `true` to allow without the role check (a permission the service defines itself).
   */
  check?(request: FastifyRequest, ctx: AuthContext, permission: Permission): boolean | void;
  /**
   * Let a WebSocket upgrade of a route declared `config: { socketInitAuth: true }` (a GraphQL
   * endpoint's subscriptions) through without credentials: they must then come in its
   * `connection_init` payload, checked like the header (see `socket-auth.ts`).
   */
  socketInitAuth?: boolean;
  /** What the 401 asks for (`www-authenticate`) and says. */
  challenge?: string;
  message?: string;
}

export function installAuthHook(app: FastifyInstance, options: AuthHookOptions): void {
  const challenge = options.challenge ?? 'Bearer realm="millwright"';
  const message = options.message ?? 'authentication required: send Authorization: Bearer <access token>';
  app.decorateRequest('auth', null);
  /** The service's rule and the role check of an authenticated caller; throws to refuse. */
  const authorize = (request: FastifyRequest, ctx: AuthContext, permission: Permission): void => {
    request.auth = ctx;
    if (options.check?.(request, ctx, permission) === true) return;
    // A bridged operator's state changes are the service's `check` to refuse (see `Role`).
    if (permission === 'write' && ctx.role !== 'admin' && ctx.role !== 'operator') {
      throw forbidden(`the ${ctx.role} role cannot change state (${request.method} needs the admin role)`);
    }
  };
  app.addHook('onRequest', async (request, reply) => {
    const permission = routePermission(request);
    if (permission === 'public') return;
    const ctx = await options.authenticate(request);
    if (ctx) return authorize(request, ctx, permission);
    if (options.socketInitAuth && socketInitUpgrade(request)) {
      // The same checks, on the `Authorization` value of the socket's connection_init.
      deferSocketAuth(request.raw, async (authorization) => {
        request.headers.authorization = authorization;
        const late = await options.authenticate(request);
        if (!late) throw unauthorized(message);
        authorize(request, late, permission);
        return late;
      });
      return;
    }
    void reply.header('www-authenticate', challenge);
    throw unauthorized(message);
  });
}

/** A WebSocket upgrade of a route that takes its credentials from `connection_init`. */
function socketInitUpgrade(request: FastifyRequest): boolean {
  return (
    request.routeOptions.config?.socketInitAuth === true &&
    request.method === 'GET' &&
    request.headers.upgrade?.toLowerCase() === 'websocket'
  );
}
