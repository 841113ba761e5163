/** The UNS's GraphQL management API at `/mqtt/gql`. */
import { readFileSync } from 'node:fs';
import { mountGraphql } from '../../kernel/graphql.js';
import { unsAddresses, type UnsModule } from '../modules.js';
import { resolvers, type UnsGraphqlContext } from './resolvers.js';
import { refuseOperatorMutations } from './operator-guard.js';
import { consoleResolvers } from './console-resolvers.js';

declare module '../modules.js' {
  interface UnsModules {
    graphql: void;
  }
}

export const graphqlModule: UnsModule<'graphql'> = {
  name: 'graphql',
  requires: ['identity', 'accounts', 'namespace', 'broker'],
  start: () => undefined,
  mount(ctx) {
    const context: UnsGraphqlContext = {
      accounts: ctx.module('accounts'),
      broker: ctx.module('broker'),
      identity: ctx.module('identity').service,
      namespaces: ctx.module('namespace'),
      addresses: unsAddresses(ctx),
    };
    ctx.app.addHook('preHandler', refuseOperatorMutations);
    return mountGraphql<UnsGraphqlContext>(ctx.app, {
      path: '/mqtt/gql',
      schema: readFileSync(new URL('./schema.graphql', import.meta.url), 'utf8'),
      resolvers: mergeResolvers(resolvers, consoleResolvers),
      context: () => context,
    });
  },
};

/** The management API's resolvers and the console's, type by type. */
function mergeResolvers(a: typeof resolvers, b: typeof resolvers): typeof resolvers {
  const out: Record<string, unknown> = { ...a };
  for (const [type, fields] of Object.entries(b))
    out[type] = { ...(out[type] as object | undefined), ...fields };
  return out as typeof resolvers;
}
