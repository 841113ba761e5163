/**
 * The identity module on the manager's seam: the token hook on the main API and `whoami`, the
 * OpenID Connect realm `standalone` (`/auth/realms/standalone/...`) and the console's sign-in
 * routes (`/console/login`, `/console/callback`, `/console/session`, `/console/logout`). The
 * first administrator is made once every port is bound (a start that fails on a taken port
 * leaves no password nobody saw).
 */
import type { ManagerModule } from '../modules.js';
import { consoleSessionRoutes } from './console-session.js';
import { installManagerAuthHook } from './hook.js';
import { managerAuthMigrations } from './migrations/index.js';
import { managerAuthOptions } from './options.js';
import { Realm } from './realm.js';
import { realmRoutes } from './realm-routes.js';
import { ManagerAuthRepository } from './repository.js';
import { whoamiRoutes } from './routes.js';
import { FIRST_ADMIN, ManagerAuthService } from './service.js';

declare module '../modules.js' {
  interface ManagerModules {
    auth: ManagerAuthService;
  }
}

export const managerAuthModule: ManagerModule<'auth', typeof managerAuthOptions> = {
  name: 'auth',
  options: managerAuthOptions,
  migrations: managerAuthMigrations,
  async start(ctx) {
    const repo = new ManagerAuthRepository(ctx.database);
    const auth = new ManagerAuthService(repo, ctx.logger);
    auth.realm = await Realm.open(repo, auth, ctx.logger, ctx.config.sessionTtl);
    return auth;
  },
  async mount(ctx, auth) {
    installManagerAuthHook(ctx.app, auth, { adminConsole: false });
    const secure = !ctx.config.http;
    await ctx.app.register(realmRoutes, { realm: auth.realm!, secure });
    await ctx.app.register(consoleSessionRoutes, {
      realm: auth.realm!,
      secure,
      kind: 'main',
      mainPort: () => Number(new URL(ctx.url).port),
    });
    return ctx.app.register(whoamiRoutes);
  },
  async listening(ctx, auth) {
    auth.realm!.callbackPorts.add(Number(new URL(ctx.url).port));
    const admin = await auth.ensureAdmin(ctx.config.adminPassword);
    if (admin.created) auth.firstRun = { username: FIRST_ADMIN, password: admin.generatedPassword };
  },
};
