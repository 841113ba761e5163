/**
 * The token endpoints of the UNS's identity provider: the OAuth 2.0 password grant, form-encoded,
 * at the realm's OpenID Connect path (the contract) and at `/auth/v3/oauth/token` (also seen in
 * the documentation). The client (`ide-ui` by default, empty secret) comes in the body or as
 * Basic; errors are RFC 6749 5.2 bodies.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AuthThrottle, retryAfterSeconds } from '../../kernel/auth-throttle.js';
import { Type } from '@sinclair/typebox';
import { AppError, ERRORS, tooManyRequests } from '../../kernel/errors.js';
import { clearSessionCookies, setSessionCookies } from './session.js';
import {
  OAuthError,
  clientCredentials,
  noStore,
  sendOAuthError,
  tokenRequest,
} from '../../kernel/http/oauth.js';
import { REALM, type IdentityService } from './service.js';

export const TOKEN_PATHS = [
  `/auth/realms/${REALM}/protocol/openid-connect/token`,
  '/auth/v3/oauth/token',
] as const;

export interface IdentityRoutesOptions {
  identity: IdentityService;
  /** Distinct user names that may fail from one address within 15 minutes (see AuthThrottle). */
  rateLimit: number;
  /** Whether the service is served over TLS (the console's cookies are then `Secure`). */
  secure: boolean;
}

export async function identityRoutes(app: FastifyInstance, options: IdentityRoutesOptions): Promise<void> {
  const { identity } = options;
  // A user's failed passwords delay that user from that address; many user names failing from
  // one address refuse the address (see AuthThrottle).
  const throttle = new AuthThrottle({ maxUsersPerAddress: options.rateLimit });

  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    noStore(reply);
    let viaBasic = false;
    try {
      const body = tokenRequest(request, ['password']);
      const creds = clientCredentials(request, body);
      viaBasic = creds.viaBasic;
      if (!creds.clientId)
        throw new OAuthError(400, 'invalid_request', 'client_id is required (body or Basic header)');
      if (creds.clientId !== identity.clientId || (creds.clientSecret ?? '') !== '') {
        request.log.warn({ client_id: creds.clientId }, 'token refused: unknown client');
        throw new OAuthError(
          401,
          'invalid_client',
          `unknown client "${creds.clientId}" or wrong client secret`,
        );
      }
      const { username, password } = body;
      if (typeof username !== 'string' || username === '' || typeof password !== 'string') {
        throw new OAuthError(400, 'invalid_request', 'username and password are required');
      }
      const verdict = throttle.check(request.ip, username);
      if (!verdict.ok) {
        const wait = retryAfterSeconds(verdict.retryMs);
        void reply.header('retry-after', String(wait));
        throw tooManyRequests(
          verdict.reason === 'user'
            ? `too many failed attempts for "${username.slice(0, 200)}" from ${request.ip}; retry in ${wait} s`
            : `too many user names failed from ${request.ip}; retry in ${wait} s`,
        );
      }
      const issued = await identity.passwordGrant(username, password);
      if (!issued) {
        throttle.failure(request.ip, username);
        throw new OAuthError(400, 'invalid_grant', 'invalid user credentials');
      }
      throttle.success(request.ip, username);
      return {
        access_token: issued.token,
        token_type: 'Bearer',
        expires_in: issued.expiresIn,
        scope: 'openid',
      };
    } catch (err) {
      if (err instanceof OAuthError) return sendOAuthError(reply, err, viaBasic);
      throw err;
    }
  };
  for (const path of TOKEN_PATHS) {
    app.post(path, { config: { permission: 'public' } }, handler);
  }

  // The console's sign-in: the same password check and throttle, the token in an HttpOnly cookie
  // with its CSRF token beside it (session.ts).
  app.post<{ Body: { username: string; password: string } }>(
    CONSOLE_LOGIN_PATH,
    { config: { permission: 'public' }, schema: { body: ConsoleLoginBody } },
    async (request, reply) => {
      noStore(reply);
      const { username, password } = request.body;
      const verdict = throttle.check(request.ip, username);
      if (!verdict.ok) {
        const wait = retryAfterSeconds(verdict.retryMs);
        void reply.header('retry-after', String(wait));
        throw tooManyRequests(`too many failed attempts from ${request.ip}; retry in ${wait} s`);
      }
      const issued = await identity.passwordGrant(username, password);
      if (!issued) {
        throttle.failure(request.ip, username);
        throw new AppError(ERRORS.invalidCredentials, 'invalid user name or password');
      }
      throttle.success(request.ip, username);
      setSessionCookies(reply, issued.token, issued.expiresIn, options.secure);
      return { username, role: issued.role, expiresIn: issued.expiresIn };
    },
  );
  // Ends the browser's session (clears both cookies); open, since it only forgets.
  app.post(CONSOLE_LOGOUT_PATH, { config: { permission: 'public' } }, async (_request, reply) => {
    noStore(reply);
    clearSessionCookies(reply, options.secure);
    return reply.code(204).send();
  });
}

export const CONSOLE_LOGIN_PATH = '/auth/console/login';
export const CONSOLE_LOGOUT_PATH = '/auth/console/logout';

const ConsoleLoginBody = Type.Object(
  {
    username: Type.String({ minLength: 1, maxLength: 200 }),
    password: Type.String({ maxLength: 1000 }),
  },
  { additionalProperties: false },
);
