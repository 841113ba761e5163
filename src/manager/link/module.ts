/**
 * The edge link on the manager's seam: WebSocket at `/dm/link` on the main port. The route is
 * open at the token layer (`permission: 'public'`) because an edge authenticates with its own
 * credential: `X-Device-Id` and `X-Device-Secret`, issued at activation; anything else is a 401
 * before the upgrade.
 */
import { randomUUID, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import websocket from '@fastify/websocket';
import { LINK_MAX_MESSAGE, LINK_SOCKET_PROTOCOLS } from '../../kernel/link/protocol.js';
import type { ManagerModule } from '../modules.js';
import { linkOptions } from './options.js';
import { LinkHub } from './hub.js';
import { linkMigrations } from './migrations/index.js';
import { LinkPeers } from './peers.js';
import { linkRoutes, peerRoutes } from './routes.js';

declare module '../modules.js' {
  interface ManagerModules {
    link: LinkHub;
  }
}

const peersOf = new WeakMap<LinkHub, LinkPeers>();

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
      maxSocketsPerDevice: ctx.config.bridgeMaxSockets,
      maxSocketsPerUser: ctx.config.bridgeMaxSocketsPerUser,
      // Forwarding between processes: PostgreSQL only (SQLite has one process per database).
      peers: ctx.database.dialect === 'postgres' ? peers : undefined,
    });
    peersOf.set(hub, peers);
    return hub;
  },
  async mount(ctx, hub) {
    const fleet = ctx.module('fleet');
    await ctx.app.register(websocket, {
      options: {
        maxPayload: LINK_MAX_MESSAGE,
        perMessageDeflate: false,
        // The bridge's sockets speak GraphQL (the link itself offers no subprotocol).
        handleProtocols: (offered: Set<string>) =>
          [...offered].find((p) => LINK_SOCKET_PROTOCOLS.includes(p)) ?? false,
      },
    });
    await ctx.app.register(linkRoutes, { hub, fleet });
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
