/**
 * The manager's migrations without its modules, in the order of `MANAGER_MODULES`
 * (src/manager/service.ts): the CLI's offline commands (`manager token create`, `manager user
 * create`, `manager activation-code create`...) open the store with them, without loading every
 * module. `test/cli/option-specs.test.ts` holds it equal to the modules' migrations.
 */
import type { Database, ModuleMigrations } from '../kernel/db/index.js';
import { openServiceDatabase } from '../kernel/service/database.js';
import { managerAuthMigrations } from './auth/migrations/index.js';
import { fleetMigrations } from './fleet/migrations/index.js';
import { linkMigrations } from './link/migrations/index.js';
import { haMigrations } from './ha/migrations/index.js';
import { taskMigrations } from './tasks/migrations/index.js';
import { templateMigrations } from './templates/migrations/index.js';
import { auditMigrations } from './audit/migrations/index.js';
import { alertsMigrations } from './alerts/migrations/index.js';
import { marketplaceMigrations } from './marketplace/migrations/index.js';
import { assetHubMigrations } from './assethub/migrations/index.js';
import { certificateMigrations } from './certificates/migrations/index.js';
import { settingsMigrations } from './settings/migrations/index.js';
import { hierarchyMigrations } from './hierarchy/migrations/index.js';
import { dt2Migrations } from './twins/migrations/index.js';

export const MANAGER_MIGRATIONS: readonly ModuleMigrations[] = [
  managerAuthMigrations,
  fleetMigrations,
  linkMigrations,
  haMigrations,
  taskMigrations,
  templateMigrations,
  auditMigrations,
  alertsMigrations,
  marketplaceMigrations,
  assetHubMigrations,
  certificateMigrations,
  settingsMigrations,
  hierarchyMigrations,
  dt2Migrations,
];

/** The manager database (SQLite in the data directory unless a URL is given), migrated: as `openManagerDatabase`. */
export function openManagerStore(config: {
  dataDir: string;
  databaseUrl?: string | undefined;
}): Promise<Database> {
  return openServiceDatabase(
    { name: 'manager', modules: MANAGER_MIGRATIONS.map((migrations) => ({ migrations })) },
    config,
  );
}
