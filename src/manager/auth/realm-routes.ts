/**
 * The realm `standalone` on the wire (OpenID Connect, under `/auth/realms/standalone` on the main
 * port): discovery, the authorization endpoint (a sign-in form: user name and password), the token
 * endpoint (authorization code + PKCE S256), userinfo (Bearer access token), the JWKS and logout.
 * Every route is public at the API-token layer: the realm checks its own credentials. The form is
 * plain HTML with a style sheet of its own, so the consoles' strict CSP holds.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AuthThrottle, retryAfterSeconds } from '../../kernel/auth-throttle.js';
import { noStore, OAuthError, sendOAuthError, tokenRequest } from '../../kernel/http/oauth.js';
import { CONSOLE_SECURITY_HEADERS, LOGIN_CSS, loginPage } from './realm-page.js';
import { OIDC_PATH, REALM_PATH, RealmError, type Realm } from './realm.js';
import { clearSessionCookies, SESSION_COOKIE } from './session.js';

const PUBLIC = { permission: 'public' as const };

/** `https://<host>/auth/realms/standalone`, as the browser or client reached the manager. */
export function issuerOf(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}${REALM_PATH}`;
}

export async function realmRoutes(app: FastifyInstance, options: { realm: Realm; secure: boolean }) {
  const { realm } = options;

  app.get(`${REALM_PATH}/.well-known/openid-configuration`, { config: PUBLIC }, async (request) =>
    realm.discovery(issuerOf(request)),
  );
  app.get(`${OIDC_PATH}/certs`, { config: PUBLIC }, async () => realm.jwks());
  app.get(`${REALM_PATH}/login.css`, { config: PUBLIC }, async (_request, reply) =>
    reply.headers(CONSOLE_SECURITY_HEADERS).type('text/css; charset=utf-8').send(LOGIN_CSS),
  );

  authorizeRoutes(app, realm);
  tokenRoutes(app, realm, options.secure);
}

/** The authorization endpoint: the form, then the redirect with the code. */
function authorizeRoutes(app: FastifyInstance, realm: Realm): void {
  const throttle = new AuthThrottle({ maxUsersPerAddress: 30 });
  app.get<{ Querystring: Record<string, unknown> }>(
    `${OIDC_PATH}/auth`,
    { config: PUBLIC },
    async (request, reply) => {
      void reply.headers(CONSOLE_SECURITY_HEADERS).header('cache-control', 'no-store');
      try {
        realm.checkAuthorize(request.query, request.host);
      } catch (err) {
        if (!(err instanceof RealmError)) throw err;
        return reply
          .code(err.status)
          .type('text/html; charset=utf-8')
          .send(loginPage({ fatal: err.message }));
      }
      return reply.type('text/html; charset=utf-8').send(loginPage({ params: request.query }));
    },
  );
  app.post<{ Body: Record<string, unknown> }>(
    `${OIDC_PATH}/auth`,
    { config: PUBLIC },
    async (request, reply) => {
      void reply.headers(CONSOLE_SECURITY_HEADERS).header('cache-control', 'no-store');
      const body = (request.body ?? {}) as Record<string, unknown>;
      let authorize;
      try {
        authorize = realm.checkAuthorize(body, request.host);
      } catch (err) {
        if (!(err instanceof RealmError)) throw err;
        return reply
          .code(err.status)
          .type('text/html; charset=utf-8')
          .send(loginPage({ fatal: err.message }));
      }
      const username = typeof body.username === 'string' ? body.username : '';
      const password = typeof body.password === 'string' ? body.password : '';
      const verdict = throttle.check(request.ip, username);
      if (!verdict.ok) {
        const wait = retryAfterSeconds(verdict.retryMs);
        return reply
          .code(429)
          .header('retry-after', String(wait))
          .type('text/html; charset=utf-8')
          .send(loginPage({ params: body, error: `Too many failed attempts; retry in ${wait} s.` }));
      }
      let code: string;
      try {
        code = await realm.issueCode(authorize, username, password);
      } catch (err) {
        if (!(err instanceof RealmError)) throw err;
        if (err.status === 401) throttle.failure(request.ip, username);
        return reply
          .code(err.status === 401 ? 401 : err.status)
          .type('text/html; charset=utf-8')
          .send(
            loginPage({
              params: body,
              error: err.status === 401 ? 'Invalid user name or password.' : err.message,
            }),
          );
      }
      throttle.success(request.ip, username);
      const back = new URL(authorize.redirectUri);
      back.searchParams.set('code', code);
      if (typeof body.state === 'string' && body.state !== '') back.searchParams.set('state', body.state);
      back.searchParams.set('iss', issuerOf(request));
      return reply.redirect(back.toString(), 303);
    },
  );
}

/** Token, userinfo and logout. */
function tokenRoutes(app: FastifyInstance, realm: Realm, secure: boolean): void {
  app.post(`${OIDC_PATH}/token`, { config: PUBLIC }, async (request, reply) => {
    noStore(reply);
    try {
      const body = tokenRequest(request, ['authorization_code']);
      const str = (k: string) => (typeof body[k] === 'string' ? (body[k] as string) : '');
      for (const k of ['code', 'client_id', 'redirect_uri', 'code_verifier']) {
        if (str(k) === '') throw new OAuthError(400, 'invalid_request', `${k} is required`);
      }
      const { sessionId: _sid, ...tokens } = await realm.exchange(
        {
          code: str('code'),
          clientId: str('client_id'),
          redirectUri: str('redirect_uri'),
          codeVerifier: str('code_verifier'),
        },
        issuerOf(request),
      );
      return tokens;
    } catch (err) {
      if (err instanceof RealmError)
        return sendOAuthError(reply, new OAuthError(err.status, err.error, err.message));
      if (err instanceof OAuthError) return sendOAuthError(reply, err);
      throw err;
    }
  });

  app.get(`${OIDC_PATH}/userinfo`, { config: PUBLIC }, async (request, reply) => {
    const header = request.headers.authorization ?? '';
    const token = /^bearer\s+/i.test(header) ? header.replace(/^bearer\s+/i, '').trim() : '';
    const claims = token ? await realm.verifySession(token) : null;
    if (!claims) {
      return reply
        .code(401)
        .header('www-authenticate', `Bearer realm="${REALM_PATH}", error="invalid_token"`)
        .send({
          error: 'invalid_token',
          error_description: 'send Authorization: Bearer <access token of a live session>',
        });
    }
    return { sub: claims.sub, preferred_username: claims.preferred_username };
  });

  // RP-initiated logout: ends the session named by id_token_hint (or the console's cookie).
  const logout = async (request: FastifyRequest, reply: FastifyReply) => {
    const params = {
      ...(request.query as Record<string, unknown>),
      ...((request.body ?? {}) as Record<string, unknown>),
    };
    const hint = typeof params.id_token_hint === 'string' ? params.id_token_hint : undefined;
    const claims = realm.peek(hint ?? request.cookies?.[SESSION_COOKIE] ?? '');
    if (claims) await realm.endSession(claims.sid);
    clearSessionCookies(reply, secure);
    const after = typeof params.post_logout_redirect_uri === 'string' ? params.post_logout_redirect_uri : '';
    if (after && sameHost(after, request.host)) return reply.redirect(after, 303);
    void reply.headers(CONSOLE_SECURITY_HEADERS);
    return reply.type('text/html; charset=utf-8').send(loginPage({ signedOut: true }));
  };
  app.get(`${OIDC_PATH}/logout`, { config: PUBLIC }, logout);
  app.post(`${OIDC_PATH}/logout`, { config: PUBLIC }, logout);
}

/** A redirect after logout goes to the manager's own host only (any of its ports). */
function sameHost(uri: string, host: string): boolean {
  try {
    const url = new URL(uri);
    return (
      url.hostname === host.replace(/:\d+$/, '').replace(/^\[|\]$/g, '') && /^https?:$/.test(url.protocol)
    );
  } catch {
    return false;
  }
}
