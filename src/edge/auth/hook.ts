/**
 * The authentication hook of the edge: the kernel's hook (credentials on every non-public route, a
 * viewer may not change state) plus the edge's rules: the admin's first-run session may do nothing
 * but the bootstrap steps until they are done; a call bridged by the manager runs as the manager
 * caller's role at most (carried in the link's frame, never trusted from a header), and its state
 * changes of the edge's credentials and device management need that role to be admin. A GraphQL
 * subscription's WebSocket may bring its credentials in `connection_init` instead of the upgrade
 * (`src/kernel/http/socket-auth.ts`).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { AppError, forbidden, ERRORS } from '../../kernel/errors.js';
import { installAuthHook as installKernelAuthHook, routePermission } from '../../kernel/http/auth-hook.js';
import type { AuthContext } from '../../kernel/http/auth-types.js';
import { bridgeActorOf } from '../../kernel/http/in-process.js';
import { bridgeNeedsAdmin, weakerRole } from '../../kernel/link/protocol.js';
import type { AuthService } from './service.js';
import { checkCsrf, SESSION_COOKIE } from './csrf.js';

export { routePermission };

export function installAuthHook(app: FastifyInstance, auth: AuthService): void {
  installKernelAuthHook(app, {
    // A browser cannot set Authorization on a WebSocket upgrade: an API client's token signed in
    // to the console comes in the subscription's connection_init, checked like the header.
    socketInitAuth: true,
    authenticate: async (request) => {
      const ctx = await auth.authenticate(request.headers.authorization, request.cookies?.[SESSION_COOKIE]);
      return ctx && bridged(request, ctx);
    },
    check(request, ctx, permission) {
      // A change by a browser's session cookie needs its CSRF token, whatever the route.
      checkCsrf(request);
      if (ctx.bridged && permission !== 'read' && permission !== 'public') {
        const route = request.routeOptions.url ?? request.url;
        if (ctx.role !== 'admin' && bridgeNeedsAdmin(request.method, route)) {
          throw forbidden(
            `a bridged ${ctx.role} cannot change the edge's credentials or device management (${request.method} ${route} needs the admin role on the manager and on the edge)`,
          );
        }
      }
      const isSession = ctx.subject.startsWith('user:');
      if (permission === 'bootstrap') {
        if (!isSession) throw forbidden("this route needs the admin's login session (POST /auth/v2/login)");
        return true;
      }
      if (isSession) {
        const steps = auth.bootstrapSteps();
        if (steps.length > 0) {
          throw new AppError(
            ERRORS.bootstrapRequired,
            `first-run setup is not complete: ${steps.join(' and ')} first`,
          );
        }
      }
      return false;
    },
  });
}

/**
 * The caller of a request the manager bridged: the credential's role capped by the manager
 * caller's (`viewer` when the frame named none), the actor attached and logged. Other requests
 * unchanged.
 */
function bridged(request: FastifyRequest, ctx: AuthContext): AuthContext {
  const actor = bridgeActorOf(request.raw);
  if (!actor) return ctx;
  const role = weakerRole(ctx.role, actor.role);
  const log = request.log as Logger;
  const line = { bridgedBy: actor, role, method: request.method, url: request.url };
  // Every state change is recorded; reads at debug (the bridge's hot path).
  if (request.method === 'GET' || request.method === 'HEAD') log.debug(line, 'bridged call');
  else log.info(line, 'bridged call');
  return { ...ctx, role, bridged: actor };
}
