/**
 * The GraphQL side of a subscription socket whose upgrade came without credentials (see
 * `src/kernel/http/socket-auth.ts`): its first message must be `connection_init` with an
 * `Authorization` value in the payload (`{ "Authorization": "Bearer <token>" }`, or under
 * `payload.headers`; the name in any case). Nothing reaches mercurius before that value passed the
 * service's check; then the held messages are handed on in order.
 *
 * Refusals (the socket is closed; graphql-transport-ws close codes):
 * - 4401 `Unauthorized`: the first message is not a `connection_init` carrying `Authorization`;
 * - 4403 `Forbidden: <reason>`: the credentials were refused (bad or expired token, role, the
 *   service's own rules such as the edge's first-run setup);
 * - 4408 `Connection initialisation timeout`: no `connection_init` within
 *   `CONNECTION_INIT_TIMEOUT_MS` (so a socket without credentials never lingers);
 * - 4429 `Too many messages before connection_ack`: more than `MAX_HELD_MESSAGES` messages sent
 *   while the credentials are being checked.
 */
import type { IncomingMessage } from 'node:http';
import type { WebSocket, WebSocketServer } from 'ws';
import {
  CONNECTION_INIT_TIMEOUT_MS,
  socketAuthOf,
  type SocketInitAuthenticator,
} from '../http/socket-auth.js';

/** Messages a client may send after `connection_init` before its credentials are checked. */
export const MAX_HELD_MESSAGES = 16;

const guarded = new WeakSet<object>();

/** Installs the gate on every socket of `wss` whose upgrade deferred its authentication. */
export function authenticateOnConnectionInit(wss: WebSocketServer): void {
  if (guarded.has(wss)) return;
  guarded.add(wss);
  wss.on('connection', (socket: WebSocket, raw: IncomingMessage) => {
    const check = socketAuthOf(raw);
    if (check) gate(socket, check);
  });
}

function gate(socket: WebSocket, check: SocketInitAuthenticator): void {
  const emit = socket.emit.bind(socket);
  let state: 'waiting' | 'checking' | 'open' | 'refused' = 'waiting';
  const held: unknown[][] = [];
  const refuse = (code: number, reason: string): void => {
    if (state === 'refused') return;
    state = 'refused';
    held.length = 0;
    clearTimeout(timer);
    socket.close(code, closeReason(reason));
  };
  const timer = setTimeout(
    () => refuse(4408, 'Connection initialisation timeout'),
    CONNECTION_INIT_TIMEOUT_MS,
  );
  timer.unref();
  socket.once('close', () => clearTimeout(timer));

  socket.emit = ((event: string | symbol, ...args: unknown[]): boolean => {
    if (event !== 'message' || state === 'open') return emit(event, ...args);
    if (state === 'refused') return true;
    if (state === 'checking') {
      if (held.length >= MAX_HELD_MESSAGES) refuse(4429, 'Too many messages before connection_ack');
      else held.push(args);
      return true;
    }
    const authorization = initAuthorization(args[0]);
    if (authorization === undefined) {
      refuse(4401, 'Unauthorized: send { "Authorization": "Bearer <token>" } in connection_init');
      return true;
    }
    state = 'checking';
    held.push(args);
    check(authorization).then(
      () => {
        if (state !== 'checking') return;
        clearTimeout(timer);
        state = 'open';
        for (const message of held.splice(0)) emit('message', ...message);
      },
      (err: unknown) => refuse(4403, `Forbidden: ${err instanceof Error ? err.message : String(err)}`),
    );
    return true;
  }) as typeof socket.emit;
}

/** The `Authorization` value of a `connection_init` message; undefined for anything else. */
export function initAuthorization(data: unknown): string | undefined {
  const text = Buffer.isBuffer(data) ? data.toString('utf8') : typeof data === 'string' ? data : undefined;
  if (text === undefined) return undefined;
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isObject(message) || message.type !== 'connection_init' || !isObject(message.payload))
    return undefined;
  const payload = message.payload;
  return headerValue(payload) ?? (isObject(payload.headers) ? headerValue(payload.headers) : undefined);
}

function headerValue(fields: Record<string, unknown>): string | undefined {
  for (const [name, value] of Object.entries(fields)) {
    if (name.toLowerCase() === 'authorization' && typeof value === 'string' && value !== '') return value;
  }
  return undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A close frame's reason holds at most 123 bytes. */
function closeReason(reason: string): string {
  let out = reason;
  while (Buffer.byteLength(out) > 123) out = out.slice(0, -1);
  return out;
}
