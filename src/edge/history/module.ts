/** The history on the edge's seam: every tag's values kept (DuckDB, or PostgreSQL), `/history`. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { mountGraphql } from '../../kernel/graphql.js';
import type { EdgeModule } from '../modules.js';
import { HistoryConfigSection, retentionOf } from './config-section.js';
import { DuckWorkerStore } from './duckdb/client.js';
import { historyMigrations } from './migrations/index.js';
import { historyOptions } from './options.js';
import { PgStore } from './postgres/repository.js';
import { HistoryRepository, type HistoryTables } from './repository.js';
import { resolvers, type HistoryContext } from './resolvers.js';
import { historyRoutes } from './routes.js';
import { HistoryService } from './service.js';
import type { HistoryStore } from './store.js';

export const HISTORY_GRAPHQL_PATH = '/history/graphql';

export function historySchema(): string {
  return readFileSync(new URL('./schema.graphql', import.meta.url), 'utf8');
}

export interface HistoryModuleApi {
  /** null when the history is off (`--history=false`). */
  service: HistoryService | null;
  repo: HistoryRepository;
  section: HistoryConfigSection;
}

declare module '../modules.js' {
  interface EdgeModules {
    history: HistoryModuleApi;
  }
}

async function mountHistory(app: FastifyInstance, service: HistoryService): Promise<void> {
  await app.register(historyRoutes, { history: service });
  await app.register(async (scope) => {
    await mountGraphql<HistoryContext>(scope, {
      path: HISTORY_GRAPHQL_PATH,
      schema: historySchema(),
      resolvers,
      context: () => ({ history: service }),
    });
  });
}

export const historyModule: EdgeModule<'history', typeof historyOptions> = {
  name: 'history',
  options: historyOptions,
  migrations: historyMigrations,
  requires: ['datahub'],
  async start(ctx) {
    const c = ctx.config;
    const repo = new HistoryRepository(ctx.database.typed<HistoryTables>());
    const defaults = {
      maxAgeDays: c.historyMaxAgeDays,
      maxMb: c.historyMaxMb === 0 ? 0 : Math.max(8, c.historyMaxMb),
    };
    let service: HistoryService | null = null;
    if (c.history) {
      const store: HistoryStore = c.historyDatabaseUrl
        ? new PgStore(c.historyDatabaseUrl)
        : new DuckWorkerStore({ dir: join(ctx.dataDir, 'history'), memoryMb: c.historyMemoryMb });
      service = new HistoryService({
        hub: ctx.module('datahub').hub,
        store,
        logger: ctx.logger,
        policies: await repo.policies(),
        retention: retentionOf((await repo.retention()) ?? defaults),
        flushMs: c.historyFlushMs,
        maintainMs: 5_000,
        batchSize: 65_536,
        maxTags: c.historyMaxTags,
        maxPending: 2_000_000,
        lazy: !c.historyDatabaseUrl,
      });
      try {
        await service.start();
      } catch (err) {
        await store.close().catch(() => undefined);
        throw err;
      }
    }
    return { service, repo, section: new HistoryConfigSection(repo, service, defaults) };
  },
  mount: async (ctx, api) => {
    if (api.service) await mountHistory(ctx.app, api.service);
  },
  configSection: (api) => api.section,
  close: async (api) => {
    await api.service?.close();
  },
};
