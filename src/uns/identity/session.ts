/**
 * The UNS console's session cookie and its CSRF protection, the edge's approach
 * (src/edge/auth/csrf.ts) for the UNS's own users. At `POST /auth/console/login` the UNS sets two
 * cookies: `jwtAccess` (the session, HttpOnly)
 * and `csrfToken` (readable by the console's script). A request that changes state and is
 * authenticated by the cookie (every POST to /mqtt/gql among them) must carry the header
 * `X-CSRF-Token` equal to that token. Another site can neither read the token nor set the header.
 *
 * The token is `<random>.<HMAC-SHA256(key = the session JWT, random)>`: bound to the session, so a
 * cookie planted by a sibling host (cookie tossing) does not pass, and no key is kept on the UNS.
 *
 * Bearer and Basic callers are not concerned (a browser never sends those on its own). A request is held to the rule when it comes from a browser, which is when
 * it carries `Origin`, `Sec-Fetch-Site` (every current browser sends one or both on a change) or
 * the `csrfToken` cookie (every browser that signed in to the console holds it).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ERRORS } from '../../kernel/errors.js';

export const SESSION_COOKIE = 'jwtAccess';
export const CSRF_COOKIE = 'csrfToken';
export const CSRF_HEADER = 'x-csrf-token';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** A fresh token for the session `jwt`. */
export function newCsrfToken(jwt: string): string {
  const nonce = randomBytes(18).toString('base64url');
  return `${nonce}.${mac(jwt, nonce)}`;
}

/** Whether `token` was made by `newCsrfToken` for the session `jwt`. */
export function csrfTokenValid(token: unknown, jwt: string | undefined): boolean {
  if (typeof token !== 'string' || !jwt || token.length > 200) return false;
  const dot = token.indexOf('.');
  if (dot <= 0) return false;
  const given = Buffer.from(token.slice(dot + 1));
  const expected = Buffer.from(mac(jwt, token.slice(0, dot)));
  return given.length === expected.length && timingSafeEqual(given, expected);
}

function mac(jwt: string, nonce: string): string {
  return createHmac('sha256', jwt).update(`csrf:${nonce}`).digest('base64url');
}

/** Whether the request came from a browser (see the top of this file). */
export function fromBrowser(request: FastifyRequest): boolean {
  const h = request.headers;
  return (
    h.origin !== undefined ||
    h['sec-fetch-site'] !== undefined ||
    request.cookies?.[CSRF_COOKIE] !== undefined
  );
}

/**
 * Refuses a state-changing request authenticated by the session cookie from a browser without a
 * valid `X-CSRF-Token` (equal to the `csrfToken` cookie when the browser sent it).
 */
export function checkCsrf(request: FastifyRequest): void {
  if (SAFE_METHODS.has(request.method) || request.auth?.scheme !== 'cookie' || !fromBrowser(request)) return;
  const header = request.headers[CSRF_HEADER];
  const cookie = request.cookies?.[CSRF_COOKIE];
  const ok =
    typeof header === 'string' &&
    (cookie === undefined || cookie === header) &&
    csrfTokenValid(header, request.cookies?.[SESSION_COOKIE]);
  if (!ok) {
    throw new AppError(
      ERRORS.csrfRequired,
      `${request.method} with the session cookie needs the header X-CSRF-Token set to the csrfToken cookie (sign in again if it is missing)`,
    );
  }
}

/** Sets the session cookie (the access token) and its CSRF token. */
export function setSessionCookies(reply: FastifyReply, jwt: string, maxAge: number, secure: boolean): void {
  const common = { path: '/', secure, sameSite: 'strict' as const, maxAge };
  void reply.setCookie(SESSION_COOKIE, jwt, { ...common, httpOnly: true });
  void reply.setCookie(CSRF_COOKIE, newCsrfToken(jwt), { ...common, httpOnly: false });
}

/** Clears both (logout). */
export function clearSessionCookies(reply: FastifyReply, secure: boolean): void {
  const common = { path: '/', secure, sameSite: 'strict' as const };
  void reply.clearCookie(SESSION_COOKIE, { ...common, httpOnly: true });
  void reply.clearCookie(CSRF_COOKIE, { ...common, httpOnly: false });
}
