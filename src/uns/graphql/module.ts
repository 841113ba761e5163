/** The UNS's GraphQL management API at `/mqtt/gql`. */
import { readFileSync } from 'node:fs';
import { mountGraphql } from '../../kernel/graphql.js';
import { unsAddresses, type UnsModule } from '../modules.js';
import { resolvers, type UnsGraphqlContext } from './resolvers.js';
import { refuseOperatorMutations } from './operator-guard.js';

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
      resolvers,
      context: () => context,
    });
  },
};
