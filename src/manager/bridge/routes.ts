/**
 * The bridge: `/api/v1/edge/{projectId}/{deviceId}/<edge path>` forwards any call (any method,
 * REST or GraphQL, multipart included) to that edge over its link, with the edge's own
 * credential in place of the caller's token, and answers the edge's status, headers and body.
 * Bodies stream both ways; hop-by-hop headers are dropped. Offline: 503; no answer in time: 504.
 *
 * Also the device OAuth clients (`/api/v1/device/{deviceId}/oauth-clients`), carried out on the
 * edge as API clients of that edge.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Readable, Transform } from 'node:stream';
import { Type, type Static } from '@sinclair/typebox';
import { AppError } from '../../kernel/errors.js';
import { forwardableHeaders } from '../../kernel/link/protocol.js';
import { principalOf, requireRole } from '../auth/index.js';
import { BRIDGE_TARGET_CACHE_SIZE, type FleetService } from '../fleet/service.js';
import type { LinkHub } from '../link/hub.js';

/** The caller's credentials and cookies never reach the edge. */
const DROP = new Set(['x-authtoken', 'authorization', 'cookie']);
/** Response headers the manager sets itself. */
const DROP_RESPONSE = new Set(['set-cookie', 'connection', 'keep-alive', 'transfer-encoding']);
/** Largest request body streamed to an edge through the bridge. */
export const BRIDGE_MAX_BODY = 64 * 1024 * 1024;

export interface BridgeOptions {
  fleet: FleetService;
  hub: LinkHub;
}

/**
 * Sends one call to a device's edge with the edge's credential (looked up unless the caller has
 * it already, as the bridge route does); answers the edge's reply.
 */
export async function callEdge(
  options: BridgeOptions,
  deviceId: string,
  call: { method: string; path: string; headers: Record<string, string | string[]>; body: Readable | null },
  known?: string,
) {
  const credential = known ?? (await options.fleet.edgeCredential(deviceId));
  if (!credential) throw new AppError(404, 'not_found', `device "${deviceId}" not found`);
  return options.hub.request(deviceId, {
    method: call.method,
    path: call.path,
    headers: { ...call.headers, authorization: edgeAuthorization(credential) },
    body: call.body,
  });
}

const authorizations = new Map<string, string>();

/** `Authorization` for the edge's credential (a legacy API token: Basic, empty password). */
function edgeAuthorization(credential: string): string {
  let value = authorizations.get(credential);
  if (value === undefined) {
    value = `Basic ${Buffer.from(`${credential}:`).toString('base64')}`;
    // As many as the bridge's target cache holds at most; a re-enrolled device's old one ages out.
    if (authorizations.size >= BRIDGE_TARGET_CACHE_SIZE) authorizations.clear();
    authorizations.set(credential, value);
  }
  return value;
}

/** A JSON call to a device's edge, answering its parsed body and status. */
export async function callEdgeJson(
  options: BridgeOptions,
  deviceId: string,
  method: string,
  path: string,
  json?: unknown,
  headers: Record<string, string> = {},
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- pending (issue 24, another's work in progress): the edge's JSON answer; to be typed when the bridge's client functions move to its service
): Promise<{ status: number; body: any }> {
  return callEdgeBytes(
    options,
    deviceId,
    method,
    path,
    json === undefined
      ? undefined
      : { contentType: 'application/json', bytes: Buffer.from(JSON.stringify(json)) },
    headers,
  );
}

/** A call to a device's edge with a raw body (e.g. a template upload chunk), answering its parsed body. */
export async function callEdgeBytes(
  options: BridgeOptions,
  deviceId: string,
  method: string,
  path: string,
  content?: { contentType: string; bytes: Buffer },
  headers: Record<string, string> = {},
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- pending (issue 24, another's work in progress): the edge's JSON answer; to be typed when the bridge's client functions move to its service
): Promise<{ status: number; body: any }> {
  const res = await callEdge(options, deviceId, {
    method,
    path,
    headers: content === undefined ? headers : { ...headers, 'content-type': content.contentType },
    body: content === undefined ? null : Readable.from([content.bytes]),
  });
  let raw: Buffer;
  if (Buffer.isBuffer(res.body)) raw = res.body;
  else {
    const chunks: Buffer[] = [];
    for await (const c of res.body) chunks.push(c as Buffer);
    raw = Buffer.concat(chunks);
  }
  const text = raw.toString('utf8');
  let body: unknown = undefined;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = text;
  }
  return { status: res.status, body };
}

const BridgeParams = Type.Object({
  projectId: Type.String({ minLength: 1, maxLength: 100 }),
  deviceId: Type.String({ minLength: 1, maxLength: 100 }),
  '*': Type.String(),
});
type BridgeParams = Static<typeof BridgeParams>;

export async function bridgeRoutes(app: FastifyInstance, options: BridgeOptions) {
  // Bodies are not parsed here: the raw stream goes to the edge, counted against the bound.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));

  app.route<{ Params: BridgeParams }>({
    method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    url: '/api/v1/edge/:projectId/:deviceId/*',
    // GET needs any role; state changes need operator (checked on the project below).
    schema: { params: BridgeParams },
    handler: async (request: FastifyRequest<{ Params: BridgeParams }>, reply: FastifyReply) => {
      const principal = principalOf(request);
      const { projectId, deviceId } = request.params;
      // From memory after the first call (see FleetService.bridgeTarget): no database read.
      const target = await options.fleet.bridgeTarget(principal, deviceId, projectId);
      if (request.method !== 'GET' && request.method !== 'HEAD' && request.method !== 'OPTIONS') {
        requireRole(principal, target, 'operator');
      }
      const raw = request.raw.url ?? '';
      const prefix = `/api/v1/edge/${projectId}/${deviceId}`;
      const rest = raw.slice(raw.indexOf(prefix) + prefix.length) || '/';
      const path = rest.startsWith('/') ? rest : `/${rest}`;
      const raw0 = (request.body as Readable | undefined) ?? null;
      const body = raw0 ? limitBody(raw0, BRIDGE_MAX_BODY) : null;
      // The target holds the edge's credential: no second lookup.
      const res = await callEdge(
        options,
        deviceId,
        { method: request.method, path, headers: forwardableHeaders(request.headers, DROP), body },
        target.credential,
      );
      reply.status(res.status);
      for (const [k, v] of Object.entries(res.headers)) {
        if (!DROP_RESPONSE.has(k.toLowerCase())) void reply.header(k, v);
      }
      if (request.method === 'HEAD') {
        if (!Buffer.isBuffer(res.body)) res.body.resume();
        return reply.send();
      }
      return reply.send(res.body);
    },
  });
}

/** The stream, failing once more than `max` bytes went through. */
function limitBody(body: Readable, max: number): Readable {
  let seen = 0;
  const counted = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      seen += chunk.length;
      if (seen > max) cb(new AppError(413, 'body_too_large', `the request body is larger than ${max} bytes`));
      else cb(null, chunk);
    },
  });
  body.on('error', (err) => counted.destroy(err));
  return body.pipe(counted);
}
