/** The analytics module's public surface: `/analytics/v3`, the service, the runtime, the catalogue. */
export { analyticsMigrations } from './migrations/index.js';
export { AnalyticsService, type WorkspaceDocument } from './service.js';
export { AnalyticsRuntime, outputSubject, OUTPUT_PREFIX } from './runtime.js';
export { CATALOGUE, LIMITS } from './catalogue.js';
export { AnalyticsLog, ANALYTICS_COMPONENT } from './log.js';
export { analyticsModule, analyticsSchema, mountAnalytics, ANALYTICS_PATH } from './module.js';
