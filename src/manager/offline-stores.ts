/**
 * What the CLI's offline commands (`manager token|user|company|project|activation-code ...`)
 * work on: the manager's store, migrated from the migration list, and the auth, fleet and audit
 * services on their repositories, without the modules' wiring (module.ts, routes, Fastify):
 * 0.86-0.96 s of CPU to load through the modules' index.ts, 0.56-0.63 s this way (2026-11-28,
 * loaded machine). test/module-shape.test.ts allows this one file to read a module's service.ts
 * and repository.ts.
 */
import type { Logger } from 'pino';
import type { Database } from '../kernel/db/index.js';
import { SecretBox } from '../kernel/secret-box.js';
import { openManagerStore } from './migration-list.js';
import { ManagerAuthService } from './auth/service.js';
import { ManagerAuthRepository } from './auth/repository.js';
import { FleetService } from './fleet/service.js';
import { FleetRepository } from './fleet/repository.js';
import { AuditService } from './audit/service.js';
import { AuditRepository } from './audit/repository.js';

export interface ManagerOfflineStores {
  database: Database;
  auth: ManagerAuthService;
  fleet: FleetService;
  audit: AuditService;
}

/** The stores in `dataDir` (or at `databaseUrl`); the caller closes `database`. */
export async function openManagerOfflineStores(
  config: { dataDir: string; databaseUrl?: string | undefined },
  logger: Logger,
): Promise<ManagerOfflineStores> {
  const database = await openManagerStore(config);
  return {
    database,
    auth: new ManagerAuthService(new ManagerAuthRepository(database), logger),
    fleet: new FleetService(new FleetRepository(database), SecretBox.forDataDir(config.dataDir), logger, {
      activationTtl: 24 * 3600,
    }),
    audit: new AuditService(new AuditRepository(database), logger),
  };
}
