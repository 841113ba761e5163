/** HTTP translation of the identity service: bootstrap (`/auth/v2`), OAuth and clients (`/auth/v3`). */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { RateLimiter } from '../../kernel/http/rate-limit.js';
import { LOCAL_PROVIDER_ID, type AuthService } from './service.js';
import * as S from './schemas.js';

export interface AuthRoutesOptions {
  auth: AuthService;
  /** Attempts per minute per client address on the token and login routes. */
  rateLimit: number;
  /** Whether the service is served over TLS (the session cookie is then `Secure`). */
  secure: boolean;
}

export async function authRoutes(app: FastifyInstance, options: AuthRoutesOptions): Promise<void> {
  const { auth } = options;
  const limiter = new RateLimiter({ max: options.rateLimit, windowMs: 60_000 });
  const limited = limiter.hook();

  const setSessionCookie = (reply: FastifyReply, jwt: string) =>
    reply.setCookie('jwtAccess', jwt, {
      path: '/',
      httpOnly: true,
      secure: options.secure,
      sameSite: 'strict',
      maxAge: auth.tokenTtl,
    });

  app.get(
    '/auth/v2/providers',
    { config: { permission: 'public' }, schema: { response: { 200: S.ProviderList } } },
    async () => [{ id: LOCAL_PROVIDER_ID, name: 'local', type: 'local' }],
  );

  app.post<{ Body: S.LoginBody }>(
    '/auth/v2/login',
    {
      config: { permission: 'public' },
      onRequest: limited,
      schema: { body: S.LoginBody, response: { 200: S.JwtReply } },
    },
    async (request, reply) => {
      const { username, password, providerId } = request.body;
      const jwt = await auth.login(username, password, providerId);
      setSessionCookie(reply, jwt);
      return { jwtAccess: jwt };
    },
  );

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

  // OAuth 2.0 token endpoint (RFC 6749 4.4, client credentials). Errors are OAuth bodies (5.2),
  // not the kernel's error shape, since OAuth clients parse them.
  app.post(
    '/auth/v3/oauth/token',
    { config: { permission: 'public' }, onRequest: limited },
    async (request: FastifyRequest, reply: FastifyReply) => {
      void reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
      const body = (request.body ?? {}) as Record<string, unknown>;
      const oauthError = (status: number, error: string, description: string) =>
        reply.status(status).send({ error, error_description: description });
      if (typeof body !== 'object' || Array.isArray(body)) {
        return oauthError(400, 'invalid_request', 'the body must be form-encoded parameters');
      }
      const grantType = body.grant_type;
      if (typeof grantType !== 'string' || grantType === '') {
        return oauthError(400, 'invalid_request', 'grant_type is required');
      }
      if (grantType !== 'client_credentials') {
        return oauthError(400, 'unsupported_grant_type', `grant_type "${grantType}" is not supported; use client_credentials`);
      }
      let clientId = typeof body.client_id === 'string' ? body.client_id : undefined;
      let clientSecret = typeof body.client_secret === 'string' ? body.client_secret : undefined;
      const header = request.headers.authorization;
      const viaBasic = typeof header === 'string' && /^basic /i.test(header);
      if (viaBasic) {
        if (clientSecret !== undefined) {
          return oauthError(400, 'invalid_request', 'send the client credentials either in the body or as Basic, not both');
        }
        const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
        const colon = decoded.indexOf(':');
        if (colon < 0) return oauthError(400, 'invalid_request', 'malformed Basic credentials');
        const basicId = safeDecode(decoded.slice(0, colon));
        if (clientId !== undefined && clientId !== basicId) {
          return oauthError(400, 'invalid_request', 'client_id in the body differs from the Basic credentials');
        }
        clientId = basicId;
        clientSecret = safeDecode(decoded.slice(colon + 1));
      }
      if (!clientId || !clientSecret) {
        return oauthError(400, 'invalid_request', 'client_id and client_secret are required (body or Basic header)');
      }
      const issued = await auth.issueToken(clientId, clientSecret);
      if (!issued) {
        request.log.warn({ client_id: clientId }, 'token refused: invalid client credentials');
        if (viaBasic) void reply.header('www-authenticate', 'Basic realm="millwright"');
        return oauthError(401, 'invalid_client', 'invalid client credentials');
      }
      return { access_token: issued.token, token_type: 'Bearer', expires_in: issued.expiresIn };
    },
  );

  app.get(
    '/auth/v3/whoami',
    { schema: { response: { 200: S.WhoAmI } } },
    async (request) => request.auth!,
  );

  app.post<{ Body: S.CreateApiClientBody }>(
    '/auth/v3/api-clients',
    { schema: { body: S.CreateApiClientBody, response: { 201: S.ApiClientWithSecret } } },
    async (request, reply) => reply.status(201).send(await auth.createClient(request.body.name, request.body.role)),
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
    async (request, reply) => reply.status(201).send(await auth.createApiToken(request.body.name, request.body.role)),
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

/** RFC 6749 2.3.1: Basic credentials are form-urlencoded before base64. */
function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return s;
  }
}
