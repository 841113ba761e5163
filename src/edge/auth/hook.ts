/**
 * The authentication hook of the edge: every route needs credentials unless it declares
 * `config: { permission: 'public' }`; a viewer may not change state; the admin's first-run session
 * may do nothing but the bootstrap steps until they are done.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError, forbidden, unauthorized } from '../../kernel/errors.js';
import type { Permission } from '../../kernel/http/auth-types.js';
import type { AuthService } from './service.js';

export function routePermission(request: FastifyRequest): Permission {
  const declared = request.routeOptions.config?.permission;
  if (declared) return declared;
  return request.method === 'GET' || request.method === 'HEAD' ? 'read' : 'write';
}

export function installAuthHook(app: FastifyInstance, auth: AuthService): void {
  app.decorateRequest('auth', null);
  app.addHook('onRequest', async (request, reply) => {
    const permission = routePermission(request);
    if (permission === 'public') return;
    const ctx = await auth.authenticate(request.headers.authorization, request.cookies?.jwtAccess);
    if (!ctx) {
      void reply.header('www-authenticate', 'Bearer realm="millwright"');
      throw unauthorized('authentication required: send Authorization: Bearer <access token>');
    }
    request.auth = ctx;
    const isSession = ctx.subject.startsWith('user:');
    if (permission === 'bootstrap') {
      if (!isSession) throw forbidden("this route needs the admin's login session (POST /auth/v2/login)");
      return;
    }
    if (isSession) {
      const steps = auth.bootstrapSteps();
      if (steps.length > 0) {
        throw new AppError(403, 'bootstrap_required', `first-run setup is not complete: ${steps.join(' and ')} first`);
      }
    }
    if (permission === 'write' && ctx.role !== 'admin') {
      throw forbidden(`the ${ctx.role} role cannot change state (${request.method} needs the admin role)`);
    }
  });
}
