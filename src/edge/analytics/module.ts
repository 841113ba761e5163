/** Analytics on the edge's seam: stream processors on DataHub data at `/analytics/v3`. */
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { mountGraphql } from '../../kernel/graphql.js';
import type { LogReader } from '../../kernel/logging/log-store.js';
import { LIST_SDL } from '../../kernel/paging.js';
import type { EdgeModule } from '../modules.js';
import { analyticsOptions } from './options.js';
import { AnalyticsConfigSection } from './config-section.js';
import { AnalyticsLog } from './log.js';
import { analyticsMigrations } from './migrations/index.js';
import { ScriptTester, type ScriptTestBounds } from './playground.js';
import { resolvers, type AnalyticsContext } from './resolvers.js';
import { AnalyticsService } from './service.js';

export const ANALYTICS_PATH = '/analytics/v3';

/** The bounds of `TestProcessorScript` by default (the options' defaults). */
export const DEFAULT_TEST_BOUNDS: ScriptTestBounds = {
  timeoutMs: 10_000,
  outputBytes: 1024 * 1024,
  callOutputBytes: 8 * 1024 * 1024,
  heapMb: 256,
};

let sdl: string | undefined;
export const analyticsSchema = (): string =>
  (sdl ??= readFileSync(new URL('./schema.graphql', import.meta.url), 'utf8') + LIST_SDL);

/** Mounts `/analytics/v3` (with subscriptions over WebSocket on the same path). */
export async function mountAnalytics(
  app: FastifyInstance,
  analytics: AnalyticsService,
  logs: LogReader,
  tester: ScriptTester = new ScriptTester(DEFAULT_TEST_BOUNDS),
): Promise<void> {
  app.addHook('onClose', () => tester.close());
  await mountGraphql<AnalyticsContext>(app, {
    path: ANALYTICS_PATH,
    schema: analyticsSchema(),
    resolvers,
    context: () => ({ analytics, logs, tester }),
    subscriptions: true,
  });
}

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
      scriptOutputBytes: ctx.config.analyticsScriptOutput,
    }),
  mount: (ctx, analytics) =>
    mountAnalytics(
      ctx.app,
      analytics,
      ctx.module('logs'),
      new ScriptTester({
        timeoutMs: ctx.config.analyticsScriptTestTimeout,
        outputBytes: ctx.config.analyticsScriptOutput,
        callOutputBytes: ctx.config.analyticsScriptTestOutput,
        heapMb: ctx.config.analyticsScriptTestHeap,
      }),
    ),
  configSection: (analytics) => new AnalyticsConfigSection(analytics),
  close: (analytics) => analytics.close(),
};
