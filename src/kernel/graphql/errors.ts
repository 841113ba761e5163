/**
 * How errors of a GraphQL endpoint reach the caller: an `AppError` with its message and code,
 * GraphQL's own errors as they are, client errors before execution with their HTTP status, and
 * anything else logged and masked as `internal error`.
 */
import type { FastifyRequest } from 'fastify';
import mercurius, { type MercuriusContext } from 'mercurius';
import { GraphQLError, type ExecutionResult, type GraphQLFormattedError, type GraphQLSchema } from 'graphql';
import { AppError, ERRORS } from '../errors.js';

/**
 * Mercurius's error formatter for every error of this endpoint: execution results, errors thrown
 * before execution (validation, the viewer check, the authentication hook, malformed bodies) and
 * subscription events.
 */
export function formatErrors(
  execution: ExecutionResult & Required<Pick<ExecutionResult, 'errors'>>,
  context: MercuriusContext,
): { statusCode: number; response: { errors: GraphQLFormattedError[]; data: ExecutionResult['data'] } } {
  const log = logOf(context);
  let statusCode = 200;
  const errors: GraphQLFormattedError[] = [];
  for (const error of execution.errors) {
    const original = error.originalError as (Error & { statusCode?: unknown; errors?: unknown }) | undefined;
    const executing = error.path !== undefined;
    if (original && Array.isArray(original.errors)) {
      // Mercurius's wrapper of validation errors (and of "GET cannot mutate").
      statusCode = Math.max(statusCode, httpStatusOf(original) ?? 400);
      for (const inner of original.errors as Error[]) errors.push(formatted(toGraphqlError(inner)));
      continue;
    }
    const exposed = exposedError(error, executing);
    if (exposed) {
      errors.push({ ...formatted(error), message: exposed.message, ...extensionsOf(error, exposed.code) });
      if (!executing) statusCode = Math.max(statusCode, exposed.status);
    } else {
      log.error({ err: original ?? error }, 'graphql: unexpected error');
      errors.push({
        ...formatted(error),
        message: 'internal error',
        extensions: { code: ERRORS.internal.code },
      });
      if (!executing) statusCode = Math.max(statusCode, 500);
    }
  }
  return { statusCode, response: { errors, data: execution.data ?? null } };
}

/** What of an error may be shown to the caller, or undefined to mask it. */
function exposedError(
  error: GraphQLError,
  executing: boolean,
): { message: string; code?: string; status: number } | undefined {
  const original = error.originalError as (Error & { statusCode?: unknown; code?: unknown }) | undefined;
  if (original instanceof AppError)
    return { message: original.message, code: original.code, status: original.status };
  // GraphQL's own errors (syntax, validation, coercion) and deliberate GraphQL errors.
  if (!original || original instanceof GraphQLError) return { message: error.message, status: 400 };
  if (original instanceof mercurius.ErrorWithProps) {
    return { message: original.message, status: httpStatusOf(original) ?? 200 };
  }
  // Before execution: Fastify's and mercurius's client errors (malformed body, media type...).
  const status = httpStatusOf(original);
  if (!executing && status !== undefined && status < 500) {
    return {
      message: original.message,
      code: typeof original.code === 'string' ? original.code : undefined,
      status,
    };
  }
  return undefined;
}

function httpStatusOf(err: { statusCode?: unknown }): number | undefined {
  const status = err.statusCode;
  return typeof status === 'number' && status >= 400 && status <= 599 ? status : undefined;
}

function extensionsOf(
  error: GraphQLError,
  code: string | undefined,
): Pick<GraphQLFormattedError, 'extensions'> {
  const extensions = { ...error.extensions, ...(code === undefined ? {} : { code }) };
  return Object.keys(extensions).length > 0 ? { extensions } : {};
}

function formatted(error: GraphQLError): GraphQLFormattedError {
  return error.toJSON();
}

function toGraphqlError(err: Error): GraphQLError {
  if (err instanceof GraphQLError) return err;
  const extensions = (err as { extensions?: Record<string, unknown> }).extensions;
  return new GraphQLError(err.message, { originalError: err, ...(extensions ? { extensions } : {}) });
}

function logOf(context: MercuriusContext | undefined): Pick<FastifyRequest['log'], 'error'> {
  const ctx = context as (Partial<MercuriusContext> & { request?: FastifyRequest }) | undefined;
  return ctx?.reply?.request?.log ?? ctx?.request?.log ?? ctx?.app?.log ?? console;
}

/**
 * A `subscribe` resolver's error reaches the WebSocket client without the error formatter: map it
 * here the same way (AppError shown with its code, anything else logged and masked).
 */
export function guardSubscribeResolvers<T extends object>(schema: GraphQLSchema, resolvers: T): T {
  const typeName = schema.getSubscriptionType()?.name;
  const fields = typeName ? (resolvers as Record<string, unknown>)[typeName] : undefined;
  if (!typeName || !fields || typeof fields !== 'object') return resolvers;
  const guarded: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(fields)) {
    const subscribe = (field as { subscribe?: unknown } | undefined)?.subscribe;
    if (typeof subscribe !== 'function') {
      guarded[name] = field;
      continue;
    }
    guarded[name] = {
      ...(field as object),
      subscribe: async (root: unknown, args: unknown, context: Record<string, unknown>, info: unknown) => {
        try {
          return await subscribe(root, args, context, info);
        } catch (err) {
          if (err instanceof GraphQLError) throw err;
          if (err instanceof AppError)
            throw new GraphQLError(err.message, { extensions: { code: err.code } });
          logOf(context as unknown as MercuriusContext).error({ err }, 'graphql: unexpected error');
          throw new GraphQLError('internal error', { extensions: { code: ERRORS.internal.code } });
        }
      },
    };
  }
  return { ...resolvers, [typeName]: guarded };
}
