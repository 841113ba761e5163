/** Analytics on the edge's seam: stream processors on DataHub data at `/analytics/v3`. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
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
import { AISuite } from './ai-suite.js';
import { aiSuiteResolvers, type AISuiteContext } from './ai-suite-resolvers.js';
import { aiSuiteRoutes } from './ai-suite-routes.js';

export const ANALYTICS_PATH = '/analytics/v3';

/** The bounds of `TestProcessorScript` by default (the options' defaults). */
export const DEFAULT_TEST_BOUNDS: ScriptTestBounds = {
  timeoutMs: 10_000,
  outputBytes: 1024 * 1024,
  callOutputBytes: 8 * 1024 * 1024,
  heapMb: 256,
};

const sdlOf = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8');
let sdl: string | undefined;
export const analyticsSchema = (): string =>
  (sdl ??= sdlOf('./schema.graphql') + sdlOf('./ai-suite.graphql') + LIST_SDL);

/** The AI suite of each live analytics service (the module's start makes both). */
const suites = new WeakMap<AnalyticsService, { suite: AISuite; providerTimeoutMs: number }>();

/** Mounts `/analytics/v3` (with subscriptions over WebSocket on the same path). */
export async function mountAnalytics(
  app: FastifyInstance,
  analytics: AnalyticsService,
  logs: LogReader,
  tester: ScriptTester = new ScriptTester(DEFAULT_TEST_BOUNDS),
): Promise<void> {
  app.addHook('onClose', () => tester.close());
  const ai = suites.get(analytics);
  if (ai) await aiSuiteRoutes(app, ai.suite, ANALYTICS_PATH);
  await mountGraphql<AnalyticsContext & Partial<AISuiteContext>>(app, {
    path: ANALYTICS_PATH,
    schema: analyticsSchema(),
    resolvers: {
      ...resolvers,
      Query: { ...resolvers.Query, ...aiSuiteResolvers.Query },
      Mutation: { ...resolvers.Mutation, ...aiSuiteResolvers.Mutation },
    } as typeof resolvers,
    context: () => ({ analytics, logs, tester, ...ai, base: ANALYTICS_PATH }),
    subscriptions: true,
  });
}

async function start(ctx: Parameters<EdgeModule<'analytics', typeof analyticsOptions>['start']>[0]) {
  const c = ctx.config;
  const suite = await AISuite.open(join(ctx.dataDir, 'ai-suite'), {
    fileBytes: c.analyticsAiSuiteFileBytes,
    totalBytes: c.analyticsAiSuiteTotalBytes,
    sessions: c.analyticsAiSuiteSessions,
    idleMs: c.analyticsAiSuiteSessionIdle,
    chunkBytes: c.analyticsAiSuiteChunkBytes,
  });
  try {
    const analytics = await AnalyticsService.open({
      database: ctx.database,
      hub: ctx.module('datahub').hub,
      log: new AnalyticsLog(ctx.logger),
      persistIntervalMs: c.analyticsPersistInterval,
      scriptOutputBytes: c.analyticsScriptOutput,
      modelPath: (name) => suite.modelPath(name),
    });
    suites.set(analytics, { suite, providerTimeoutMs: c.analyticsProviderTimeout });
    return analytics;
  } catch (err) {
    suite.dispose();
    throw err;
  }
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
  start,
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
  close: async (analytics) => {
    suites.get(analytics)?.suite.dispose();
    await analytics.close();
  },
};
