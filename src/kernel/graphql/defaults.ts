/**
 * The GraphQL limits a service sets once for an app. Apart from `mount.ts` so that the HTTP
 * server can take them without loading mercurius and graphql (the manager mounts no GraphQL).
 */
import type { FastifyInstance } from 'fastify';

/** GraphQL limits a service sets once for every endpoint of an app (its options). */
export interface GraphqlDefaults {
  maxQueryBytes?: number;
  maxAliases?: number;
  maxFields?: number;
  cacheBytes?: number;
}

const kGraphqlDefaults = Symbol.for('millwright.graphqlDefaults');

/**
 * Sets the defaults of every GraphQL endpoint mounted on `app` later (a service calls it with
 * its configuration); a mount option still wins.
 */
export function setGraphqlDefaults(app: FastifyInstance, defaults: GraphqlDefaults): void {
  (app as unknown as Record<symbol, GraphqlDefaults>)[kGraphqlDefaults] = defaults;
}

/** The defaults `setGraphqlDefaults` set on `app` (none: `{}`). */
export function graphqlDefaultsOf(app: FastifyInstance): GraphqlDefaults {
  return (app as unknown as Record<symbol, GraphqlDefaults | undefined>)[kGraphqlDefaults] ?? {};
}
