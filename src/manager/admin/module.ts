/**
 * The admin console API (`/admin/v1/`) on a listener of its own (`--admin-port`, 8446 by
 * default): a second HTTPS app made by the kernel, with the same certificate, guarded by the
 * token hook in admin-console mode (a global admin only). Later modules mount their admin routes
 * on `ctx.module('admin').app` in their `mount`; the app is readied and bound in `listening`.
 */
import type { FastifyInstance } from 'fastify';
import { closeGracefully, createHttpApp } from '../../kernel/http/server.js';
import { healthRoutes } from '../../kernel/http/health.js';
import { adminAuthRoutes, consoleSessionRoutes, installManagerAuthHook } from '../auth/index.js';
import type { ManagerModule } from '../modules.js';
import { adminOptions } from './options.js';

export interface AdminConsole {
  app: FastifyInstance;
  /** Base address of the admin console API, once bound. */
  url: string;
}

declare module '../modules.js' {
  interface ManagerModules {
    admin: AdminConsole;
  }
}

export const MANAGER_API_VERSION = '3.0.0';

export const adminModule: ManagerModule<'admin', typeof adminOptions> = {
  name: 'admin',
  options: adminOptions,
  requires: ['auth'],
  async start(ctx) {
    const { app } = await createHttpApp({
      // The same timeouts and connection limit as the main API (`--http-*`).
      limits: ctx.config,
      logger: ctx.logger.child({ component: 'manager.admin.http' }),
      plainHttp: ctx.config.http,
      dataDir: ctx.config.dataDir,
      tlsCertFile: ctx.config.tlsCert,
      tlsKeyFile: ctx.config.tlsKey,
    });
    ctx.defer('admin http', () =>
      closeGracefully(app, ctx.config.shutdownTimeout, ctx.logger).then(() => undefined),
    );
    await app.register(healthRoutes, { service: 'manager-admin', apiVersion: MANAGER_API_VERSION });
    installManagerAuthHook(app, ctx.module('auth'), { adminConsole: true });
    return { app, url: '' };
  },
  async mount(ctx, admin) {
    const auth = ctx.module('auth');
    // The console's sign-in on this port too (the realm stays on the main port).
    await admin.app.register(consoleSessionRoutes, {
      realm: auth.realm!,
      secure: !ctx.config.http,
      kind: 'admin',
      mainPort: () => Number(new URL(ctx.url).port),
    });
    return admin.app.register(adminAuthRoutes, { auth });
  },
  async listening(ctx, admin) {
    const { host, adminPort } = ctx.config;
    const secure = !ctx.config.http;
    admin.url = await ctx.ports.bind(
      'admin-port',
      adminPort,
      async (port) => {
        await admin.app.listen({ host, port });
        const addr = admin.app.server.address();
        const bound = typeof addr === 'object' && addr ? addr.port : port;
        const name = host === '0.0.0.0' || host === '::' ? 'localhost' : host;
        return `${secure ? 'https' : 'http'}://${name.includes(':') ? `[${name}]` : name}:${bound}`;
      },
      (url) => Number(new URL(url).port),
    );
    ctx.module('auth').realm!.callbackPorts.add(Number(new URL(admin.url).port));
    ctx.logger.info({ url: admin.url }, 'admin console API listening');
  },
};
