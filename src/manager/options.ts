/**
 * The manager shell's own options (listening, TLS, data directory, database, log, HTTP limits).
 * Each module declares its settings in its own folder (`<module>/options.ts`); the service's whole
 * configuration, `ManagerConfig`, is composed from all of them in `service.ts`. The manager mounts
 * no GraphQL, so it has no `--graphql-*` options.
 */
import type { Static } from '@sinclair/typebox';
import { shellOptions } from '../kernel/service/options.js';

export const MANAGER_SHELL_OPTIONS = shellOptions({
  name: 'manager',
  port: 8444,
  portDescription: 'HTTPS port of the main API (/api/v1, /mpcs) and of the edge link (443 in the product)',
  httpDescription:
    'serve plain HTTP (only behind a TLS-terminating proxy; edges then cannot pin a certificate)',
  databaseDescription: 'postgres://... to keep the fleet in PostgreSQL instead of SQLite',
});

export type ManagerShellConfig = Static<typeof MANAGER_SHELL_OPTIONS>;
