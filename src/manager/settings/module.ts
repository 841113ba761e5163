/**
 * Instance settings on the manager's seam: their tables and the admin console routes. The user
 * certificate swaps onto the main and admin console HTTPS listeners (`setSecureContext`).
 */
import type { Server as TlsServer } from 'node:tls';
import { join } from 'node:path';
import { SecretBox } from '../../kernel/secret-box.js';
import { managerActor } from '../bridge/index.js';
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
  requires: ['admin', 'link', 'bridge'],
  start(ctx) {
    const admin = ctx.module('admin');
    const https: HttpsSwap = {
      store: ctx.config.http
        ? { refused: 'the manager serves plain HTTP (--http): its TLS is terminated elsewhere' }
        : ctx.config.tlsCert
          ? { refused: 'the certificate comes from --tls-cert and --tls-key: replace those files instead' }
          : { dir: join(ctx.dataDir, 'tls') },
      async announce(fingerprint) {
        const bridge = ctx.module('bridge');
        const ids = ctx.module('link').linkedDevices();
        const failed: { deviceId: string; message: string }[] = [];
        let next = 0;
        const worker = async () => {
          while (next < ids.length) {
            const deviceId = ids[next++]!;
            try {
              const r = await bridge.json(
                deviceId,
                'PUT',
                '/dm/cloud/certificate',
                { fingerprint },
                {},
                managerActor('user-ssl'),
              );
              if (r.status !== 200) failed.push({ deviceId, message: `the edge answered ${r.status}` });
            } catch (err) {
              failed.push({ deviceId, message: (err as Error).message });
            }
          }
        };
        await Promise.all(Array.from({ length: Math.min(16, ids.length) }, worker));
        if (failed.length > 0)
          ctx.logger.warn(
            { failed: failed.length },
            'edges that did not take the new certificate must confirm the manager again',
          );
        return { announced: ids.length - failed.length, failed };
      },
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
