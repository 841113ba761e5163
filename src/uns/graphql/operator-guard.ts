/**
 * The UNS's roles are `admin` and `operator`; the kernel's GraphQL layer knows them as `admin` and
 * `viewer` and refuses a viewer's mutation in its own words. This hook answers first, in the UNS's
 * words and the same shape (HTTP 403, `FORBIDDEN`), so that an operator is told about operators.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { getOperationAST, parse, type DocumentNode } from 'graphql';
import { ERRORS } from '../../kernel/errors.js';
import { MAX_DOCUMENT_NESTING, documentNesting } from '../../kernel/graphql.js';

export const GRAPHQL_PATH = '/mqtt/gql';
export const OPERATOR_MUTATION_MESSAGE = 'operator role cannot run mutations';

export async function refuseOperatorMutations(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  if (request.routeOptions.url !== GRAPHQL_PATH || !request.auth || request.auth.role === 'admin') return;
  const source = (request.method === 'GET' ? request.query : request.body) as
    { query?: unknown; operationName?: unknown } | undefined;
  if (typeof source?.query !== 'string') return;
  // Too deep to parse safely: the GraphQL layer refuses it before parsing (QUERY_TOO_DEEP).
  if (documentNesting(source.query, MAX_DOCUMENT_NESTING) > MAX_DOCUMENT_NESTING) return;
  let document: DocumentNode;
  try {
    document = parse(source.query);
  } catch {
    return; // the GraphQL layer answers a syntax error
  }
  const name = typeof source.operationName === 'string' ? source.operationName : undefined;
  const operation = getOperationAST(document, name);
  if (operation?.operation !== 'mutation') return;
  await reply.code(ERRORS.graphqlForbidden.status).send({
    errors: [{ message: OPERATOR_MUTATION_MESSAGE, extensions: { code: ERRORS.graphqlForbidden.code } }],
    data: null,
  });
}
