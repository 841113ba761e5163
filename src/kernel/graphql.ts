/** GraphQL mounting shared by the services: the parts are in `graphql/` (see `graphql/mount.ts`). */
export * from './graphql/index.js';
