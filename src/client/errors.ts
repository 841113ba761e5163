/**
 * Named errors of the clients. Each carries what the service answered (status, code, body) and,
 * where another error is the reason, that error as `cause`.
 */

/** Base of every error a Millwright client throws. */
export class MillwrightClientError extends Error {
  override name = 'MillwrightClientError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The service could not be reached or the connection failed (refused, TLS, timeout, reset). */
export class ConnectionError extends MillwrightClientError {
  override name = 'ConnectionError';
  constructor(
    readonly url: string,
    cause: unknown,
  ) {
    super(`cannot reach ${url}: ${(cause as Error)?.message ?? String(cause)}`, { cause });
  }
}

/** A REST call answered with a status outside 2xx. `code` and `message` come from the error body. */
export class HttpError extends MillwrightClientError {
  override name = 'HttpError';
  /** The stable code of the error body (`bad_request`, `not_found`...), when there is one. */
  readonly code: string | undefined;
  constructor(
    readonly method: string,
    readonly url: string,
    readonly status: number,
    readonly body: unknown,
    readonly text: string,
  ) {
    const b = body as { code?: unknown; message?: unknown } | undefined;
    const code = typeof b?.code === 'string' ? b.code : undefined;
    const detail = typeof b?.message === 'string' ? b.message : text.slice(0, 300);
    super(`${method} ${url}: ${status}${code ? ` ${code}` : ''}${detail ? `: ${detail}` : ''}`);
    this.code = code;
  }
}

/**
 * The credentials were refused: by a token endpoint (RFC 6749 error body: `error`,
 * `error_description`), by the MQTT broker (CONNACK 4 or 5) or by the DataHub.
 */
export class AuthenticationError extends MillwrightClientError {
  override name = 'AuthenticationError';
  /** The OAuth error code (`invalid_client`, `invalid_grant`...), when the body has one. */
  readonly error: string | undefined;
  constructor(
    readonly url: string,
    readonly status: number,
    readonly body: unknown,
    /** `detail`: the refusal in words when there is no OAuth body (an MQTT CONNACK, a NATS error). */
    options?: { cause?: unknown; detail?: string },
  ) {
    const b = body as { error?: unknown; error_description?: unknown } | undefined;
    const error = typeof b?.error === 'string' ? b.error : undefined;
    const description = typeof b?.error_description === 'string' ? b.error_description : '';
    super(
      options?.detail
        ? `${url} refused the credentials: ${options.detail}`
        : `token request to ${url} refused: ${status}${error ? ` ${error}` : ''}${description ? `: ${description}` : ''}`,
      options?.cause === undefined ? undefined : { cause: options.cause },
    );
    this.error = error;
  }
}

/** One error of a GraphQL answer, as the service sent it. */
export interface GraphqlErrorEntry {
  message: string;
  path?: (string | number)[];
  extensions?: { code?: string; [key: string]: unknown };
}

/**
 * A GraphQL request failed: the answer had `errors` (validation errors with HTTP 400, resolver
 * errors with HTTP 200 and `extensions.code`), or was not a GraphQL answer at all (401, 403, 5xx).
 */
export class GraphqlError extends MillwrightClientError {
  override name = 'GraphqlError';
  /** `extensions.code` of the first error (`bad_request`, `FORBIDDEN`...), when there is one. */
  readonly code: string | undefined;
  constructor(
    readonly url: string,
    readonly status: number,
    readonly errors: GraphqlErrorEntry[],
    /** The partial `data` of the answer, when it had any. */
    readonly data: unknown,
    options?: { cause?: unknown },
  ) {
    const first = errors[0];
    super(
      `GraphQL request to ${url} failed (${status}): ${errors.map((e) => e.message).join('; ') || 'no data'}`,
      options,
    );
    this.code = first?.extensions?.code;
  }
}
