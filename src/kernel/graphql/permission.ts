/** Who may run what: a caller that is not an admin cannot run a mutation. */
import { getOperationAST, Kind, type DocumentNode } from 'graphql';

export const VIEWER_MUTATION_MESSAGE = 'viewer role cannot run mutations';

/**
 * Whether the operation that will run is a mutation. When it cannot be told (several operations
 * and no valid name, which execution will refuse anyway), any mutation in the document counts.
 */
export function isMutation(document: DocumentNode, operationName?: string): boolean {
  const operation = getOperationAST(document, operationName);
  if (operation) return operation.operation === 'mutation';
  return document.definitions.some((d) => d.kind === Kind.OPERATION_DEFINITION && d.operation === 'mutation');
}
