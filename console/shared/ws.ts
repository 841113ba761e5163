/**
 * GraphQL subscriptions over a WebSocket (`graphql-transport-ws`, which the edge's endpoints
 * speak), one socket per endpoint shared by the page's subscriptions. The browser sends the
 * session cookie with the upgrade, and `connection_init` carries the CSRF token (the `csrfToken`
 * cookie, which the edge asks of cookie-authenticated subscriptions) and, with an API client, its
 * token as `Authorization` (a browser cannot set that header on the upgrade; the edge checks it
 * on connection_init like the header, see src/kernel/http/socket-auth.ts).
 */
import { readCookie } from '../../src/client/fetch-transport.js';
import { API_BASE, CSRF_COOKIE, edge } from './api.js';

type Listener = { next: (data: unknown) => void; error: (message: string) => void };

interface Socket {
  ws: WebSocket;
  ready: Promise<void>;
  listeners: Map<string, Listener>;
}

const sockets = new Map<string, Socket>();
/** Sockets being opened (their token being fetched), so that concurrent subscriptions share one. */
const opening = new Map<string, Promise<Socket>>();
let nextId = 1;

async function open(path: string): Promise<Socket> {
  const known = sockets.get(path);
  if (known && known.ws.readyState <= WebSocket.OPEN) return known;
  let pending = opening.get(path);
  if (!pending) {
    pending = connect(path).finally(() => opening.delete(path));
    opening.set(path, pending);
  }
  return pending;
}

async function connect(path: string): Promise<Socket> {
  // The token (an API client's) first: the socket's listeners must be in place before it opens,
  // or its `open` event passes unheard and `connection_init` is never sent (the edge then closes it).
  const authorization = await edge()
    .authorization()
    .catch(() => undefined);
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${API_BASE}${path}`;
  const ws = new WebSocket(url, 'graphql-transport-ws');
  const listeners = new Map<string, Listener>();
  const csrf = readCookie(CSRF_COOKIE);
  const ready = new Promise<void>((resolve, reject) => {
    ws.addEventListener('open', () =>
      ws.send(
        JSON.stringify({
          type: 'connection_init',
          payload: {
            ...(csrf ? { 'X-CSRF-Token': csrf } : {}),
            ...(authorization ? { Authorization: authorization } : {}),
          },
        }),
      ),
    );
    ws.addEventListener('message', (ev) => {
      const msg = JSON.parse(String(ev.data)) as { type: string; id?: string; payload?: unknown };
      if (msg.type === 'connection_ack') resolve();
      else if (msg.type === 'ping') ws.send(JSON.stringify({ type: 'pong' }));
      else if (msg.id && msg.type === 'next') {
        const p = msg.payload as { data?: unknown; errors?: { message: string }[] };
        if (p.errors?.length) listeners.get(msg.id)?.error(p.errors.map((e) => e.message).join('; '));
        else listeners.get(msg.id)?.next(p.data);
      } else if (msg.id && msg.type === 'error') {
        const errors = (Array.isArray(msg.payload) ? msg.payload : [msg.payload]) as { message: string }[];
        listeners.get(msg.id)?.error(errors.map((e) => e?.message).join('; '));
      }
    });
    ws.addEventListener('close', (ev) => {
      reject(new Error(`subscription socket closed (${ev.code} ${ev.reason})`));
      // The reason says why (through the manager's bridge: 4503, the edge went offline).
      const why = ev.reason ? `${ev.code}: ${ev.reason}` : String(ev.code);
      for (const l of listeners.values()) l.error(`connection closed (${why})`);
      sockets.delete(path);
    });
  });
  const socket = { ws, ready, listeners };
  sockets.set(path, socket);
  return socket;
}

/**
 * Subscribes to `query` on endpoint `path`; answers the function that ends the subscription.
 * Errors (refusal, closed socket) go to `onError`.
 */
export function subscribe<T>(
  path: string,
  query: string,
  variables: Record<string, unknown> | undefined,
  onData: (data: T) => void,
  onError: (message: string) => void,
): () => void {
  const id = String(nextId++);
  let ended = false;
  let socket: Socket | undefined;
  open(path)
    .then(async (s) => {
      socket = s;
      await s.ready;
      if (ended) return;
      s.listeners.set(id, { next: (d) => onData(d as T), error: onError });
      s.ws.send(JSON.stringify({ id, type: 'subscribe', payload: { query, variables: variables ?? {} } }));
    })
    .catch((err: unknown) => onError(err instanceof Error ? err.message : String(err)));
  return () => {
    ended = true;
    if (!socket?.listeners.delete(id)) return;
    if (socket.ws.readyState === WebSocket.OPEN) socket.ws.send(JSON.stringify({ id, type: 'complete' }));
    if (socket.listeners.size === 0) {
      socket.ws.close();
      sockets.delete(path);
    }
  };
}
