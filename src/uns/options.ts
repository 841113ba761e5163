/**
 * The UNS shell's own options (listening, TLS, data directory, database, log, HTTP and GraphQL
 * limits). Each module declares its settings in its own folder (`<module>/options.ts`); the
 * service's whole configuration, `UnsConfig`, is composed from all of them in `service.ts`.
 */
import { Type, type Static } from '@sinclair/typebox';
import { GRAPHQL_OPTIONS, shellOptions } from '../kernel/service/options.js';

export const UNS_SHELL_OPTIONS = Type.Object({
  ...shellOptions({
    name: 'uns',
    port: 9443,
    portDescription: 'HTTPS port of /mqtt/gql, the token endpoints and MQTT over WebSocket (/mqtt)',
    httpDescription: 'serve plain HTTP and WebSocket (only behind a TLS-terminating proxy)',
    tlsCertDescription: 'PEM certificate to serve (HTTPS and MQTT over TLS) instead of the self-signed one',
    databaseDescription:
      'postgres://... to keep users, accounts, rules and sessions in PostgreSQL instead of SQLite',
  }).properties,
  ...GRAPHQL_OPTIONS.properties,
});

export type UnsShellConfig = Static<typeof UNS_SHELL_OPTIONS>;
