/** The identity module on the manager's seam: the token hook on the main API and `whoami`. */
import type { ManagerModule } from '../modules.js';
import { installManagerAuthHook } from './hook.js';
import { managerAuthMigrations } from './migrations/index.js';
import { ManagerAuthRepository } from './repository.js';
import { whoamiRoutes } from './routes.js';
import { ManagerAuthService } from './service.js';

declare module '../modules.js' {
  interface ManagerModules {
    auth: ManagerAuthService;
  }
}

export const managerAuthModule: ManagerModule<'auth'> = {
  name: 'auth',
  migrations: managerAuthMigrations,
  start: (ctx) => new ManagerAuthService(new ManagerAuthRepository(ctx.database), ctx.logger),
  mount(ctx, auth) {
    installManagerAuthHook(ctx.app, auth, { adminConsole: false });
    return ctx.app.register(whoamiRoutes);
  },
};
