/**
 * The UNS console's cookie session and its CSRF protection: the kernel's mechanism
 * (src/kernel/http/csrf.ts), as the edge uses it, for the UNS's own users. At
 * `POST /auth/console/login` the UNS sets `jwtAccess` (the session, HttpOnly) and `csrfToken`; a
 * change authenticated by the cookie from a browser (every POST to /mqtt/gql among them) must
 * carry `X-CSRF-Token` equal to that token.
 */
import { cookieSession } from '../../kernel/http/csrf.js';

export const { SESSION_COOKIE, CSRF_COOKIE, checkCsrf, setSessionCookies, clearSessionCookies } =
  cookieSession({ session: 'jwtAccess', csrf: 'csrfToken', browsersOnly: true });
