/**
 * The token endpoints of the UNS's identity provider: the OAuth 2.0 password grant, form-encoded,
 * at the realm's OpenID Connect path (the contract) and at `/auth/v3/oauth/token` (also seen in
 * the documentation). The client (`ide-ui` by default, empty secret) comes in the body or as
 * Basic; errors are RFC 6749 5.2 bodies.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { RateLimiter } from '../../kernel/http/rate-limit.js';
import {
  OAuthError,
  clientCredentials,
  noStore,
  sendOAuthError,
  tokenRequest,
} from '../../kernel/http/oauth.js';
import { REALM, type IdentityService } from './service.js';

export const TOKEN_PATHS = [
  `/auth/realms/${REALM}/protocol/openid-connect/token`,
  '/auth/v3/oauth/token',
] as const;

export interface IdentityRoutesOptions {
  identity: IdentityService;
  /** Attempts per minute per client address. */
  rateLimit: number;
}

export async function identityRoutes(app: FastifyInstance, options: IdentityRoutesOptions): Promise<void> {
  const { identity } = options;
  const limited = new RateLimiter({ max: options.rateLimit, windowMs: 60_000 }).hook();

  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    noStore(reply);
    let viaBasic = false;
    try {
      const body = tokenRequest(request, ['password']);
      const creds = clientCredentials(request, body);
      viaBasic = creds.viaBasic;
      if (!creds.clientId)
        throw new OAuthError(400, 'invalid_request', 'client_id is required (body or Basic header)');
      if (creds.clientId !== identity.clientId || (creds.clientSecret ?? '') !== '') {
        request.log.warn({ client_id: creds.clientId }, 'token refused: unknown client');
        throw new OAuthError(
          401,
          'invalid_client',
          `unknown client "${creds.clientId}" or wrong client secret`,
        );
      }
      const { username, password } = body;
      if (typeof username !== 'string' || username === '' || typeof password !== 'string') {
        throw new OAuthError(400, 'invalid_request', 'username and password are required');
      }
      const issued = await identity.passwordGrant(username, password);
      if (!issued) throw new OAuthError(400, 'invalid_grant', 'invalid user credentials');
      return {
        access_token: issued.token,
        token_type: 'Bearer',
        expires_in: issued.expiresIn,
        scope: 'openid',
      };
    } catch (err) {
      if (err instanceof OAuthError) return sendOAuthError(reply, err, viaBasic);
      throw err;
    }
  };
  for (const path of TOKEN_PATHS) {
    app.post(path, { config: { permission: 'public' }, onRequest: limited }, handler);
  }
}
