/**
 * Tag history: every value of the tags (or those a policy chooses) kept on the edge in an embedded
 * DuckDB file (or PostgreSQL), queried at `/history` (REST) and `/history/graphql`.
 */
export { historyModule, historySchema, HISTORY_GRAPHQL_PATH, type HistoryModuleApi } from './module.js';
export {
  HistoryService,
  MAX_QUERY_TAGS,
  MAX_RAW_LIMIT,
  type HistoryValue,
  type HistorySeries,
} from './service.js';
export { historyMigrations } from './migrations/index.js';
export { HistoryRepository } from './repository.js';
export {
  PolicyTable,
  keep,
  policyTagProblem,
  DEFAULT_POLICY,
  POLICY_MODES,
  type HistoryPolicy,
  type PolicyMode,
} from './policy.js';
export { chooseBucket, bucketOf, NICE_WIDTHS, MAX_BUCKETS } from './buckets.js';
// DuckStore (./duckdb/repository.js) is not re-exported: it loads DuckDB's client on the edge's
// thread, where the edge never opens it (the store runs in its worker, DuckWorkerStore).
export { DuckWorkerStore } from './duckdb/client.js';
export { PgStore } from './postgres/repository.js';
export type { HistoryStore, SampleBatch, Sample, Retention, StoreStats } from './store.js';
export { Recorder } from './recorder.js';
export { HistoryConfigSection, type HistorySection } from './config-section.js';
