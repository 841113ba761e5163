/** The identity provider on the UNS's seam: users, tokens, the auth hook and the first-run admin. */
import { installAuthHook } from '../../kernel/http/auth-hook.js';
import type { UnsModule } from '../modules.js';
import { identityOptions } from './options.js';
import { identityMigrations } from './migrations/index.js';
import { IdentityRepository } from './repository.js';
import { identityRoutes } from './routes.js';
import { checkCsrf, SESSION_COOKIE } from './session.js';
import { ADMIN_USERNAME, IdentityService } from './service.js';

export interface UnsIdentity {
  service: IdentityService;
  /** The first-run administrator, when this start created it (set once listening). */
  firstRun: { username: string; password?: string } | null;
  /**
   * `--auth-rate-limit`: activation attempts per minute per client address, and the distinct
   * user names whose sign-in (token, MQTT) may fail from one address before it is refused.
   */
  rateLimit: number;
}

declare module '../modules.js' {
  interface UnsModules {
    identity: UnsIdentity;
  }
}

export const identityModule: UnsModule<'identity', typeof identityOptions> = {
  name: 'identity',
  options: identityOptions,
  migrations: identityMigrations,
  async start(ctx) {
    const service = await IdentityService.open(new IdentityRepository(ctx.database.db), {
      clientId: ctx.config.clientId,
      tokenLifetime: ctx.config.tokenLifetime,
      logger: ctx.logger,
    });
    return { service, firstRun: null, rateLimit: ctx.config.authRateLimit };
  },
  mount(ctx, identity) {
    installAuthHook(ctx.app, {
      // A Bearer token (API callers), else the console's session cookie (the same token).
      authenticate: async (request) => {
        const cookie = request.cookies?.[SESSION_COOKIE];
        if (request.headers.authorization || !cookie) {
          return identity.service.authenticate(request.headers.authorization);
        }
        const caller = await identity.service.authenticate(`Bearer ${cookie}`);
        return caller && { ...caller, scheme: 'cookie' };
      },
      // A change (every GraphQL POST) made with the session cookie needs its CSRF token.
      check: (request) => checkCsrf(request),
    });
    return ctx.app.register(identityRoutes, {
      identity: identity.service,
      rateLimit: identity.rateLimit,
      secure: !ctx.config.http,
    });
  },
  // Only once every port is bound: a failed start leaves no first-run password unseen.
  async listening(ctx, identity) {
    const admin = await identity.service.ensureAdmin(ctx.config.adminPassword);
    if (admin.created) identity.firstRun = { username: ADMIN_USERNAME, password: admin.generatedPassword };
  },
};
