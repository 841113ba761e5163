/** Analytics on the edge's seam: stream processors on DataHub data at `/analytics/v3`. */
import type { EdgeModule } from '../modules.js';
import { analyticsOptions } from './options.js';
import { AnalyticsConfigSection } from './config-section.js';
import { AnalyticsLog, AnalyticsService, analyticsMigrations, mountAnalytics } from './index.js';

declare module '../modules.js' {
  interface EdgeModules {
    analytics: AnalyticsService;
  }
}

export const analyticsModule: EdgeModule<'analytics', typeof analyticsOptions> = {
  name: 'analytics',
  options: analyticsOptions,
  migrations: analyticsMigrations,
  requires: ['datahub', 'logs'],
  start: (ctx) =>
    AnalyticsService.open({
      database: ctx.database,
      hub: ctx.module('datahub').hub,
      log: new AnalyticsLog(ctx.logger),
      persistIntervalMs: ctx.config.analyticsPersistInterval,
    }),
  mount: (ctx, analytics) => mountAnalytics(ctx.app, analytics, ctx.module('logs')),
  configSection: (analytics) => new AnalyticsConfigSection(analytics),
  close: (analytics) => analytics.close(),
};
