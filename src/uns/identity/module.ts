/** The identity provider on the UNS's seam: users, tokens, the auth hook and the first-run admin. */
import { installAuthHook } from '../../kernel/http/auth-hook.js';
import type { UnsModule } from '../modules.js';
import { identityMigrations } from './migrations/index.js';
import { IdentityRepository } from './repository.js';
import { identityRoutes } from './routes.js';
import { ADMIN_USERNAME, IdentityService } from './service.js';

export interface UnsIdentity {
  service: IdentityService;
  /** The first-run administrator, when this start created it (set once listening). */
  firstRun: { username: string; password?: string } | null;
}

declare module '../modules.js' {
  interface UnsModules {
    identity: UnsIdentity;
  }
}

export const identityModule: UnsModule<'identity'> = {
  name: 'identity',
  migrations: identityMigrations,
  async start(ctx) {
    const service = await IdentityService.open(new IdentityRepository(ctx.database.db), {
      clientId: ctx.config.clientId,
      tokenLifetime: ctx.config.tokenLifetime,
      logger: ctx.logger,
    });
    return { service, firstRun: null };
  },
  mount(ctx, identity) {
    installAuthHook(ctx.app, {
      authenticate: (request) => identity.service.authenticate(request.headers.authorization),
    });
    return ctx.app.register(identityRoutes, {
      identity: identity.service,
      rateLimit: ctx.config.authRateLimit,
    });
  },
  // Only once every port is bound: a failed start leaves no first-run password unseen.
  async listening(ctx, identity) {
    const admin = await identity.service.ensureAdmin(ctx.config.adminPassword);
    if (admin.created) identity.firstRun = { username: ADMIN_USERNAME, password: admin.generatedPassword };
  },
};
