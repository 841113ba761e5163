/**
 * The manager console's side of the sign-in (the realm's client `manager-console`), on the main
 * and the admin ports alike: `GET /console/login` starts an authorization code request with PKCE
 * S256 (the verifier stays on the manager, keyed by the request's `state`) and sends the browser
 * to the realm's form; `GET /console/callback` takes the code back, redeems it with the verifier
 * and sets the cookie session (`mwmSession` + `mwmCsrfToken`); `GET /console/session` answers who
 * is signed in; `POST /console/logout` ends the session. The tokens never reach the page's script.
 *
 * Bound: at most `MAX_PENDING` sign-ins in progress (10 minutes each).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { principalOf } from './hook.js';
import { CONSOLE_SECURITY_HEADERS, loginPage } from './realm-page.js';
import { CALLBACK_PATH, CONSOLE_CLIENT_ID, OIDC_PATH, REALM_PATH, RealmError, type Realm } from './realm.js';
import { clearSessionCookies, LOGIN_COOKIE, SESSION_COOKIE, setSessionCookies } from './session.js';

export const MAX_PENDING = 10_000;
const PENDING_MS = 10 * 60_000;

interface Pending {
  verifier: string;
  redirectUri: string;
  until: number;
}

export interface ConsoleSessionOptions {
  realm: Realm;
  secure: boolean;
  /** Which console this port serves: the main one, or the admin one (tokens, users and roles). */
  kind: 'main' | 'admin';
  /** The main port (where the realm is served), once bound. */
  mainPort: () => number;
}

export async function consoleSessionRoutes(app: FastifyInstance, options: ConsoleSessionOptions) {
  const { realm, secure } = options;
  const pending = new Map<string, Pending>();
  const realmBase = (request: FastifyRequest) => {
    const hostname = request.host.replace(/:\d+$/, '');
    return `${request.protocol}://${hostname}:${options.mainPort()}`;
  };

  app.get('/console/login', { config: { permission: 'public' } }, async (request, reply) => {
    const now = Date.now();
    for (const [k, p] of pending) if (p.until <= now) pending.delete(k);
    if (pending.size >= MAX_PENDING) {
      return reply.code(503).header('retry-after', '60').send({ message: 'too many sign-ins in progress' });
    }
    const state = randomBytes(24).toString('base64url');
    const verifier = randomBytes(48).toString('base64url');
    const redirectUri = `${request.protocol}://${request.host}${CALLBACK_PATH}`;
    pending.set(state, { verifier, redirectUri, until: now + PENDING_MS });
    const url = new URL(`${realmBase(request)}${OIDC_PATH}/auth`);
    const q = {
      response_type: 'code',
      client_id: CONSOLE_CLIENT_ID,
      redirect_uri: redirectUri,
      scope: 'openid profile',
      state,
      nonce: randomBytes(16).toString('base64url'),
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    };
    for (const [k, v] of Object.entries(q)) url.searchParams.set(k, v);
    void reply.setCookie(LOGIN_COOKIE, state, {
      path: '/console',
      secure,
      httpOnly: true,
      sameSite: 'lax',
      maxAge: PENDING_MS / 1000,
    });
    return reply.header('cache-control', 'no-store').redirect(url.toString(), 303);
  });

  app.get<{ Querystring: Record<string, unknown> }>(
    CALLBACK_PATH,
    { config: { permission: 'public' } },
    async (request, reply) => {
      const q = request.query;
      const state = typeof q.state === 'string' ? q.state : '';
      const code = typeof q.code === 'string' ? q.code : '';
      const p = pending.get(state);
      pending.delete(state);
      void reply.clearCookie(LOGIN_COOKIE, { path: '/console', secure, httpOnly: true, sameSite: 'lax' });
      if (!p || p.until <= Date.now() || request.cookies?.[LOGIN_COOKIE] !== state || !code) {
        return refuse(reply, 'This sign-in is unknown or expired. Open the console and sign in again.');
      }
      try {
        const tokens = await realm.exchange(
          { code, clientId: CONSOLE_CLIENT_ID, redirectUri: p.redirectUri, codeVerifier: p.verifier },
          `${realmBase(request)}${REALM_PATH}`,
        );
        setSessionCookies(reply, tokens.access_token, tokens.expires_in, secure);
      } catch (err) {
        if (err instanceof RealmError) return refuse(reply, err.message);
        throw err;
      }
      return reply.header('cache-control', 'no-store').redirect('/', 303);
    },
  );

  app.get('/console/session', async (request) => {
    const p = principalOf(request);
    return {
      subject: p.subject,
      username: p.username,
      scheme: request.auth?.scheme ?? 'bearer',
      grants: p.grants,
      realm: `${realmBase(request)}${REALM_PATH}`,
      console: options.kind,
    };
  });

  // Any signed-in caller may end their own session (a viewer too); the CSRF rule holds.
  app.post('/console/logout', { config: { permission: 'read' } }, async (request, reply) => {
    const claims = realm.peek(request.cookies?.[SESSION_COOKIE] ?? '');
    if (claims) await realm.endSession(claims.sid);
    clearSessionCookies(reply, secure);
    return reply.code(204).send();
  });
}

function refuse(reply: FastifyReply, message: string) {
  return reply
    .code(400)
    .headers(CONSOLE_SECURITY_HEADERS)
    .header('cache-control', 'no-store')
    .type('text/html; charset=utf-8')
    .send(loginPage({ fatal: message }));
}
