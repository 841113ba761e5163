import type { FastifyError, FastifyInstance } from 'fastify';
import { AppError, ERRORS } from '../errors.js';

interface AjvError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
}

/**
 * Turns a Fastify schema-validation failure into the one error shape. An unknown body field
 * answers with the contract's text: `failed to decode request body: json: unknown field "x"`.
 */
export function validationToAppError(err: FastifyError): AppError {
  const context = (err as FastifyError & { validationContext?: string }).validationContext ?? 'body';
  const errors = (err.validation ?? []) as unknown as AjvError[];
  const extra = errors.find((e) => e.keyword === 'additionalProperties');
  if (extra && context === 'body') {
    return new AppError(
      ERRORS.unknownField,
      `failed to decode request body: json: unknown field "${String(extra.params.additionalProperty)}"`,
    );
  }
  const first = errors[0];
  const where = first?.instancePath ? first.instancePath.replace(/^\//, '').replace(/\//g, '.') : '';
  let message: string;
  if (first?.keyword === 'required') {
    const field = String(first.params.missingProperty);
    message = `${context} ${where ? `${where}.` : ''}${field} is required`;
  } else if (first) {
    message = `${context}${where ? ` ${where}` : ''} ${first.message ?? 'is invalid'}`;
    if (first.keyword === 'enum' && Array.isArray(first.params.allowedValues)) {
      message += `: ${(first.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    }
  } else {
    message = err.message;
  }
  return new AppError(ERRORS.badRequest, message, { details: errors.length > 1 ? errors : undefined });
}

/** Installs the error and not-found handlers that give every failure the one reply shape. */
export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    let appErr: AppError;
    if (err instanceof AppError) appErr = err;
    else if (err.validation) {
      appErr = validationToAppError(err);
      // A form (or any body that is not JSON) posted where JSON is expected: say so first.
      const type = String(request.headers['content-type'] ?? '')
        .split(';')[0]!
        .trim()
        .toLowerCase();
      const context = (err as FastifyError & { validationContext?: string }).validationContext ?? 'body';
      if (context === 'body' && type !== '' && type !== 'application/json' && !type.endsWith('+json')) {
        appErr = new AppError(
          appErr.kind,
          `this route expects a JSON body (content-type: application/json), got ${type}` +
            `${type === 'application/x-www-form-urlencoded' ? " (curl -d sends a form unless -H 'content-type: application/json')" : ''}` +
            `: ${appErr.message}`,
        );
      }
    } else if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      // Fastify's own client errors: malformed JSON, unsupported media type, body too large...
      // A body over the limit has the catalogue's one code; the others keep Fastify's code.
      appErr =
        err.code === 'FST_ERR_CTP_BODY_TOO_LARGE'
          ? new AppError(ERRORS.payloadTooLarge, err.message)
          : AppError.relayed(err.statusCode, err.code?.toLowerCase(), ERRORS.badRequest, err.message);
    } else {
      request.log.error({ err }, 'unhandled error');
      appErr = new AppError(ERRORS.internal, 'internal server error');
    }
    if (appErr.status === 429 && !reply.hasHeader('retry-after')) reply.header('retry-after', '60');
    void reply.status(appErr.status).send(appErr.toReply());
  });
  app.setNotFoundHandler((request, reply) => {
    void reply
      .status(ERRORS.notFound.status)
      .send(
        new AppError(ERRORS.notFound, `no route ${request.method} ${request.url.split('?')[0]}`).toReply(),
      );
  });
}
