/**
 * The edge link: one WebSocket (over TLS) from each enrolled edge to its manager, at `/dm/link`
 * on the manager's main port, authenticated by the device's identifier and link secret
 * (`X-Device-Id`, `X-Device-Secret`). Both services speak it, and so does `bench/fleet`, hence it
 * lives in the kernel.
 *
 * Control messages are JSON text frames (`LinkMessage`); request and response bodies travel as
 * binary frames: a 4-byte big-endian stream id, then at most `LINK_CHUNK` bytes of body. Flow per
 * bridged request: manager `req` → (binary request body)* → manager `end`; edge `res` (status and
 * headers) → (binary response body)* → edge `end`, or edge `err`. The manager may `cancel`.
 *
 * A manager that lists `inline` in its welcome's `features` also takes a small answer in one
 * frame: `res` with the whole body in `body` (base64, at most `LINK_INLINE_MAX` bytes decoded),
 * and no body frames or `end` after it. An edge uses that only when the manager offered it, so
 * either side may be older than the other.
 *
 * High availability: a paired edge sends `lease` (renewal) every third of its lease; the manager
 * answers `ha` (see `HaRoleMessage`), and sends `ha` news of pairing, unpairing and failover.
 *
 * Bridged WebSockets (GraphQL subscriptions, `graphql-transport-ws` or `graphql-ws`), offered by an
 * edge that lists `sockets` in its hello's `features`: manager `wsopen` (path, headers, offered
 * subprotocols, actor) → edge `wsup` (the subprotocol its endpoint chose) or `wsclose`; then each
 * WebSocket message, either way, is one binary frame (stream id, then the message's UTF-8 text, at
 * most `LINK_SOCKET_MAX_MESSAGE` bytes); either side ends the stream with `wsclose` (code, reason),
 * and the other closes its socket with that code. Stream ids come from the same counter as request
 * ids (the manager's), so a binary frame's id names one request or one socket. See
 * docs/security.md for the bounds (`LINK_SOCKET_*`, the manager's `bridgeMaxSockets*`).
 */

/** Largest WebSocket message either side accepts (a bigger one closes the link, code 1009). */
export const LINK_MAX_MESSAGE = 1024 * 1024;
/** Largest body slice in one binary frame. */
export const LINK_CHUNK = 64 * 1024;
/** Largest response body an edge sends inline in its `res` (feature `inline`). */
export const LINK_INLINE_MAX = 16 * 1024;
/** What this manager offers in its welcome. */
export const LINK_FEATURE_INLINE = 'inline';
/** What an edge offers in its hello: bridged WebSockets (`wsopen`). */
export const LINK_FEATURE_SOCKETS = 'sockets';
/** Largest WebSocket message relayed over a bridged socket, either way (bigger: close 1009). */
export const LINK_SOCKET_MAX_MESSAGE = 256 * 1024;
/**
 * Most bytes waiting to be written to one end of a bridged socket (a browser that reads too
 * slowly, an edge endpoint behind a congested link): more closes that socket, code 1013.
 */
export const LINK_SOCKET_MAX_BUFFERED = 1024 * 1024;
/** Bridged sockets an edge holds open at once at most (more: `wsclose` 1013). */
export const LINK_SOCKET_MAX_PER_EDGE = 64;
/** A bridged socket's close code when the edge's link ended (the device went offline). */
export const LINK_SOCKET_CLOSE_OFFLINE = 4503;
/** A bridged socket's close code when the edge did not open it within the bridge's timeout. */
export const LINK_SOCKET_CLOSE_TIMEOUT = 4504;
/** The GraphQL subprotocols a bridged socket may speak. */
export const LINK_SOCKET_PROTOCOLS: readonly string[] = ['graphql-transport-ws', 'graphql-ws'];
/** Most headers in a bridged request or response. */
export const LINK_MAX_HEADERS = 200;
export const LINK_PATH = '/dm/link';
/**
 * The close code of an edge that enrolled again (a move, `"move": true`): the manager retires the
 * device record of that link (the link proved it is that device), instead of keeping it offline.
 */
export const LINK_CLOSE_MOVED = 4001;

export type LinkHeaders = Record<string, string | string[]>;

export type LinkMessage =
  // edge → manager
  | {
      t: 'hello';
      version: string;
      millwright: string;
      host: Record<string, unknown>;
      /** What this edge takes beyond requests (`sockets`); absent on older edges. */
      features?: string[];
    }
  | { t: 'hb'; metrics: Record<string, unknown> }
  | {
      t: 'res';
      id: number;
      status: number;
      headers: LinkHeaders;
      /** The whole body, base64 (feature `inline`); nothing follows for this id. */
      body?: string;
    }
  | { t: 'err'; id: number; status: number; message: string }
  /** A bridged socket opened on the edge, speaking `protocol`. */
  | { t: 'wsup'; id: number; protocol: string }
  /**
   * High availability: an edge of a pair asks for (or renews) its role; the manager answers `ha`
   * with the same `seq`. An edge sends it only while it knows itself paired (see `HaRoleMessage`).
   */
  | { t: 'lease'; seq: number }
  // manager → edge
  | HaRoleMessage
  | { t: 'welcome'; deviceId: string; heartbeatMs: number; reconnectMaxMs: number; features?: string[] }
  | {
      t: 'req';
      id: number;
      method: string;
      path: string;
      headers: LinkHeaders;
      body: boolean;
      /**
       * Who made the call on the manager, and the role it runs as on the edge (at most). An edge
       * reads a `req` without it (an older manager) as a viewer's, never an admin's.
       */
      actor?: BridgeActor;
    }
  | { t: 'cancel'; id: number }
  /** Opens a WebSocket to the edge's own `path` (a GraphQL endpoint) as `actor` at most. */
  | {
      t: 'wsopen';
      id: number;
      path: string;
      headers: LinkHeaders;
      protocols: string[];
      actor?: BridgeActor;
    }
  // both: the end of a bridged socket (the other side closes its socket with `code`)
  | { t: 'wsclose'; id: number; code: number; reason: string }
  // both: the end of a body (request body from the manager, response body from the edge)
  | { t: 'end'; id: number };

/** An edge's role in a high-availability pair; `none`: not paired (it polls as any edge). */
export type HaRole = 'active' | 'standby' | 'none';

/**
 * The manager's word on an edge's HA role: the answer to a `lease` (same `seq`), or news without
 * `seq` (paired, unpaired, lease moved). An `active` answer to a `lease` is a grant: the edge may
 * poll until `leaseMs` after it SENT that `lease` (its own clock), unless renewed; news never
 * grants (an edge told `active` asks at once). The manager moves the role to the standby only
 * after the active has not renewed for the pair's timeout (longer than `leaseMs`), with
 * `epoch + 1`; an edge never polls under an epoch older than one it has seen.
 */
export interface HaRoleMessage {
  t: 'ha';
  seq?: number;
  /** The pair's id; null with role `none`. */
  pairId: string | null;
  role: HaRole;
  epoch: number;
  leaseMs: number;
}

/** The roles a bridged call may run as on the edge, weakest first. */
export const BRIDGE_ROLES = ['viewer', 'operator', 'admin'] as const;
export type BridgeRole = (typeof BRIDGE_ROLES)[number];

/**
 * The manager's caller of a bridged call, as the `req` frame carries it: the edge runs the call
 * as `role` at most (whatever its own credential for the manager allows) and records the rest.
 */
export interface BridgeActor {
  /** The manager caller's role over the device's project, mapped onto the edge's roles. */
  role: BridgeRole;
  /** The manager's subject of the caller (`token:<id>`, `manager:templates`...). */
  subject: string;
  /** The caller's user name on the manager, when it is a user's token. */
  user: string | null;
  companyId: string | null;
  projectId: string | null;
  /** The manager's request id of the call. */
  requestId: string | null;
}

/** What an edge assumes of a `req` without an actor (a manager older than the field). */
export const UNKNOWN_BRIDGE_ACTOR: BridgeActor = Object.freeze({
  role: 'viewer',
  subject: 'manager:unknown',
  user: null,
  companyId: null,
  projectId: null,
  requestId: null,
});

const ACTOR_FIELD_MAX = 200;
const actorText = (v: unknown): string | null =>
  typeof v === 'string' && v.length > 0 && v.length <= ACTOR_FIELD_MAX ? v : null;

/**
 * The actor of a `req` frame, checked: absent or malformed is `UNKNOWN_BRIDGE_ACTOR` (a viewer);
 * an unknown role is a viewer's; text fields over 200 characters are dropped.
 */
export function parseBridgeActor(raw: unknown): BridgeActor {
  if (!raw || typeof raw !== 'object') return UNKNOWN_BRIDGE_ACTOR;
  const a = raw as Record<string, unknown>;
  const role = BRIDGE_ROLES.includes(a.role as BridgeRole) ? (a.role as BridgeRole) : 'viewer';
  return {
    role,
    subject: actorText(a.subject) ?? UNKNOWN_BRIDGE_ACTOR.subject,
    user: actorText(a.user),
    companyId: actorText(a.companyId),
    projectId: actorText(a.projectId),
    requestId: actorText(a.requestId),
  };
}

/** The weaker of two bridge roles. */
export function weakerRole(a: BridgeRole, b: BridgeRole): BridgeRole {
  return BRIDGE_ROLES.indexOf(a) <= BRIDGE_ROLES.indexOf(b) ? a : b;
}

/**
 * Whether a bridged call needs the admin role on both sides: a state change (any method but
 * GET, HEAD and OPTIONS) of the edge's credentials (`/auth/...`: users, passwords, API clients,
 * API tokens; `/datahub/v1/access-keys`) or of its device management (`/dm/...`). `path` is a
 * route pattern or a request path (its query is ignored). The manager checks it on the path it
 * forwards; the edge, authoritatively, on the route that answers.
 */
export function bridgeNeedsAdmin(method: string, path: string): boolean {
  const m = method.toUpperCase();
  if (m === 'GET' || m === 'HEAD' || m === 'OPTIONS') return false;
  const q = path.indexOf('?');
  const p = (q >= 0 ? path.slice(0, q) : path).toLowerCase();
  return p.startsWith('/auth/') || p.startsWith('/dm/') || p.startsWith('/datahub/v1/access-keys');
}

/**
 * Sections of a configuration template that hold the edge's credentials (`auth`: users, API
 * clients; `datahub`: access keys). Applying a template that has one is a change of the edge's
 * credentials: through the bridge it needs the admin role on both sides, as `bridgeNeedsAdmin`.
 */
export const CREDENTIAL_SECTIONS: readonly string[] = ['auth', 'datahub'];

/** The credential sections among `sections` (a template's section names). */
export function credentialSectionsOf(sections: Iterable<string>): string[] {
  return [...sections].filter((s) => CREDENTIAL_SECTIONS.includes(s));
}

/** A binary body frame: stream id, then the bytes. */
export function bodyFrame(id: number, chunk: Buffer): Buffer {
  const head = Buffer.allocUnsafe(4);
  head.writeUInt32BE(id >>> 0, 0);
  return Buffer.concat([head, chunk]);
}

export function parseBodyFrame(frame: Buffer): { id: number; chunk: Buffer } | null {
  if (frame.length < 4) return null;
  return { id: frame.readUInt32BE(0), chunk: frame.subarray(4) };
}

/** A control message, or null when the frame is not one (the link then closes: protocol error). */
export function parseMessage(text: string): LinkMessage | null {
  let m: unknown;
  try {
    m = JSON.parse(text);
  } catch {
    return null;
  }
  if (!m || typeof m !== 'object' || typeof (m as { t?: unknown }).t !== 'string') return null;
  return m as LinkMessage;
}

/** Hop-by-hop headers (RFC 9110 7.6.1) and those the bridge sets itself: never forwarded. */
export const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
]);

/** Headers of `raw` without hop-by-hop ones, those named by `Connection`, and `drop`. */
export function forwardableHeaders(
  raw: Record<string, string | string[] | undefined>,
  drop: ReadonlySet<string> = new Set(),
): LinkHeaders {
  const connection = raw.connection;
  const named =
    connection === undefined || connection === 'keep-alive' || connection === 'close'
      ? null
      : new Set(
          String(connection)
            .split(',')
            .map((s) => s.trim().toLowerCase())
            .filter(Boolean),
        );
  const out: LinkHeaders = {};
  let n = 0;
  for (const k in raw) {
    const v = raw[k];
    // Node's parser gives lower-case names; other callers may not.
    const key = k.toLowerCase();
    if (v === undefined || HOP_BY_HOP.has(key) || drop.has(key) || named?.has(key)) continue;
    if (++n > LINK_MAX_HEADERS) break;
    out[key] = v;
  }
  return out;
}

/** Delay before reconnect attempt `attempt` (0-based): capped exponential backoff, full jitter. */
export function reconnectDelay(attempt: number, baseMs: number, capMs: number, random = Math.random): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/**
 * A close code one may send for a bridged socket: `code` when WebSocket allows sending it (1000-
 * 1003, 1007-1014, 3000-4999), else 1011 (1005 and 1006 only describe a close, never travel).
 */
export function sendableCloseCode(code: unknown): number {
  if (typeof code !== 'number' || !Number.isInteger(code)) return 1011;
  if ((code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999))
    return code;
  return 1011;
}

/** A close reason as a close frame carries it: at most 123 bytes of UTF-8. */
export function closeReason(reason: unknown): string {
  let out = typeof reason === 'string' ? reason : '';
  while (Buffer.byteLength(out) > 123) out = out.slice(0, -1);
  return out;
}
