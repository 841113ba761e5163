/**
 * What every OAuth 2.0 token endpoint of the services shares (RFC 6749): the form body, the client
 * credentials given in the body or as `Authorization: Basic` (2.3.1, form-urlencoded before
 * base64), and error replies in the shape OAuth clients parse (5.2), not the kernel's error shape.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';

export class OAuthError extends Error {
  readonly status: number;
  readonly error: string;

  constructor(status: number, error: string, description: string) {
    super(description);
    this.name = 'OAuthError';
    this.status = status;
    this.error = error;
  }
}

export interface ClientCredentials {
  clientId: string | undefined;
  clientSecret: string | undefined;
  /** Whether they came as a Basic header (a refusal then answers `www-authenticate: Basic`). */
  viaBasic: boolean;
}

/** The form parameters of a token request, with `grant_type` checked against the grants served. */
export function tokenRequest(request: FastifyRequest, grants: readonly string[]): Record<string, unknown> {
  const body = (request.body ?? {}) as Record<string, unknown>;
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw new OAuthError(400, 'invalid_request', 'the body must be form-encoded parameters');
  }
  const grantType = body.grant_type;
  if (typeof grantType !== 'string' || grantType === '') {
    throw new OAuthError(400, 'invalid_request', 'grant_type is required');
  }
  if (!grants.includes(grantType)) {
    throw new OAuthError(
      400,
      'unsupported_grant_type',
      `grant_type "${grantType}" is not supported; use ${grants.join(' or ')}`,
    );
  }
  return body;
}

/** The client credentials of a token request, from the body or a Basic header (not both). */
export function clientCredentials(request: FastifyRequest, body: Record<string, unknown>): ClientCredentials {
  let clientId = typeof body.client_id === 'string' ? body.client_id : undefined;
  let clientSecret = typeof body.client_secret === 'string' ? body.client_secret : undefined;
  const header = request.headers.authorization;
  const viaBasic = typeof header === 'string' && /^basic /i.test(header);
  if (viaBasic) {
    if (clientSecret !== undefined && clientSecret !== '') {
      throw new OAuthError(
        400,
        'invalid_request',
        'send the client credentials either in the body or as Basic, not both',
      );
    }
    const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw new OAuthError(400, 'invalid_request', 'malformed Basic credentials');
    const basicId = formDecode(decoded.slice(0, colon));
    if (clientId !== undefined && clientId !== basicId) {
      throw new OAuthError(
        400,
        'invalid_request',
        'client_id in the body differs from the Basic credentials',
      );
    }
    clientId = basicId;
    clientSecret = formDecode(decoded.slice(colon + 1));
  }
  return { clientId, clientSecret, viaBasic };
}

/** Sends an RFC 6749 5.2 error body; `no-store` as every token reply. */
export function sendOAuthError(reply: FastifyReply, err: OAuthError, viaBasic = false): FastifyReply {
  if (err.status === 401 && viaBasic) void reply.header('www-authenticate', 'Basic realm="millwright"');
  return reply.status(err.status).send({ error: err.error, error_description: err.message });
}

/** Marks a token reply as not cacheable (RFC 6749 5.1). */
export function noStore(reply: FastifyReply): void {
  void reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
}

/** RFC 6749 2.3.1: Basic credentials are form-urlencoded before base64. */
function formDecode(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return s;
  }
}
