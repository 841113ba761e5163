/**
 * A WebSocket upgrade whose credentials come in its first message. A browser cannot set the
 * `Authorization` header of a WebSocket upgrade, so a page signed in with a bearer token (an API
 * client's) sends it in the GraphQL `connection_init` payload instead:
 *
 * ```json
 * { "type": "connection_init", "payload": { "Authorization": "Bearer <access token>" } }
 * ```
 *
 * The service's authentication hook (`installAuthHook` with `socketInitAuth`) lets an upgrade of a
 * route declared `config: { socketInitAuth: true }` through without credentials, and attaches
 * here the check to run on that header value: the same one as for the HTTP header (token,
 * expiry, role, the service's own rules). The GraphQL layer (`src/kernel/graphql/socket-auth.ts`)
 * runs it on `connection_init` and refuses the socket with close code 4401 (no credentials),
 * 4403 (refused credentials) or 4408 (no `connection_init` within `CONNECTION_INIT_TIMEOUT_MS`).
 */
import type { IncomingMessage } from 'node:http';
import type { AuthContext } from './auth-types.js';

/** Checks an `Authorization` value sent in `connection_init`; throws an `AppError` to refuse. */
export type SocketInitAuthenticator = (authorization: string) => Promise<AuthContext>;

/** How long an upgraded socket without credentials may wait for its `connection_init`. */
export const CONNECTION_INIT_TIMEOUT_MS = 5_000;

const kSocketInitAuth = Symbol('millwright.socketInitAuth');

type WithSocketAuth = IncomingMessage & { [kSocketInitAuth]?: SocketInitAuthenticator };

/** Marks an upgrade request as authenticated later, by `check`, on its `connection_init`. */
export function deferSocketAuth(raw: IncomingMessage, check: SocketInitAuthenticator): void {
  (raw as WithSocketAuth)[kSocketInitAuth] = check;
}

/** The check attached to an upgrade request that came without credentials, if any. */
export function socketAuthOf(raw: IncomingMessage): SocketInitAuthenticator | undefined {
  return (raw as WithSocketAuth)[kSocketInitAuth];
}
