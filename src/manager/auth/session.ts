/**
 * The manager console's cookie session and its CSRF protection (the edge console's rule, with the
 * manager's own cookie names: on one host the edge, the UNS and the manager share cookies, ports
 * apart). After a sign-in through the realm the manager sets `mwmSession` (the realm's access
 * token, HttpOnly) and `mwmCsrfToken` (readable by the console's script). A state change sent by
 * a browser with the session cookie must carry `X-CSRF-Token` equal to that token, which is
 * `<random>.<HMAC-SHA256(key = the session token, random)>`: bound to the session.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ERRORS } from '../../kernel/errors.js';

export const SESSION_COOKIE = 'mwmSession';
export const CSRF_COOKIE = 'mwmCsrfToken';
/** The PKCE verifier and state of a sign-in in progress (10 minutes). */
export const LOGIN_COOKIE = 'mwmLogin';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function newCsrfToken(session: string): string {
  const nonce = randomBytes(18).toString('base64url');
  return `${nonce}.${mac(session, nonce)}`;
}

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

/** Refuses a state change authenticated by the session cookie without a valid `X-CSRF-Token`. */
export function checkCsrf(request: FastifyRequest): void {
  if (SAFE_METHODS.has(request.method) || request.auth?.scheme !== 'cookie') return;
  const header = request.headers['x-csrf-token'];
  const cookie = request.cookies?.[CSRF_COOKIE];
  const ok =
    typeof header === 'string' &&
    (cookie === undefined || cookie === header) &&
    csrfTokenValid(header, request.cookies?.[SESSION_COOKIE]);
  if (!ok) {
    throw new AppError(
      ERRORS.csrfRequired,
      `${request.method} with the session cookie needs the header X-CSRF-Token set to the mwmCsrfToken cookie (sign in again if it is missing)`,
    );
  }
}

export function setSessionCookies(reply: FastifyReply, token: string, maxAge: number, secure: boolean): void {
  const common = { path: '/', secure, sameSite: 'strict' as const, maxAge };
  void reply.setCookie(SESSION_COOKIE, token, { ...common, httpOnly: true });
  void reply.setCookie(CSRF_COOKIE, newCsrfToken(token), { ...common, httpOnly: false });
}

export function clearSessionCookies(reply: FastifyReply, secure: boolean): void {
  const common = { path: '/', secure, sameSite: 'strict' as const };
  void reply.clearCookie(SESSION_COOKIE, { ...common, httpOnly: true });
  void reply.clearCookie(CSRF_COOKIE, { ...common, httpOnly: false });
}
