/**
 * The edge's cookie session (the console's credential) and its CSRF protection: the kernel's
 * mechanism (src/kernel/http/csrf.ts) with the contract's cookie names, `jwtAccess` (the session)
 * and `csrfToken`, held to the rule for browsers only (scripts following the contract's bootstrap
 * send the cookie too).
 */
import { cookieSession } from '../../kernel/http/csrf.js';

export const {
  SESSION_COOKIE,
  CSRF_COOKIE,
  checkCsrf,
  checkCsrfConnectionInit,
  setSessionCookies,
  clearSessionCookies,
} = cookieSession({ session: 'jwtAccess', csrf: 'csrfToken', browsersOnly: true });
