/**
 * The audit trail on the manager's seam. `start` installs the recording hook on the main API and
 * on the admin console API before any module mounts a route (every module's `start` runs before
 * any `mount`), so every route of every module, this one's and later ones' included, is recorded
 * without code of its own (see hook.ts); it listens to the bridge's calls and to the edges' link
 * sign-ins (sign-ins.ts); `listening` starts the housekeeping job.
 */
import type { ManagerModule } from '../modules.js';
import { ActivityBuffer } from './activity.js';
import { bridgedCallListener, installAuditHook } from './hook.js';
import { linkSignInListener } from './sign-ins.js';
import { auditMigrations } from './migrations/index.js';
import { auditOptions } from './options.js';
import { AuditRepository } from './repository.js';
import { adminAuditRoutes, auditRoutes } from './routes.js';
import { AuditService } from './service.js';

declare module '../modules.js' {
  interface ManagerModules {
    audit: AuditService;
  }
}

export const auditModule: ManagerModule<'audit', typeof auditOptions> = {
  name: 'audit',
  options: auditOptions,
  migrations: auditMigrations,
  requires: ['admin', 'bridge', 'link'],
  async start(ctx) {
    const log = ctx.logger;
    const audit = new AuditService(new AuditRepository(ctx.database), log);
    await audit.loadSettings();
    const activity = new ActivityBuffer((rows) => audit.addActivity(rows), log);
    ctx.defer('audit request log', () => activity.flush());
    if (ctx.config.auditTrail) {
      const common = { audit, database: ctx.database, activity, logger: log };
      installAuditHook(ctx.app, { ...common, origin: 'API' });
      installAuditHook(ctx.module('admin').app, { ...common, origin: 'CONSOLE' });
      const off = ctx.module('bridge').onBridgedCall(bridgedCallListener(audit, log));
      ctx.defer('audit bridge listener', () => void off());
      // The request log sees every request: bridged reads go through the hooks while it is on.
      const offVeto = ctx.module('bridge').vetoFastPath(() => audit.settings.apiActivity.enabled);
      ctx.defer('audit bridge fast path veto', () => void offVeto());
      const offSignIn = ctx.module('link').onSignIn(linkSignInListener(audit, log));
      ctx.defer('audit sign-in listener', () => void offSignIn());
    }
    return audit;
  },
  async mount(ctx, audit) {
    await ctx.app.register(auditRoutes, { audit });
    await ctx.module('admin').app.register(adminAuditRoutes, { audit });
  },
  listening(ctx, audit) {
    const run = () =>
      void audit.housekeep().catch((err: unknown) => ctx.logger.warn({ err }, 'audit housekeeping failed'));
    const timer = setInterval(run, ctx.config.auditHousekeepingInterval * 1000).unref();
    ctx.defer('audit housekeeping', () => clearInterval(timer));
    run();
  },
};
