/**
 * The trust store on the edge's seam: CA certificates synchronised by the edge manager at
 * `/dm/v2/ca-certificates`, trusted by the outbound TLS clients of later modules
 * (`ctx.module('trust').ca()`) and by the OPC UA client driver's PKI (`pems()`, `onChange`).
 */
import type { EdgeModule } from '../modules.js';
import { trustMigrations } from './migrations/index.js';
import { TrustRepository } from './repository.js';
import { trustRoutes } from './routes.js';
import { TrustStore } from './service.js';

declare module '../modules.js' {
  interface EdgeModules {
    trust: TrustStore;
  }
}

export const trustModule: EdgeModule<'trust'> = {
  name: 'trust',
  migrations: trustMigrations,
  async start(ctx) {
    const trust = new TrustStore(new TrustRepository(ctx.database.db));
    await trust.load();
    return trust;
  },
  mount: (ctx, trust) => ctx.app.register(trustRoutes, { trust }),
};
