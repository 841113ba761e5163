/**
 * A service's database opened and migrated, apart from the shell (which loads the HTTP server):
 * the CLI's offline administration commands open a store with the migrations alone.
 */
import { join } from 'node:path';
import { Database, type ModuleMigrations } from '../db/index.js';
import type { ShellConfig } from './options.js';

/** The service's database, migrated for every module of the list (also for offline CLI commands). */
export async function openServiceDatabase(
  definition: { name: string; modules: readonly { migrations?: ModuleMigrations | undefined }[] },
  config: Pick<ShellConfig, 'dataDir' | 'databaseUrl'>,
): Promise<Database> {
  const database = Database.open({
    url: config.databaseUrl,
    sqlitePath: join(config.dataDir, `${definition.name}.db`),
  });
  try {
    await database.migrate(
      definition.modules.map((m) => m.migrations).filter((m): m is ModuleMigrations => m !== undefined),
    );
  } catch (err) {
    await database.close();
    throw err;
  }
  return database;
}
