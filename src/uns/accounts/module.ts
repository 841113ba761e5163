/** MQTT accounts and rules on the UNS's seam, with activation (`/mqtt/activate`). */
import type { UnsModule } from '../modules.js';
import { unsAddresses } from '../modules.js';
import { accountMigrations } from './migrations/index.js';
import { AccountRepository } from './repository.js';
import { activationRoutes } from './routes.js';
import { AccountService } from './service.js';

declare module '../modules.js' {
  interface UnsModules {
    accounts: AccountService;
  }
}

export const accountsModule: UnsModule<'accounts'> = {
  name: 'accounts',
  migrations: accountMigrations,
  requires: ['identity', 'namespace'],
  async start(ctx) {
    const accounts = new AccountService(new AccountRepository(ctx.database.db), ctx.logger);
    await accounts.refresh();
    // Changes made by another process (the CLI, another node on the same database) within a second.
    const refresher = setInterval(() => {
      accounts.refresh().catch((err: unknown) => ctx.logger.warn({ err }, 'accounts refresh failed'));
    }, 1000);
    refresher.unref();
    ctx.defer('refresher', () => clearInterval(refresher));
    return accounts;
  },
  mount(ctx, accounts) {
    const namespaces = ctx.module('namespace');
    return ctx.app.register(activationRoutes, {
      accounts,
      defaultRules: (path: string) => namespaces.defaultRulesFor(path),
      addresses: unsAddresses(ctx),
      rateLimit: ctx.module('identity').rateLimit,
    });
  },
};
