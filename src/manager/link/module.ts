/**
 * The edge link on the manager's seam: WebSocket at `/dm/link` on the main port. The route is
 * open at the token layer (`permission: 'public'`) because an edge authenticates with its own
 * credential: `X-Device-Id` and `X-Device-Secret`, issued at activation; anything else is a 401
 * before the upgrade.
 */
import websocket from '@fastify/websocket';
import { unauthorized } from '../../kernel/errors.js';
import { LINK_MAX_MESSAGE, LINK_PATH } from '../../kernel/link/protocol.js';
import type { ManagerModule } from '../modules.js';
import { LinkHub } from './hub.js';

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

export const linkModule: ManagerModule<'link'> = {
  name: 'link',
  requires: ['fleet'],
  async start(ctx) {
    const fleet = ctx.module('fleet');
    await fleet.resetOnline();
    return new LinkHub({
      fleet,
      logger: ctx.logger,
      heartbeatMs: ctx.config.heartbeatInterval,
      bridgeTimeoutMs: ctx.config.bridgeTimeout,
      maxPendingPerDevice: ctx.config.bridgeMaxPending,
      maxLinks: ctx.config.maxLinks,
    });
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
  },
  close: (hub) => hub.close(),
};
