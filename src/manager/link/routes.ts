/**
 * The routes of the edge link: the WebSocket at `/dm/link` (an edge authenticates with
 * `X-Device-Id` and `X-Device-Secret` before the upgrade), and `/dm/peer/...` for calls another
 * manager process forwards to a link held here.
 */
import type { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { unauthorized } from '../../kernel/errors.js';
import {
  LINK_PATH,
  forwardableHeaders,
  parseBridgeActor,
  type BridgeActor,
} from '../../kernel/link/protocol.js';
import type { FleetService } from '../fleet/index.js';
import type { LinkHub } from './hub.js';
import { PEER_ACTOR_HEADER, PEER_HEADER, type LinkPeers } from './peers.js';

declare module 'fastify' {
  interface FastifyRequest {
    linkDevice?: string;
  }
}

const header = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
const PEER_DROP = new Set([PEER_HEADER, PEER_ACTOR_HEADER]);

/** The actor a peer forwarded (checked as the edge checks a frame's); none: the edge's default. */
function peerActor(value: string | undefined): BridgeActor | undefined {
  if (value === undefined) return undefined;
  try {
    return parseBridgeActor(JSON.parse(value));
  } catch {
    return parseBridgeActor(null);
  }
}

/** `/dm/peer/{deviceId}/<path>`: a call forwarded by another manager process for a link held here. */
export async function peerRoutes(app: FastifyInstance, options: { hub: LinkHub; peers: LinkPeers }) {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
  app.route<{ Params: { deviceId: string } }>({
    method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    url: '/dm/peer/:deviceId/*',
    // Recorded by the audit trail of the manager process that took the call, not again here.
    config: { permission: 'public', audit: false },
    onRequest: async (request) => {
      if (!(await options.peers.checkSecret(header(request.headers[PEER_HEADER]))))
        throw unauthorized("forwarded calls need the managers' shared secret");
    },
    handler: async (request, reply) => {
      const { deviceId } = request.params;
      const raw = request.raw.url ?? '';
      const prefix = `/dm/peer/${encodeURIComponent(deviceId)}`;
      const rest = raw.startsWith(prefix) ? raw.slice(prefix.length) : '/';
      const res = await options.hub.requestLocal(deviceId, {
        method: request.method,
        path: rest.startsWith('/') ? rest : `/${rest}`,
        headers: forwardableHeaders(request.headers, PEER_DROP),
        body: (request.body as Readable | undefined) ?? null,
        actor: peerActor(header(request.headers[PEER_ACTOR_HEADER])),
      });
      reply.status(res.status);
      for (const [k, v] of Object.entries(res.headers)) {
        if (!['connection', 'keep-alive', 'transfer-encoding'].includes(k.toLowerCase()))
          void reply.header(k, v);
      }
      return reply.send(res.body);
    },
  });
}

/** `GET /dm/link`: the WebSocket of an edge's link (`@fastify/websocket` registered before). */
export async function linkRoutes(app: FastifyInstance, options: { hub: LinkHub; fleet: FleetService }) {
  const { hub, fleet } = options;
  app.get(
    LINK_PATH,
    {
      websocket: true,
      config: { permission: 'public' },
      // Before the upgrade: the device's own credential, or 401.
      onRequest: async (request) => {
        const id = header(request.headers['x-device-id']);
        const secret = header(request.headers['x-device-secret']);
        if (!id || !secret) throw unauthorized('the edge link needs X-Device-Id and X-Device-Secret');
        const { device, known } = await fleet.checkLink(id, secret);
        if (known) {
          hub.signedIn({
            deviceId: id,
            projectId: device?.projectId ?? null,
            ok: device !== null,
            remote: request.ip ?? null,
            at: Date.now(),
          });
        }
        if (!device) throw unauthorized('unknown device or wrong link secret');
        request.linkDevice = device.id;
      },
    },
    (socket, request) => {
      void hub.accept(request.linkDevice!, socket, request.ip ?? null, request.raw.socket);
    },
  );
}
