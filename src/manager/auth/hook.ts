/**
 * The manager's authentication hook (contract part 5): `X-AuthToken: <API token>` on `/api/v1/`
 * and `/admin/v1/`; on `/mpcs/` `Authorization: <API token>` without `Bearer`, and `X-AuthToken`
 * too. The wrong header is a 401 that names the right one. Every route needs a token unless it
 * declares `permission: 'public'`; GET needs any role, other methods operator or admin somewhere
 * (routes then check the role over the project or company they act on); the admin console API
 * needs a global admin. Without a token header, the console's session cookie (`mwmSession`, set
 * after a sign-in through the realm `standalone`) authenticates, with the CSRF rule on changes.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { forbidden, unauthorized } from '../../kernel/errors.js';
import { installAuthHook } from '../../kernel/http/auth-hook.js';
import type { AuthContext } from '../../kernel/http/auth-types.js';
import { isGlobal, strongestRole, type ManagerAuthService, type Principal } from './service.js';
import { checkCsrf, SESSION_COOKIE } from './session.js';

export interface ManagerAuthContext extends AuthContext {
  principal: Principal;
}

/** The principal of an authenticated request (routes behind the hook). */
export function principalOf(request: FastifyRequest): Principal {
  const ctx = request.auth as ManagerAuthContext | null;
  if (!ctx?.principal) throw unauthorized();
  return ctx.principal;
}

/** The token a request carries, by the header its path takes; throws 401 on the wrong header. */
export function requestToken(request: FastifyRequest): string | null {
  const x = request.headers['x-authtoken'];
  const xToken = Array.isArray(x) ? x[0] : x;
  const authorization = request.headers.authorization;
  if (request.url.startsWith('/mpcs/')) {
    if (xToken) return xToken.trim();
    if (!authorization) return null;
    if (/^(bearer|basic)\s/i.test(authorization)) {
      throw unauthorized(
        'wrong authentication header: /mpcs/ takes Authorization: <API token> without "Bearer"',
      );
    }
    return authorization.trim();
  }
  if (xToken) return xToken.trim();
  if (authorization) {
    throw unauthorized('wrong authentication header: /api/v1/ and /admin/v1/ take X-AuthToken: <API token>');
  }
  return null;
}

export function installManagerAuthHook(
  app: FastifyInstance,
  auth: ManagerAuthService,
  options: { adminConsole: boolean },
): void {
  installAuthHook(app, {
    challenge: 'X-AuthToken',
    message: 'authentication required: send X-AuthToken: <API token> (Authorization: <API token> on /mpcs/)',
    async authenticate(request) {
      const token = requestToken(request);
      let principal: Principal;
      let scheme: 'bearer' | 'cookie' = 'bearer';
      if (token) principal = await auth.authenticate(token);
      else {
        const session = request.cookies?.[SESSION_COOKIE];
        if (!session || !auth.realm) return null;
        const claims = await auth.realm.verifySession(session);
        if (!claims) throw unauthorized('the console session ended or expired: sign in again');
        principal = await auth.principalOfUser(claims.sub, claims.sid);
        scheme = 'cookie';
      }
      const ctx: ManagerAuthContext = {
        subject: principal.subject,
        role: strongestRole(principal) === 'admin' ? 'admin' : 'viewer',
        scheme,
        principal,
      };
      return ctx;
    },
    check(request, ctx, permission) {
      const principal = (ctx as ManagerAuthContext).principal;
      checkCsrf(request);
      if (options.adminConsole) {
        if (!isGlobal(principal, 'admin'))
          throw forbidden('the admin console API needs a global admin token');
        return true;
      }
      const role = strongestRole(principal);
      if (role === null) throw forbidden('this token holds no role on any company or project');
      if (permission === 'write' && role === 'viewer') {
        throw forbidden(`the viewer role cannot change state (${request.method} needs operator or admin)`);
      }
      return true;
    },
  });
}
