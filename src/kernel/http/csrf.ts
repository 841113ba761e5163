/**
 * CSRF protection of a console's session cookie, one mechanism for the three services (edge, UNS,
 * manager; each binds its own cookie names: on one host the services share cookies, ports apart).
 * At sign-in a service sets two cookies: the session (HttpOnly) and a CSRF token (readable by the
 * console's script). A request that changes state and is authenticated by the cookie must carry
 * the header `X-CSRF-Token` equal to that token; a subscription over a WebSocket authenticated by
 * the cookie carries it in its `connection_init` payload (`{ "X-CSRF-Token": token }`). Another
 * site can neither read the token nor set the header.
 *
 * The token is `<random>.<HMAC-SHA256(key = the session token, random)>`: bound to the session,
 * so a cookie planted by a sibling host (cookie tossing) does not pass, and no key is kept.
 *
 * Bearer and Basic callers are not concerned (a browser never sends those on its own). With
 * `browsersOnly` (the edge and the UNS), scripts that follow the contract's bootstrap with a
 * cookie (`cookie: jwtAccess=<JWT>` on `PUT /auth/v2/eula` ...) are not held to the rule either: a
 * request is, when it comes from a browser, which is when it carries `Origin`, `Sec-Fetch-Site`
 * (every current browser sends one or both on a change) or the CSRF cookie (every browser that
 * signed in holds it). Without it (the manager, whose cookie only its console gets) every state
 * change with the cookie is.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ERRORS } from '../errors.js';

export const CSRF_HEADER = 'x-csrf-token';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** A fresh CSRF token for the session token `session`. */
export function newCsrfToken(session: string): string {
  const nonce = randomBytes(18).toString('base64url');
  return `${nonce}.${mac(session, nonce)}`;
}

/** Whether `token` was made by `newCsrfToken` for the session token `session`. */
export function csrfTokenValid(token: unknown, session: string | undefined): boolean {
  if (typeof token !== 'string' || !session || token.length > 200) return false;
  const dot = token.indexOf('.');
  if (dot <= 0) return false;
  const given = Buffer.from(token.slice(dot + 1));
  const expected = Buffer.from(mac(session, token.slice(0, dot)));
  return given.length === expected.length && timingSafeEqual(given, expected);
}

function mac(session: string, nonce: string): string {
  return createHmac('sha256', session).update(`csrf:${nonce}`).digest('base64url');
}

export interface CookieSessionNames {
  /** The session cookie (HttpOnly). */
  session: string;
  /** The CSRF token cookie (readable by the console's script). */
  csrf: string;
  /** Whether only requests from a browser are held to the rule (see the top). */
  browsersOnly: boolean;
}

/** A service's cookie session: its cookie names bound to the mechanism above. */
export function cookieSession(names: CookieSessionNames) {
  const { session: SESSION, csrf: CSRF } = names;

  /** Whether the request came from a browser (see the top of this file). */
  const fromBrowser = (request: FastifyRequest): boolean => {
    const h = request.headers;
    return (
      h.origin !== undefined || h['sec-fetch-site'] !== undefined || request.cookies?.[CSRF] !== undefined
    );
  };
  const heldToRule = (request: FastifyRequest): boolean =>
    request.auth?.scheme === 'cookie' && (!names.browsersOnly || fromBrowser(request));

  return {
    SESSION_COOKIE: SESSION,
    CSRF_COOKIE: CSRF,

    /**
     * Refuses a state-changing request authenticated by the session cookie without a valid
     * `X-CSRF-Token` (equal to the CSRF cookie when the browser sent it).
     */
    checkCsrf(request: FastifyRequest): void {
      if (SAFE_METHODS.has(request.method) || !heldToRule(request)) return;
      const header = request.headers[CSRF_HEADER];
      const cookie = request.cookies?.[CSRF];
      const ok =
        typeof header === 'string' &&
        (cookie === undefined || cookie === header) &&
        csrfTokenValid(header, request.cookies?.[SESSION]);
      if (!ok) {
        throw new AppError(
          ERRORS.csrfRequired,
          `${request.method} with the session cookie needs the header X-CSRF-Token set to the ${CSRF} cookie (sign in again if it is missing)`,
        );
      }
    },

    /**
     * The same rule for a GraphQL subscription over a WebSocket: the upgrade carried the session
     * cookie, so the token must come in the `connection_init` payload.
     */
    checkCsrfConnectionInit(request: FastifyRequest, init: unknown): void {
      if (!heldToRule(request)) return;
      const payload = (init && typeof init === 'object' ? init : {}) as Record<string, unknown>;
      const headers = (
        payload.headers && typeof payload.headers === 'object' ? payload.headers : payload
      ) as Record<string, unknown>;
      const token = headers['X-CSRF-Token'] ?? headers[CSRF_HEADER] ?? payload.csrfToken;
      if (!csrfTokenValid(token, request.cookies?.[SESSION])) {
        throw new AppError(
          ERRORS.csrfRequired,
          `a subscription with the session cookie needs { "X-CSRF-Token": <${CSRF} cookie> } in connection_init`,
        );
      }
    },

    /** Sets the session cookie and its CSRF token (`secure` when the service speaks TLS). */
    setSessionCookies(reply: FastifyReply, token: string, maxAge: number, secure: boolean): void {
      const common = { path: '/', secure, sameSite: 'strict' as const, maxAge };
      void reply.setCookie(SESSION, token, { ...common, httpOnly: true });
      void reply.setCookie(CSRF, newCsrfToken(token), { ...common, httpOnly: false });
    },

    /** Clears both (logout). */
    clearSessionCookies(reply: FastifyReply, secure: boolean): void {
      const common = { path: '/', secure, sameSite: 'strict' as const };
      void reply.clearCookie(SESSION, { ...common, httpOnly: true });
      void reply.clearCookie(CSRF, { ...common, httpOnly: false });
    },
  };
}
