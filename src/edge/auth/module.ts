/** The identity module on the edge's seam: the auth hook, the auth routes and the first-run admin. */
import type { EdgeModule } from '../modules.js';
import { authOptions } from './options.js';
import { installAuthHook } from './hook.js';
import { authMigrations } from './migrations/index.js';
import { authRoutes } from './routes.js';
import { ADMIN_USERNAME, AuthService } from './service.js';
import { AuthRepository } from './repository.js';
import { AuthConfigSection } from './config-section.js';
import { checkCsrfConnectionInit } from './csrf.js';
import { setGraphqlConnectionCheck } from '../../kernel/graphql/index.js';

export interface EdgeAuth {
  service: AuthService;
  /** The API clients' section of configuration templates. */
  configSection: AuthConfigSection;
  /** The first-run admin credential, when this start created the admin (set once listening). */
  firstRun: { username: string; password?: string } | null;
}

declare module '../modules.js' {
  interface EdgeModules {
    auth: EdgeAuth;
  }
}

export const authModule: EdgeModule<'auth', typeof authOptions> = {
  name: 'auth',
  options: authOptions,
  migrations: authMigrations,
  async start(ctx) {
    const repo = new AuthRepository(ctx.database);
    const service = await AuthService.open(repo, {
      tokenTtl: ctx.config.tokenTtl,
      logger: ctx.logger,
    });
    return { service, firstRun: null, configSection: new AuthConfigSection(repo, service) };
  },
  mount(ctx, auth) {
    installAuthHook(ctx.app, auth.service);
    // Subscriptions over a WebSocket opened with the session cookie carry the CSRF token.
    setGraphqlConnectionCheck(ctx.app, checkCsrfConnectionInit);
    return ctx.app.register(authRoutes, {
      auth: auth.service,
      rateLimit: ctx.config.authRateLimit,
      secure: !ctx.config.http,
    });
  },
  configSection: (auth) => auth.configSection,
  // Only once every port is bound: a start that fails on a taken port must not leave a
  // first-run password that nobody saw.
  async listening(ctx, auth) {
    const admin = await auth.service.ensureAdmin(ctx.config.adminPassword);
    if (admin.created) auth.firstRun = { username: ADMIN_USERNAME, password: admin.generatedPassword };
  },
};
