/**
 * The edge's migrations without its modules, in the order of `EDGE_MODULES` (src/edge/service.ts):
 * the CLI's offline commands (`edge api-client create`, `edge admin reset-password`...) open the
 * store with them, without loading every module. `test/cli/option-specs.test.ts` holds it equal to
 * the modules' migrations.
 */
import type { Database, ModuleMigrations } from '../kernel/db/index.js';
import { openServiceDatabase } from '../kernel/service/database.js';
import { authMigrations } from './auth/migrations/index.js';
import { trustMigrations } from './trust/migrations/index.js';
import { datahubMigrations } from './datahub/migrations/index.js';
import { devicehubMigrations } from './devicehub/migrations/index.js';
import { dmMigrations } from './dm/migrations/index.js';
import { logForwardingMigrations } from './log-forwarding/migrations/index.js';
import { opcuaMigrations } from './opcua/migrations/index.js';
import { twinsMigrations } from './twins/migrations/index.js';
import { integrationsMigrations } from './integrations/migrations/index.js';
import { historyMigrations } from './history/migrations/index.js';
import { analyticsMigrations } from './analytics/migrations/index.js';
import { appsMigrations } from './apps/migrations/index.js';
import { cloudstorageMigrations } from './cloudstorage/migrations/index.js';
import { configMigrations } from './config/migrations/index.js';

export const EDGE_MIGRATIONS: readonly ModuleMigrations[] = [
  authMigrations,
  trustMigrations,
  datahubMigrations,
  devicehubMigrations,
  dmMigrations,
  logForwardingMigrations,
  opcuaMigrations,
  twinsMigrations,
  integrationsMigrations,
  historyMigrations,
  analyticsMigrations,
  appsMigrations,
  cloudstorageMigrations,
  configMigrations,
];

/** The edge database (SQLite in the data directory unless a URL is given), migrated: as `openEdgeDatabase`. */
export function openEdgeStore(config: {
  dataDir: string;
  databaseUrl?: string | undefined;
}): Promise<Database> {
  return openServiceDatabase(
    { name: 'edge', modules: EDGE_MIGRATIONS.map((migrations) => ({ migrations })) },
    config,
  );
}
