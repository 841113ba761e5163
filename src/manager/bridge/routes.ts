/**
 * The bridge: `/api/v1/edge/{projectId}/{deviceId}/<edge path>` forwards any call (any method,
 * REST or GraphQL, multipart included) to that edge over its link, with the edge's own
 * credential in place of the caller's token and the caller (`BridgeActor`: role over the
 * project, subject, user, request id) in the link's frame: the edge runs the call as that role at
 * most. It answers the edge's status, headers and body.
 * Bodies stream both ways; hop-by-hop headers are dropped. Offline: 503; no answer in time: 504.
 * The sending is the bridge's service (service.ts); this file is the HTTP side of it.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Transform, type Readable } from 'node:stream';
import { Type, type Static } from '@sinclair/typebox';
import { AppError, ERRORS } from '../../kernel/errors.js';
import { bridgeNeedsAdmin, forwardableHeaders } from '../../kernel/link/protocol.js';
import { principalOf, requireRole } from '../auth/index.js';
import { BRIDGE_MAX_BODY, principalActor, type BridgeService } from './service.js';

/** The caller's credentials and cookies never reach the edge. */
const DROP = new Set(['x-authtoken', 'authorization', 'cookie']);
/** Response headers the manager sets itself. */
const DROP_RESPONSE = new Set(['set-cookie', 'connection', 'keep-alive', 'transfer-encoding']);

const BridgeParams = Type.Object({
  projectId: Type.String({ minLength: 1, maxLength: 100 }),
  deviceId: Type.String({ minLength: 1, maxLength: 100 }),
  '*': Type.String(),
});
type BridgeParams = Static<typeof BridgeParams>;

export async function bridgeRoutes(app: FastifyInstance, options: { bridge: BridgeService }) {
  const { bridge } = options;
  // Bodies are not parsed here: the raw stream goes to the edge, counted against the bound.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));

  app.route<{ Params: BridgeParams }>({
    method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    url: '/api/v1/edge/:projectId/:deviceId/*',
    // GET needs any role; state changes need operator, the edge's credentials and device
    // management admin (checked on the project below).
    schema: { params: BridgeParams },
    handler: async (request: FastifyRequest<{ Params: BridgeParams }>, reply: FastifyReply) => {
      const principal = principalOf(request);
      const { projectId, deviceId } = request.params;
      // From memory after the first call (see FleetService.bridgeTarget): no database read.
      const target = await bridge.fleet.bridgeTarget(principal, deviceId, projectId);
      const raw = request.raw.url ?? '';
      const prefix = `/api/v1/edge/${projectId}/${deviceId}`;
      const rest = raw.slice(raw.indexOf(prefix) + prefix.length) || '/';
      const path = rest.startsWith('/') ? rest : `/${rest}`;
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
    },
  });
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
