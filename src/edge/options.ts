/**
 * The edge shell's own options (listening, TLS, data directory, database, log, HTTP and GraphQL
 * limits). Each module declares its settings in its own folder (`<module>/options.ts`); the
 * service's whole configuration, `EdgeConfig`, is composed from all of them in `service.ts`.
 */
import { Type, type Static } from '@sinclair/typebox';
import { GRAPHQL_OPTIONS, shellOptions } from '../kernel/service/options.js';

export const EDGE_SHELL_OPTIONS = Type.Object({
  ...shellOptions({
    name: 'edge',
    port: 8443,
    portDescription: 'HTTPS port of the REST and GraphQL APIs',
    databaseDescription: 'postgres://... to keep the edge database in PostgreSQL instead of SQLite',
  }).properties,
  ...GRAPHQL_OPTIONS.properties,
});

export type EdgeShellConfig = Static<typeof EDGE_SHELL_OPTIONS>;
