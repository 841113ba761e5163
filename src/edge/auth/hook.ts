/**
 * The authentication hook of the edge: the kernel's hook (credentials on every non-public route, a
 * viewer may not change state) plus the edge's rule that the admin's first-run session may do
 * nothing but the bootstrap steps until they are done.
 */
import type { FastifyInstance } from 'fastify';
import { AppError, forbidden, ERRORS } from '../../kernel/errors.js';
import { installAuthHook as installKernelAuthHook, routePermission } from '../../kernel/http/auth-hook.js';
import type { AuthService } from './service.js';
import { checkCsrf, SESSION_COOKIE } from './csrf.js';

export { routePermission };

export function installAuthHook(app: FastifyInstance, auth: AuthService): void {
  installKernelAuthHook(app, {
    authenticate: (request) =>
      auth.authenticate(request.headers.authorization, request.cookies?.[SESSION_COOKIE]),
    check(request, ctx, permission) {
      // A change by a browser's session cookie needs its CSRF token, whatever the route.
      checkCsrf(request);
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
