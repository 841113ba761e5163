/**
 * Instance settings on the manager's seam: their tables and the admin console routes. The user
 * certificate swaps onto the main and admin console HTTPS listeners (`setSecureContext`).
 */
import type { Server as TlsServer } from 'node:tls';
import { join } from 'node:path';
import { SecretBox } from '../../kernel/secret-box.js';
import type { ManagerModule } from '../modules.js';
import { settingsMigrations } from './migrations/index.js';
import { InstanceSettingsRepository } from './repository.js';
import { settingsRoutes } from './routes.js';
import { InstanceSettingsService, type HttpsSwap } from './service.js';

declare module '../modules.js' {
  interface ManagerModules {
    settings: InstanceSettingsService;
  }
}

export const settingsModule: ManagerModule<'settings'> = {
  name: 'settings',
  migrations: settingsMigrations,
  requires: ['admin'],
  start(ctx) {
    const admin = ctx.module('admin');
    const https: HttpsSwap = {
      store: ctx.config.http
        ? { refused: 'the manager serves plain HTTP (--http): its TLS is terminated elsewhere' }
        : ctx.config.tlsCert
          ? { refused: 'the certificate comes from --tls-cert and --tls-key: replace those files instead' }
          : { dir: join(ctx.dataDir, 'tls') },
      swap(cert, key) {
        let n = 0;
        for (const server of [ctx.app.server, admin.app.server] as unknown as TlsServer[]) {
          if (typeof server.setSecureContext !== 'function') continue;
          server.setSecureContext({ cert, key });
          n++;
        }
        ctx.logger.info({ listeners: n }, "the manager's HTTPS certificate was replaced (user SSL)");
        return n;
      },
    };
    return new InstanceSettingsService(
      new InstanceSettingsRepository(ctx.database),
      SecretBox.forDataDir(ctx.dataDir),
      https,
    );
  },
  mount: (ctx, settings) => ctx.module('admin').app.register(settingsRoutes, { settings }),
};
