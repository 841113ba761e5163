/**
 * The manager console's cookie session and its CSRF protection: the kernel's mechanism
 * (src/kernel/http/csrf.ts) with the manager's own cookie names (on one host the edge, the UNS and
 * the manager share cookies, ports apart). After a sign-in through the realm the manager sets
 * `mwmSession` (the realm's access token, HttpOnly) and `mwmCsrfToken`. Only the console gets the
 * cookie, so every state change sent with it must carry `X-CSRF-Token`, browser or not.
 */
import { cookieSession } from '../../kernel/http/csrf.js';

/** The PKCE verifier and state of a sign-in in progress (10 minutes). */
export const LOGIN_COOKIE = 'mwmLogin';

export const {
  SESSION_COOKIE,
  CSRF_COOKIE,
  checkCsrf,
  checkCsrfConnectionInit,
  setSessionCookies,
  clearSessionCookies,
} = cookieSession({ session: 'mwmSession', csrf: 'mwmCsrfToken', browsersOnly: false });
