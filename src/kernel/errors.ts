/**
 * One error type for the whole code base. It carries the HTTP status, a stable machine-readable
 * code and a message for people; the HTTP layer turns it into the one error reply shape:
 *
 *     { "code": "not_found", "message": "api client \"x\" not found" }
 *
 * (`details` is added when there is more to say, for example the failing fields of a body).
 */
export class AppError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: unknown;

  constructor(
    status: number,
    code: string,
    message: string,
    options?: { details?: unknown; cause?: unknown },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.status = status;
    this.code = code;
    this.details = options?.details;
  }

  toReply(): ErrorReply {
    const reply: ErrorReply = { code: this.code, message: this.message };
    if (this.details !== undefined) reply.details = this.details;
    return reply;
  }
}

export interface ErrorReply {
  code: string;
  message: string;
  details?: unknown;
}

export const badRequest = (message: string, details?: unknown) =>
  new AppError(400, 'bad_request', message, { details });
export const unauthorized = (message = 'authentication required') =>
  new AppError(401, 'unauthorized', message);
export const forbidden = (message: string) => new AppError(403, 'forbidden', message);
export const notFound = (message: string) => new AppError(404, 'not_found', message);
export const conflict = (message: string) => new AppError(409, 'conflict', message);
export const tooManyRequests = (message: string) => new AppError(429, 'too_many_requests', message);
