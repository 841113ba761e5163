/**
 * The edge link on the manager's seam: WebSocket at `/dm/link` on the main port. The route is
 * open at the token layer (`permission: 'public'`) because an edge authenticates with its own
 * credential: `X-Device-Id` and `X-Device-Secret`, issued at activation; anything else is a 401
 * before the upgrade.
 */
import { randomUUID, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Readable } from 'node:stream';
import websocket from '@fastify/websocket';
import type { FastifyInstance } from 'fastify';
import { unauthorized } from '../../kernel/errors.js';
import { LINK_MAX_MESSAGE, LINK_PATH, forwardableHeaders } from '../../kernel/link/protocol.js';
import type { ManagerModule } from '../modules.js';
import { linkOptions } from './options.js';
import { LinkHub } from './hub.js';
import { linkMigrations } from './migrations/index.js';
import { LinkPeers, PEER_HEADER } from './peers.js';

declare module '../modules.js' {
  interface ManagerModules {
    link: LinkHub;
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    linkDevice?: string;
  }
}

const header = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);

const peersOf = new WeakMap<LinkHub, LinkPeers>();

/** `/dm/peer/{deviceId}/<path>`: a call forwarded by another manager process for a link held here. */
async function peerRoutes(app: FastifyInstance, options: { hub: LinkHub; peers: LinkPeers }) {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
  app.route<{ Params: { deviceId: string } }>({
    method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    url: '/dm/peer/:deviceId/*',
    config: { permission: 'public' },
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
        headers: forwardableHeaders(request.headers, new Set([PEER_HEADER])),
        body: (request.body as Readable | undefined) ?? null,
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

export const linkModule: ManagerModule<'link', typeof linkOptions> = {
  name: 'link',
  options: linkOptions,
  migrations: linkMigrations,
  requires: ['fleet'],
  async start(ctx) {
    const fleet = ctx.module('fleet');
    const peers = new LinkPeers(ctx.database, ctx.logger, randomUUID());
    // Links other live manager processes hold stay online (PostgreSQL; SQLite has one process).
    if (ctx.database.dialect === 'sqlite') await peers.forgetAll();
    await fleet.resetOnline(ctx.database.dialect === 'sqlite' ? [] : await peers.heldElsewhere());
    const hub = new LinkHub({
      fleet,
      logger: ctx.logger,
      heartbeatMs: ctx.config.heartbeatInterval,
      bridgeTimeoutMs: ctx.config.bridgeTimeout,
      maxPendingPerDevice: ctx.config.bridgeMaxPending,
      maxLinks: ctx.config.maxLinks,
      // Forwarding between processes: PostgreSQL only (SQLite has one process per database).
      peers: ctx.database.dialect === 'postgres' ? peers : undefined,
    });
    peersOf.set(hub, peers);
    return hub;
  },
  async mount(ctx, hub) {
    const fleet = ctx.module('fleet');
    await ctx.app.register(websocket, {
      options: { maxPayload: LINK_MAX_MESSAGE, perMessageDeflate: false },
    });
    ctx.app.get(
      LINK_PATH,
      {
        websocket: true,
        config: { permission: 'public' },
        // Before the upgrade: the device's own credential, or 401.
        onRequest: async (request) => {
          const id = header(request.headers['x-device-id']);
          const secret = header(request.headers['x-device-secret']);
          if (!id || !secret) throw unauthorized('the edge link needs X-Device-Id and X-Device-Secret');
          const device = await fleet.verifyLink(id, secret);
          if (!device) throw unauthorized('unknown device or wrong link secret');
          request.linkDevice = device.id;
        },
      },
      (socket, request) => {
        void hub.accept(request.linkDevice!, socket, request.ip ?? null, request.raw.socket);
      },
    );
    await ctx.app.register(peerRoutes, { hub, peers: peersOf.get(hub)! });
  },
  async listening(ctx, hub) {
    const fingerprint = ctx.tls ? new X509Certificate(readFileSync(ctx.tls.certFile)).fingerprint256 : null;
    await peersOf.get(hub)!.register(ctx.config.peerUrl ?? ctx.url, fingerprint);
  },
  async close(hub) {
    await hub.close();
    peersOf.get(hub)?.close();
  },
};
