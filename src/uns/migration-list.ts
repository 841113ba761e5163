/**
 * The UNS's migrations without its modules, in the order of `UNS_MODULES` (src/uns/service.ts):
 * the CLI's offline commands (`uns account create`, `uns admin reset-password`...) open the store
 * with them, without loading the broker, the GraphQL API and the rest (about a second of CPU a
 * command). `test/cli/option-specs.test.ts` holds it equal to the modules' migrations.
 */
import type { Database, ModuleMigrations } from '../kernel/db/index.js';
import { openServiceDatabase } from '../kernel/service/database.js';
import { identityMigrations } from './identity/migrations/index.js';
import { namespaceMigrations } from './namespace/migrations/index.js';
import { accountMigrations } from './accounts/migrations/index.js';
import { brokerMigrations } from './broker/migrations/index.js';

export const UNS_MIGRATIONS: readonly ModuleMigrations[] = [
  identityMigrations,
  namespaceMigrations,
  accountMigrations,
  brokerMigrations,
];

/** The UNS database (SQLite in the data directory unless a URL is given), migrated: as `openUnsDatabase`. */
export function openUnsStore(config: {
  dataDir: string;
  databaseUrl?: string | undefined;
}): Promise<Database> {
  return openServiceDatabase(
    { name: 'uns', modules: UNS_MIGRATIONS.map((migrations) => ({ migrations })) },
    config,
  );
}
