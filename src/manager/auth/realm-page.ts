/**
 * The realm's sign-in page: server-rendered HTML (no script), a form that posts back to the
 * authorization endpoint with the authorization request's parameters as hidden fields. Its style
 * sheet is a file of its own (`login.css`), so the page holds under the consoles' strict CSP.
 */
import { consoleSecurityHeaders } from '../../kernel/http/console.js';

/**
 * The consoles' headers (kernel/http/console.ts), with forms allowed to post to the redirect of a
 * client (the realm's sign-in answers with a redirect to the client's URI).
 */
export const CONSOLE_SECURITY_HEADERS = consoleSecurityHeaders("'self' https: http:");

const FORWARDED = [
  'client_id',
  'redirect_uri',
  'response_type',
  'scope',
  'state',
  'nonce',
  'code_challenge',
  'code_challenge_method',
];

export const LOGIN_CSS = `
:root { color-scheme: light dark; font-family: system-ui, sans-serif; }
body { margin: 0; min-height: 100vh; display: grid; place-items: center; background: #f4f5f7; color: #1d2330; }
main { background: #fff; padding: 2rem; border-radius: 8px; width: min(24rem, 92vw); box-shadow: 0 2px 12px rgb(0 0 0 / 12%); }
h1 { font-size: 1.35rem; margin: 0 0 .25rem; }
p.realm { margin: 0 0 1.25rem; color: #4a5263; }
label { display: block; font-weight: 600; margin: .9rem 0 .3rem; }
input { width: 100%; box-sizing: border-box; padding: .55rem .6rem; font: inherit; border: 1px solid #8a93a6; border-radius: 4px; }
input:focus-visible, button:focus-visible { outline: 3px solid #1f5fbf; outline-offset: 1px; }
button { margin-top: 1.25rem; width: 100%; padding: .65rem; font: inherit; font-weight: 600; color: #fff; background: #1f5fbf; border: 0; border-radius: 4px; cursor: pointer; }
[role=alert] { margin: 1rem 0 0; padding: .6rem .75rem; border-radius: 4px; background: #fde8e8; color: #8a1111; }
@media (prefers-color-scheme: dark) {
  body { background: #12151b; color: #e6e9ef; }
  main { background: #1c2029; }
  p.realm { color: #aeb6c6; }
  input { background: #12151b; color: inherit; border-color: #6d768a; }
  button { background: #3d7be0; }
  [role=alert] { background: #4a1717; color: #ffd6d6; }
}
`;

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export function loginPage(options: {
  params?: Record<string, unknown>;
  error?: string;
  fatal?: string;
  signedOut?: boolean;
}): string {
  const head =
    '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    '<title>Sign in to the edge manager</title>' +
    '<link rel="stylesheet" href="/auth/realms/standalone/login.css"></head><body><main>';
  const tail = '</main></body></html>';
  if (options.signedOut) {
    return `${head}<h1>Signed out</h1><p class="realm">Your manager session has ended.</p>${tail}`;
  }
  if (options.fatal !== undefined) {
    return `${head}<h1>Sign-in request refused</h1><p role="alert">${escape(options.fatal)}</p>${tail}`;
  }
  const params = options.params ?? {};
  const hidden = FORWARDED.filter((k) => typeof params[k] === 'string')
    .map((k) => `<input type="hidden" name="${k}" value="${escape(String(params[k]))}">`)
    .join('');
  const user = typeof params.username === 'string' ? escape(params.username) : '';
  return (
    `${head}<h1>Sign in to the edge manager</h1><p class="realm">Realm <strong>standalone</strong></p>` +
    `<form method="post" action="/auth/realms/standalone/protocol/openid-connect/auth">${hidden}` +
    `<label for="username">User name</label><input id="username" name="username" autocomplete="username" required value="${user}"${user ? '' : ' autofocus'}>` +
    `<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required${user ? ' autofocus' : ''}>` +
    (options.error ? `<p role="alert">${escape(options.error)}</p>` : '') +
    `<button type="submit">Sign in</button></form>${tail}`
  );
}
