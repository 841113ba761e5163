/** The analytics module's public surface: `/analytics/v3`, the service, the runtime, the catalogue. */
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { mountGraphql } from '../../kernel/graphql.js';
import type { LogReader } from '../../kernel/logging/log-store.js';
import { LIST_SDL } from '../../kernel/paging.js';
import { resolvers, type AnalyticsContext } from './resolvers.js';
import type { AnalyticsService } from './service.js';

export { analyticsMigrations } from './migrations/index.js';
export { AnalyticsService, type WorkspaceDocument } from './service.js';
export { AnalyticsRuntime, outputSubject, OUTPUT_PREFIX } from './runtime.js';
export { CATALOGUE, LIMITS } from './catalogue.js';
export { AnalyticsLog, ANALYTICS_COMPONENT } from './log.js';

export const ANALYTICS_PATH = '/analytics/v3';

let sdl: string | undefined;
export const analyticsSchema = (): string =>
  (sdl ??= readFileSync(new URL('./schema.graphql', import.meta.url), 'utf8') + LIST_SDL);

/** Mounts `/analytics/v3` (with subscriptions over WebSocket on the same path). */
export async function mountAnalytics(
  app: FastifyInstance,
  analytics: AnalyticsService,
  logs: LogReader,
): Promise<void> {
  await mountGraphql<AnalyticsContext>(app, {
    path: ANALYTICS_PATH,
    schema: analyticsSchema(),
    resolvers,
    context: () => ({ analytics, logs }),
    subscriptions: true,
  });
}
