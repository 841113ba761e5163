/** HTTP translation of the identity service: bootstrap (`/auth/v2`), OAuth and clients (`/auth/v3`). */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AuthThrottle, retryAfterSeconds } from '../../kernel/auth-throttle.js';
import { AppError, ERRORS, tooManyRequests } from '../../kernel/errors.js';
import {
  OAuthError,
  clientCredentials,
  noStore,
  sendOAuthError,
  tokenRequest,
} from '../../kernel/http/oauth.js';
import { ListQuerySchema, ListResponseSchema, listResponse, parseListQuery } from '../../kernel/paging.js';
import { CLIENT_LIST, LOCAL_PROVIDER_ID, TOKEN_LIST, type AuthService } from './service.js';
import * as S from './schemas.js';
import { clearSessionCookies, setSessionCookies } from './csrf.js';

export interface AuthRoutesOptions {
  auth: AuthService;
  /**
   * Distinct user names (client ids) that may fail from one client address within 15 minutes
   * before the address is refused (see `AuthThrottle`).
   */
  rateLimit: number;
  /** Whether the service is served over TLS (the session cookie is then `Secure`). */
  secure: boolean;
}

export async function authRoutes(app: FastifyInstance, options: AuthRoutesOptions): Promise<void> {
  const { auth } = options;
  const { throttle, admit } = throttleGate(options.rateLimit);

  // The session (HttpOnly) and its CSRF token (read by the console): see csrf.ts.
  const setSessionCookie = (reply: FastifyReply, jwt: string) =>
    setSessionCookies(reply, jwt, auth.tokenTtl, options.secure);

  app.get(
    '/auth/v2/providers',
    { config: { permission: 'public' }, schema: { response: { 200: S.ProviderList } } },
    async () => [{ id: LOCAL_PROVIDER_ID, name: 'local', type: 'local' }],
  );

  app.post<{ Body: S.LoginBody }>(
    '/auth/v2/login',
    {
      config: { permission: 'public' },
      schema: { body: S.LoginBody, response: { 200: S.JwtReply } },
    },
    async (request, reply) => {
      const { username, password, providerId } = request.body;
      admit(request, reply, username);
      let jwt: string;
      try {
        jwt = await auth.login(username, password, providerId);
      } catch (err) {
        if (err instanceof AppError && err.code === ERRORS.invalidCredentials.code)
          throttle.failure(request.ip, username);
        throw err;
      }
      throttle.success(request.ip, username);
      setSessionCookie(reply, jwt);
      return { jwtAccess: jwt };
    },
  );

  // Ends the browser's session: clears the session cookie and its CSRF token. Any session may call
  // it, also during the first-run setup.
  app.post('/auth/v2/logout', { config: { permission: 'bootstrap' } }, async (_request, reply) => {
    clearSessionCookies(reply, options.secure);
    return reply.status(204).send();
  });

  app.get(
    '/auth/v2/eula',
    { config: { permission: 'bootstrap' }, schema: { response: { 200: S.EulaStatus } } },
    async () => auth.eulaStatus(),
  );

  app.put<{ Body: S.EulaBody }>(
    '/auth/v2/eula',
    { config: { permission: 'bootstrap' }, schema: { body: S.EulaBody, querystring: S.LocaleQuery } },
    async (request, reply) => {
      await auth.acceptEula(request.body.agree, request.body.version);
      return reply.status(204).send();
    },
  );

  app.put<{ Body: S.PasswordBody }>(
    '/auth/v2/password',
    {
      config: { permission: 'bootstrap' },
      schema: { body: S.PasswordBody, querystring: S.LocaleQuery, response: { 200: S.JwtReply } },
    },
    async (request, reply) => {
      const { currentPassword, newPassword } = request.body;
      const jwt = await auth.changePassword(request.auth!.subject, currentPassword, newPassword);
      setSessionCookie(reply, jwt);
      return { jwtAccess: jwt };
    },
  );

  tokenRoute(app, auth, throttle, admit);
  clientRoutes(app, auth);
}

/**
 * One throttle for the login and the token routes (see AuthThrottle): a user's failures delay
 * that user from that address; many user names failing from one address refuse the address.
 * `admit` throws 429 (with `Retry-After`) when `user` from this address must wait.
 */
function throttleGate(maxUsersPerAddress: number) {
  const throttle = new AuthThrottle({ maxUsersPerAddress });
  const admit = (request: FastifyRequest, reply: FastifyReply, user: string) => {
    const v = throttle.check(request.ip, user);
    if (v.ok) return;
    const wait = retryAfterSeconds(v.retryMs);
    void reply.header('retry-after', String(wait));
    throw tooManyRequests(
      v.reason === 'user'
        ? `too many failed attempts for "${user.slice(0, 200)}" from ${request.ip}; retry in ${wait} s`
        : `too many user names failed from ${request.ip}; retry in ${wait} s`,
    );
  };
  return { throttle, admit };
}

/** The OAuth 2.0 token endpoint (RFC 6749 4.4, client credentials), throttled per client id. */
function tokenRoute(
  app: FastifyInstance,
  auth: AuthService,
  throttle: AuthThrottle,
  admit: ReturnType<typeof throttleGate>['admit'],
): void {
  // Errors as OAuth bodies (5.2).
  app.post(
    '/auth/v3/oauth/token',
    { config: { permission: 'public' } },
    async (request: FastifyRequest, reply: FastifyReply) => {
      noStore(reply);
      let viaBasic = false;
      try {
        const body = tokenRequest(request, ['client_credentials']);
        const creds = clientCredentials(request, body);
        viaBasic = creds.viaBasic;
        if (!creds.clientId || !creds.clientSecret) {
          throw new OAuthError(
            400,
            'invalid_request',
            'client_id and client_secret are required (body or Basic header)',
          );
        }
        admit(request, reply, creds.clientId);
        const issued = await auth.issueToken(creds.clientId, creds.clientSecret);
        if (!issued) {
          throttle.failure(request.ip, creds.clientId);
          request.log.warn({ client_id: creds.clientId }, 'token refused: invalid client credentials');
          throw new OAuthError(401, 'invalid_client', 'invalid client credentials');
        }
        throttle.success(request.ip, creds.clientId);
        return { access_token: issued.token, token_type: 'Bearer', expires_in: issued.expiresIn };
      } catch (err) {
        if (err instanceof OAuthError) return sendOAuthError(reply, err, viaBasic);
        throw err;
      }
    },
  );
}

/** `/auth/v3`: who is calling, API clients and API tokens. */
function clientRoutes(app: FastifyInstance, auth: AuthService): void {
  app.get('/auth/v3/whoami', { schema: { response: { 200: S.WhoAmI } } }, async (request) => request.auth!);

  app.post<{ Body: S.CreateApiClientBody }>(
    '/auth/v3/api-clients',
    { schema: { body: S.CreateApiClientBody, response: { 201: S.ApiClientWithSecret } } },
    async (request, reply) =>
      reply.status(201).send(await auth.createClient(request.body.name, request.body.role)),
  );

  app.get<{ Querystring: Record<string, unknown> }>(
    '/auth/v3/api-clients',
    { schema: { querystring: ListQuerySchema, response: { 200: ListResponseSchema(S.ApiClientSchema) } } },
    async (request) => {
      const spec = parseListQuery(request.query, CLIENT_LIST);
      return listResponse(spec, await auth.listClients(spec));
    },
  );

  app.get<{ Params: S.IdParams }>(
    '/auth/v3/api-clients/:id',
    { schema: { params: S.IdParams, response: { 200: S.ApiClientSchema } } },
    async (request) => auth.getClient(request.params.id),
  );

  app.delete<{ Params: S.IdParams }>(
    '/auth/v3/api-clients/:id',
    { schema: { params: S.IdParams } },
    async (request, reply) => {
      await auth.deleteClient(request.params.id);
      return reply.status(204).send();
    },
  );

  app.post<{ Params: S.IdParams }>(
    '/auth/v3/api-clients/:id/secret',
    { schema: { params: S.IdParams, response: { 200: S.ClientSecretReply } } },
    async (request) => auth.rotateClientSecret(request.params.id),
  );

  app.post<{ Body: S.CreateApiTokenBody }>(
    '/auth/v3/api-tokens',
    { schema: { body: S.CreateApiTokenBody, response: { 201: S.ApiTokenWithSecret } } },
    async (request, reply) =>
      reply.status(201).send(await auth.createApiToken(request.body.name, request.body.role)),
  );

  app.get<{ Querystring: Record<string, unknown> }>(
    '/auth/v3/api-tokens',
    { schema: { querystring: ListQuerySchema, response: { 200: ListResponseSchema(S.ApiTokenSchema) } } },
    async (request) => {
      const spec = parseListQuery(request.query, TOKEN_LIST);
      return listResponse(spec, await auth.listApiTokens(spec));
    },
  );

  app.delete<{ Params: S.IdParams }>(
    '/auth/v3/api-tokens/:id',
    { schema: { params: S.IdParams } },
    async (request, reply) => {
      await auth.revokeApiToken(request.params.id);
      return reply.status(204).send();
    },
  );
}
