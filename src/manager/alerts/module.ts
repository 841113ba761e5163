/**
 * Platform rules, alerts, incidents and notifications on the manager's seam: the tables, the
 * routes on both APIs, the rule evaluator and the notification outbox (both started once the
 * manager listens, stopped before the database closes).
 */
import { SecretBox } from '../../kernel/secret-box.js';
import type { ManagerModule } from '../modules.js';
import { AlertEvaluator } from './evaluator.js';
import { alertsMigrations } from './migrations/index.js';
import { alertsOptions } from './options.js';
import { NotificationOutbox } from './outbox.js';
import { AlertRepository } from './repository.js';
import { adminAlertRoutes, alertRoutes } from './routes.js';
import { AlertService } from './service.js';

/** The module's API: the domain service, the evaluator and the outbox. */
export interface Alerts {
  service: AlertService;
  evaluator: AlertEvaluator;
  outbox: NotificationOutbox;
}

declare module '../modules.js' {
  interface ManagerModules {
    alerts: Alerts;
  }
}

export const alertsModule: ManagerModule<'alerts', typeof alertsOptions> = {
  name: 'alerts',
  options: alertsOptions,
  migrations: alertsMigrations,
  requires: ['admin', 'fleet', 'tasks'],
  start(ctx) {
    const repo = new AlertRepository(ctx.database);
    const box = SecretBox.forDataDir(ctx.dataDir);
    const service = new AlertService(repo, box, ctx.module('fleet'), ctx.logger);
    const outbox = new NotificationOutbox(repo, box, {
      logger: ctx.logger,
      leaseMs: ctx.config.alertNotificationLease,
      maxAttempts: ctx.config.alertNotificationAttempts,
      backoffBaseMs: 1000,
      backoffMaxMs: ctx.config.alertNotificationBackoffMax,
      pollMs: 500,
      batch: 32,
      settings: () => service.instanceSettings(),
    });
    service.onEnqueued = () => outbox.kick();
    const evaluator = new AlertEvaluator(service, ctx.module('fleet'), ctx.module('tasks'), {
      intervalMs: ctx.config.alertEvaluationInterval,
      logger: ctx.logger,
    });
    return { service, evaluator, outbox };
  },
  async mount(ctx, alerts) {
    await ctx.app.register(alertRoutes, { alerts: alerts.service });
    await ctx.module('admin').app.register(adminAlertRoutes, { alerts: alerts.service });
  },
  listening(_ctx, alerts) {
    alerts.outbox.start();
    alerts.evaluator.start();
  },
  async close(alerts) {
    await alerts.evaluator.stop();
    await alerts.outbox.stop();
  },
};
