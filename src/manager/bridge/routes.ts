/**
 * The bridge: `/api/v1/edge/{projectId}/{deviceId}/<edge path>` forwards any call (any method,
 * REST or GraphQL, multipart included) to that edge over its link, with the edge's own
 * credential in place of the caller's token and the caller (`BridgeActor`: role over the
 * project, subject, user, request id) in the link's frame: the edge runs the call as that role at
 * most. It answers the edge's status, headers and body.
 * Bodies stream both ways; hop-by-hop headers are dropped. Offline: 503; no answer in time: 504.
 * A WebSocket upgrade at the same prefix (a GraphQL subscription, `graphql-transport-ws` or
 * `graphql-ws`) is relayed over the link too (src/manager/link/sockets.ts), for any role over the
 * project; with the console's session cookie, its `connection_init` must carry the CSRF token.
 * The sending is the bridge's service (service.ts); this file is the HTTP side of it.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { Transform, type Readable } from 'node:stream';
import { Type, type Static } from '@sinclair/typebox';
import { AppError, ERRORS } from '../../kernel/errors.js';
import { LINK_SOCKET_PROTOCOLS, bridgeNeedsAdmin, forwardableHeaders } from '../../kernel/link/protocol.js';
import { checkCsrfConnectionInit, principalOf, requireRole } from '../auth/index.js';
import { BRIDGE_MAX_BODY, principalActor, type BridgeService } from './service.js';

/** The caller's credentials and cookies never reach the edge. */
export const DROP = new Set(['x-authtoken', 'authorization', 'cookie']);
/** Nor the browser's own WebSocket handshake (the edge's socket makes its own). */
const DROP_SOCKET = new Set([
  ...DROP,
  'origin',
  'sec-websocket-key',
  'sec-websocket-version',
  'sec-websocket-extensions',
  'sec-websocket-protocol',
]);
/** Response headers the manager sets itself. */
export const DROP_RESPONSE = new Set(['set-cookie', 'connection', 'keep-alive', 'transfer-encoding']);

const BridgeParams = Type.Object({
  projectId: Type.String({ minLength: 1, maxLength: 100 }),
  deviceId: Type.String({ minLength: 1, maxLength: 100 }),
  '*': Type.String(),
});
type BridgeParams = Static<typeof BridgeParams>;

type BridgeTarget = Awaited<ReturnType<BridgeService['fleet']['bridgeTarget']>>;
/** The device of each upgrade, found before it (preHandler), used once it is done. */
const targets = new WeakMap<FastifyRequest, BridgeTarget>();

export async function bridgeRoutes(app: FastifyInstance, options: { bridge: BridgeService }) {
  const { bridge } = options;
  // Bodies are not parsed here: the raw stream goes to the edge, counted against the bound.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));

  // GET needs any role; state changes need operator, the edge's credentials and device
  // management admin (checked on the project below).
  const handler = async (request: FastifyRequest<{ Params: BridgeParams }>, reply: FastifyReply) => {
    const principal = principalOf(request);
    const { projectId, deviceId } = request.params;
    // From memory after the first call (see FleetService.bridgeTarget): no database read.
    const target = await bridge.fleet.bridgeTarget(principal, deviceId, projectId);
    const path = edgePath(request, projectId, deviceId);
    if (request.method !== 'GET' && request.method !== 'HEAD' && request.method !== 'OPTIONS') {
      // The edge's credentials and device management: admin here (and on the edge, which checks
      // it again on the route that answers, whatever this path looks like).
      requireRole(principal, target, bridgeNeedsAdmin(request.method, path) ? 'admin' : 'operator');
    }
    // The edge runs the call as this caller's role over the project, never as its own admin.
    const actor = principalActor(principal, target, request.id);
    const raw0 = (request.body as Readable | undefined) ?? null;
    const body = raw0 ? limitBody(raw0, BRIDGE_MAX_BODY) : null;
    // The target holds the edge's credential: no second lookup.
    const res = await bridge.call(
      deviceId,
      { method: request.method, path, headers: forwardableHeaders(request.headers, DROP), body, actor },
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
  };
  app.route<{ Params: BridgeParams }>({
    method: ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    url: '/api/v1/edge/:projectId/:deviceId/*',
    schema: { params: BridgeParams },
    handler,
  });
  app.route<{ Params: BridgeParams }>({
    method: ['GET', 'HEAD'],
    url: '/api/v1/edge/:projectId/:deviceId/*',
    schema: { params: BridgeParams },
    // An upgrade: the device is found (or 404) and a GraphQL subprotocol offered (or 400) before it.
    preHandler: async (request) => {
      if (!request.ws) return;
      const offered = String(request.headers['sec-websocket-protocol'] ?? '').split(',');
      if (!offered.some((p) => LINK_SOCKET_PROTOCOLS.includes(p.trim())))
        throw new AppError(
          ERRORS.badRequest,
          `a bridged WebSocket speaks a GraphQL subprotocol: ${LINK_SOCKET_PROTOCOLS.join(' or ')}`,
        );
      const { projectId, deviceId } = request.params;
      targets.set(request, await bridge.fleet.bridgeTarget(principalOf(request), deviceId, projectId));
    },
    handler,
    // Synchronous: the browser's first message may follow the upgrade at once.
    wsHandler: (socket: WebSocket, request: FastifyRequest<{ Params: BridgeParams }>) => {
      const principal = principalOf(request);
      const { projectId, deviceId } = request.params;
      const target = targets.get(request);
      if (!target) return socket.close(1011, 'no bridge target');
      bridge.openSocket(
        deviceId,
        {
          path: edgePath(request, projectId, deviceId),
          headers: forwardableHeaders(request.headers, DROP_SOCKET),
          protocol: socket.protocol,
          actor: principalActor(principal, target, request.id),
          owner: principal.subject,
          checkInit: (payload) => checkCsrfConnectionInit(request, payload),
        },
        socket,
        target.credential,
      );
    },
  });
}

/** The edge path of a bridged request: what follows `/api/v1/edge/<project>/<device>`, query included. */
function edgePath(request: FastifyRequest, projectId: string, deviceId: string): string {
  const raw = request.raw.url ?? '';
  const prefix = `/api/v1/edge/${projectId}/${deviceId}`;
  const rest = raw.slice(raw.indexOf(prefix) + prefix.length) || '/';
  return rest.startsWith('/') ? rest : `/${rest}`;
}

/** The stream, failing once more than `max` bytes went through. */
function limitBody(body: Readable, max: number): Readable {
  let seen = 0;
  const counted = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      seen += chunk.length;
      if (seen > max)
        cb(new AppError(ERRORS.payloadTooLarge, `the request body is larger than ${max} bytes`));
      else cb(null, chunk);
    },
  });
  body.on('error', (err) => counted.destroy(err));
  return body.pipe(counted);
}
