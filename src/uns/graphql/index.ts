/** The GraphQL API of the UNS at `/mqtt/gql`: resolvers over the modules (schema in schema.graphql). */
export { resolvers, type UnsGraphqlContext } from './resolvers.js';
export { refuseOperatorMutations, OPERATOR_MUTATION_MESSAGE } from './operator-guard.js';
export { graphqlModule } from './module.js';
