/**
 * One error type for the whole code base. It carries the HTTP status, a stable machine-readable
 * code and a message for people; the HTTP layer turns it into the one error reply shape:
 *
 *     { "code": "not_found", "message": "api client \"x\" not found" }
 *
 * (`details` is added when there is more to say, for example the failing fields of a body).
 *
 * Codes and their statuses are defined once, in `ERRORS` below; an `AppError` is built from an
 * entry (`new AppError(ERRORS.notFound, message)`, or the helpers at the end of this file), and
 * the compiler refuses anything else: an entry carries a brand that only this file can give.
 * `docs/api-conventions.md` lists every code (a test keeps the table and the catalogue equal).
 */

declare const catalogued: unique symbol;

/** One entry of the catalogue: an HTTP status, the code on the wire and what it means. */
export interface ErrorKind {
  readonly status: number;
  readonly code: string;
  /** What the code means, as `docs/api-conventions.md` says it. */
  readonly about: string;
  readonly [catalogued]: true;
}

const entry = (status: number, code: string, about: string): ErrorKind =>
  ({ status, code, about }) as ErrorKind;

/**
 * Every error code a Millwright service answers, with its HTTP status. Codes are snake_case, as
 * the contract's `confirm_required` is; the generic ones are the status's own name (`bad_request`,
 * `not_found`, `too_many_requests`...). The upper-case ones are GraphQL `extensions.code` values of
 * the GraphQL convention, and `E` is the contract's (part 7, the removed sites feature).
 */
export const ERRORS = {
  // 400
  badRequest: entry(400, 'bad_request', 'a parameter or a body field is wrong; the message names it'),
  unknownField: entry(
    400,
    'unknown_field',
    'the body has a field the route does not know (`failed to decode request body: json: unknown field "x"`)',
  ),
  invalidJson: entry(
    400,
    'invalid_json',
    'the body is not JSON, or is empty although its content-type is JSON',
  ),
  missingBody: entry(400, 'missing_body', 'the route reads a JSON body and none was sent'),
  requestAborted: entry(400, 'request_aborted', 'the request was cut off before its body ended'),
  uploadIncomplete: entry(
    400,
    'upload_incomplete',
    'an uploaded file did not arrive whole; nothing was stored',
  ),
  invalidTemplate: entry(
    400,
    'invalid_template',
    'a configuration template is not valid; the message says where',
  ),
  encryptionKeyRequired: entry(
    400,
    'encryption_key_required',
    'the template has encrypted secrets and no `encryptionKey` was given',
  ),
  wrongEncryptionKey: entry(
    400,
    'wrong_encryption_key',
    "`encryptionKey` does not decrypt the template's secrets",
  ),
  edgeVersionUnsupported: entry(
    400,
    'edge_version_unsupported',
    'the edge runs a version that cannot take this template',
  ),
  weakPassword: entry(400, 'weak_password', 'a new password is too short, or the same as the current one'),
  invalidPassword: entry(400, 'invalid_password', '`currentPassword` is not the current password'),
  httpsRequired: entry(400, 'https_required', 'plain HTTP was sent to an HTTPS port'),
  queryTooLarge: entry(400, 'QUERY_TOO_LARGE', 'a GraphQL document is larger than the limit, before parsing'),
  queryTooDeep: entry(400, 'QUERY_TOO_DEEP', 'a GraphQL query is deeper than the limit'),
  queryTooCostly: entry(
    400,
    'QUERY_TOO_COSTLY',
    'a GraphQL query has too many aliases, fields or a cost above the limit',
  ),
  // 401
  unauthorized: entry(401, 'unauthorized', 'no credential, or a bad one'),
  invalidCredentials: entry(401, 'invalid_credentials', 'a login with a wrong user name or password'),
  invalidActivationCode: entry(401, 'invalid_activation_code', "an edge's activation code is not valid"),
  invalidActivation: entry(
    401,
    'invalid_activation',
    'a UNS activation token that is invalid, used or expired',
  ),
  // 403
  forbidden: entry(403, 'forbidden', "the caller's role may not do this; the message names the role"),
  graphqlForbidden: entry(403, 'FORBIDDEN', 'a GraphQL mutation by a role that may only read'),
  bootstrapRequired: entry(403, 'bootstrap_required', "the edge's first-run setup is not complete"),
  csrfRequired: entry(
    403,
    'csrf_token_required',
    'a change sent from a browser with the session cookie lacks a valid X-CSRF-Token header',
  ),
  privilegeRequired: entry(
    403,
    'privilege_required',
    'the edge process lacks a system privilege the operation needs (e.g. CAP_NET_ADMIN); the message names it',
  ),
  // 404
  notFound: entry(404, 'not_found', 'no such route or object; the message names it'),
  // 409
  conflict: entry(
    409,
    'conflict',
    'the request conflicts with the current state (a name taken, a task not running...)',
  ),
  confirmRequired: entry(
    409,
    'confirm_required',
    'a merge would overwrite existing configuration: set `confirm_overwrite`',
  ),
  latestSnapshot: entry(409, 'latest_snapshot', 'the most recent configuration snapshot cannot be deleted'),
  missingParameter: entry(
    409,
    'missing_parameter',
    'a template upload without `friendlyName` (contract part 7)',
  ),
  assetHubNotConfigured: entry(
    409,
    'asset_hub_not_configured',
    'no asset hub is configured: a global admin sets one at /admin/v1/asset-hub/settings',
  ),
  activationCodeUsed: entry(409, 'activation_code_used', 'the activation code was already used'),
  certificateChanged: entry(
    409,
    'certificate_changed',
    "the manager's certificate is not the one confirmed (502 when found while activating)",
  ),
  opcuaServerNotRunning: entry(
    409,
    'opcua_server_not_running',
    'the OPC UA server does not run in this edge',
  ),
  // 410
  activationCodeExpired: entry(410, 'activation_code_expired', 'the activation code has expired'),
  sitesRemoved: entry(
    410,
    'E',
    'any `/api/v1/site/...` call: the sites feature was removed (contract part 7)',
  ),
  /**
   * The one code of a body over a limit, whichever limit: the service's (Fastify's
   * `FST_ERR_CTP_BODY_TOO_LARGE`), a route's, a template document's, a bridged body's, an
   * uploaded file's. `payload_too_large` because the contract and the wire notes name none, and
   * it is what clients already read: it is the name of the status in Node's `http.STATUS_CODES`
   * (which Fastify puts in its own error replies, `"error": "Payload Too Large"`, and Node clients
   * report as the status message), it follows the rule of the generic codes above, and it was the
   * code GraphQL clients of `UploadCsv` already saw. It replaced `too_large`, `body_too_large` and
   * `fst_err_ctp_body_too_large`.
   */
  payloadTooLarge: entry(
    413,
    'payload_too_large',
    'a body or uploaded file is larger than the limit; the message says which',
  ),
  // 429
  tooManyRequests: entry(
    429,
    'too_many_requests',
    'too many requests or attempts; `retry-after` says when to retry',
  ),
  // 5xx
  internal: entry(
    500,
    'internal',
    'an unexpected failure (`internal server error`; the cause is in the log)',
  ),
  edgeError: entry(502, 'edge_error', 'the edge answered a bridged call with an error, or failed to answer'),
  assetHubError: entry(
    502,
    'asset_hub_error',
    "the asset hub (another manager's catalogue) failed to answer, or answered an error",
  ),
  peerError: entry(502, 'peer_error', "forwarding to the manager that holds the edge's link failed"),
  managerUnreachable: entry(502, 'manager_unreachable', 'the edge cannot reach the manager'),
  activationFailed: entry(502, 'activation_failed', 'the manager refused an activation without saying why'),
  deviceOffline: entry(503, 'device_offline', "the device's edge is not connected to the manager"),
  bridgeBusy: entry(503, 'bridge_busy', 'too many bridged requests to one device are in flight; retry later'),
  toolUnavailable: entry(
    503,
    'tool_unavailable',
    'a system tool the operation runs (e.g. `ip` of iproute2) is not installed; the message names it',
  ),
  edgeTimeout: entry(504, 'edge_timeout', 'the edge did not answer a bridged call in time'),
  // Applications (container engine) and cloud storage of the edge (issue 28).
  engineError: entry(
    502,
    'engine_error',
    "the container engine refused or failed a request; the message is the engine's reason",
  ),
  engineUnavailable: entry(
    503,
    'engine_unavailable',
    'no container engine answers on the socket; the message names the socket path',
  ),
  storageError: entry(
    502,
    'storage_error',
    'the object storage of a cloud storage target refused or failed a request; the message says why',
  ),
} as const;

export type ErrorName = keyof typeof ERRORS;

/** The catalogue entry of a code, if there is one. */
export function errorKindOf(code: string): ErrorKind | undefined {
  return Object.values(ERRORS).find((k) => k.code === code);
}

export class AppError extends Error {
  readonly kind: ErrorKind;
  readonly status: number;
  readonly code: string;
  readonly details: unknown;

  /**
   * `status` replaces the entry's status only where the answer passes on another service's
   * (the status an edge answered) or says that a peer failed (a 502); the code stays the entry's.
   */
  constructor(
    kind: ErrorKind,
    message: string,
    options?: { details?: unknown; cause?: unknown; status?: number },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.kind = kind;
    this.status = options?.status ?? kind.status;
    this.code = kind.code;
    this.details = options?.details;
  }

  /**
   * An error answered by another service (an edge to the manager, a manager to an edge), passed
   * on with its status and code unchanged: a Millwright peer's codes are this catalogue's, an older
   * or foreign peer's are its own. `fallback` names the code when the peer's answer has none.
   * Fastify's own client errors that have no entry come through here as well.
   */
  static relayed(
    status: number,
    code: string | undefined,
    fallback: ErrorKind,
    message: string,
    options?: { details?: unknown; cause?: unknown },
  ): AppError {
    const known = code === undefined ? fallback : errorKindOf(code);
    const kind = known ?? ({ status, code, about: 'a code answered by another service' } as ErrorKind);
    return new AppError(kind, message, { ...options, status });
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
  new AppError(ERRORS.badRequest, message, { details });
export const unauthorized = (message = 'authentication required') =>
  new AppError(ERRORS.unauthorized, message);
export const forbidden = (message: string) => new AppError(ERRORS.forbidden, message);
export const notFound = (message: string) => new AppError(ERRORS.notFound, message);
export const conflict = (message: string) => new AppError(ERRORS.conflict, message);
export const tooManyRequests = (message: string) => new AppError(ERRORS.tooManyRequests, message);
