/**
 * The manager's OpenID Connect realm `standalone` (contract: the manager's web UI signs in through
 * an identity provider under `/auth` on the manager host). Authorization code with PKCE (S256
 * only) for the console, ES256 tokens whose public key is served as a JWKS, one session a sign-in
 * (a row of `mgr_session`, ended by logout or at its expiry). The users, their passwords and
 * roles are the auth module's; API tokens do not pass here. Plain domain code: no HTTP.
 *
 * Bounds: pending authorization codes are at most `MAX_CODES` (each lives 60 s, used once); live
 * sessions are at most `MAX_SESSIONS_PER_USER` a user (the oldest is not ended: a new sign-in
 * past the bound is refused until one ends or expires).
 */
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomBytes,
  randomUUID,
  sign,
  timingSafeEqual,
  verify,
  type KeyObject,
} from 'node:crypto';
import type { Logger } from 'pino';
import type { ManagerAuthRepository } from './repository.js';
import type { ManagerAuthService } from './service.js';

export const REALM = 'standalone';
export const REALM_PATH = `/auth/realms/${REALM}`;
export const OIDC_PATH = `${REALM_PATH}/protocol/openid-connect`;
/** The manager console, the realm's one client: public (no secret), PKCE required. */
export const CONSOLE_CLIENT_ID = 'manager-console';
/** Where the realm sends the browser back with the code, on the main or the admin port. */
export const CALLBACK_PATH = '/console/callback';

export const MAX_CODES = 10_000;
export const MAX_SESSIONS_PER_USER = 100;
const CODE_TTL_MS = 60_000;
const KEY_SETTING = 'realm.signing-key';

export class RealmError extends Error {
  readonly error: string;
  readonly status: number;
  constructor(status: number, error: string, description: string) {
    super(description);
    this.name = 'RealmError';
    this.status = status;
    this.error = error;
  }
}

export interface AuthorizeRequest {
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
  nonce?: string;
  scope: string;
}

interface PendingCode extends AuthorizeRequest {
  username: string;
  until: number;
}

export interface TokenSet {
  access_token: string;
  id_token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
  /** The session (the `sid` claim). */
  sessionId: string;
}

export interface AccessClaims {
  iss: string;
  sub: string;
  sid: string;
  aud: string;
  exp: number;
  iat: number;
  preferred_username: string;
}

const HEADER_FIELDS = { alg: 'ES256', typ: 'JWT' };

export class Realm {
  readonly #repo: ManagerAuthRepository;
  readonly #auth: ManagerAuthService;
  readonly #log: Logger;
  readonly #key: KeyObject;
  readonly #public: KeyObject;
  readonly #kid: string;
  readonly #codes = new Map<string, PendingCode>();
  /** Seconds a session (and its access token) lives. */
  readonly sessionTtl: number;
  /** Ports the realm sends a browser back to (`/console/callback` on the main and admin ports). */
  readonly callbackPorts = new Set<number>();

  private constructor(
    repo: ManagerAuthRepository,
    auth: ManagerAuthService,
    logger: Logger,
    key: KeyObject,
    sessionTtl: number,
  ) {
    this.#repo = repo;
    this.#auth = auth;
    this.#log = logger;
    this.#key = key;
    this.#public = createPublicKey(key);
    this.sessionTtl = sessionTtl;
    const jwk = createPublicKey(key).export({ format: 'jwk' });
    this.#kid = createHash('sha256')
      .update(`${String(jwk.x)}.${String(jwk.y)}`)
      .digest('base64url')
      .slice(0, 16);
  }

  /** The realm with its signing key (made at the first start, kept in `mgr_auth_setting`). */
  static async open(
    repo: ManagerAuthRepository,
    auth: ManagerAuthService,
    logger: Logger,
    sessionTtl: number,
  ): Promise<Realm> {
    let pem = await repo.setting(KEY_SETTING);
    if (!pem) {
      const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      pem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
      await repo.putSetting(KEY_SETTING, pem);
    }
    return new Realm(repo, auth, logger, createPrivateKey(pem), sessionTtl);
  }

  /** The public key set (`/certs`). */
  jwks() {
    const jwk = this.#public.export({ format: 'jwk' });
    return { keys: [{ ...jwk, kid: this.#kid, use: 'sig', alg: 'ES256' }] };
  }

  /** The discovery document for the realm at `issuer` (`https://<host>/auth/realms/standalone`). */
  discovery(issuer: string) {
    const oidc = `${issuer}/protocol/openid-connect`;
    return {
      issuer,
      authorization_endpoint: `${oidc}/auth`,
      token_endpoint: `${oidc}/token`,
      userinfo_endpoint: `${oidc}/userinfo`,
      jwks_uri: `${oidc}/certs`,
      end_session_endpoint: `${oidc}/logout`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['ES256'],
      token_endpoint_auth_methods_supported: ['none'],
      code_challenge_methods_supported: ['S256'],
      scopes_supported: ['openid', 'profile'],
      claims_supported: ['sub', 'iss', 'aud', 'exp', 'iat', 'sid', 'nonce', 'preferred_username'],
    };
  }

  /**
   * Checks the parameters of an authorization request before the login form is shown; a wrong
   * client or redirect is answered to the user, never redirected (RFC 6749 4.1.2.1).
   */
  checkAuthorize(query: Record<string, unknown>, host: string): AuthorizeRequest {
    const str = (k: string) => (typeof query[k] === 'string' ? (query[k] as string) : '');
    if (str('client_id') !== CONSOLE_CLIENT_ID) {
      throw new RealmError(400, 'invalid_client', `unknown client_id "${str('client_id').slice(0, 100)}"`);
    }
    const redirectUri = str('redirect_uri');
    if (!this.redirectAllowed(redirectUri, host)) {
      throw new RealmError(
        400,
        'invalid_request',
        `redirect_uri must be ${CALLBACK_PATH} on this host's console ports, got "${redirectUri.slice(0, 200)}"`,
      );
    }
    if (str('response_type') !== 'code') {
      throw new RealmError(400, 'unsupported_response_type', 'response_type must be "code"');
    }
    const scope = str('scope');
    if (!scope.split(' ').includes('openid'))
      throw new RealmError(400, 'invalid_scope', 'scope must include openid');
    if (str('code_challenge_method') !== 'S256' || !/^[A-Za-z0-9_-]{43}$/.test(str('code_challenge'))) {
      throw new RealmError(
        400,
        'invalid_request',
        'PKCE is required: code_challenge (43 base64url characters) with code_challenge_method=S256',
      );
    }
    const nonce = str('nonce');
    if (nonce.length > 200) throw new RealmError(400, 'invalid_request', 'nonce is over 200 characters');
    return {
      clientId: CONSOLE_CLIENT_ID,
      redirectUri,
      codeChallenge: str('code_challenge'),
      scope,
      ...(nonce ? { nonce } : {}),
    };
  }

  /** `/console/callback` on this host, on a port of the manager's consoles. */
  redirectAllowed(uri: string, host: string): boolean {
    let url: URL;
    try {
      url = new URL(uri);
    } catch {
      return false;
    }
    const hostname = host.replace(/:\d+$/, '');
    const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    return (
      url.pathname === CALLBACK_PATH &&
      url.search === '' &&
      url.hash === '' &&
      url.username === '' &&
      url.hostname === hostname.replace(/^\[|\]$/g, '') &&
      this.callbackPorts.has(port)
    );
  }

  /** A one-time code for `username` (signed in with the password), for the redirect. */
  async issueCode(request: AuthorizeRequest, username: string, password: string): Promise<string> {
    if (!(await this.#auth.checkPassword(username, password))) {
      throw new RealmError(401, 'invalid_grant', 'invalid username or password');
    }
    const now = Date.now();
    for (const [code, p] of this.#codes) if (p.until <= now) this.#codes.delete(code);
    if (this.#codes.size >= MAX_CODES) {
      throw new RealmError(
        503,
        'temporarily_unavailable',
        'too many sign-ins in progress; retry in a minute',
      );
    }
    const code = randomBytes(32).toString('base64url');
    this.#codes.set(code, { ...request, username, until: now + CODE_TTL_MS });
    return code;
  }

  /** The token request of the authorization code grant, with its PKCE verifier. */
  async exchange(
    params: { code: string; clientId: string; redirectUri: string; codeVerifier: string },
    issuer: string,
  ): Promise<TokenSet> {
    const pending = this.#codes.get(params.code);
    this.#codes.delete(params.code); // used once, whatever the outcome
    if (!pending || pending.until <= Date.now()) {
      throw new RealmError(400, 'invalid_grant', 'the authorization code is unknown, used or expired');
    }
    if (params.clientId !== pending.clientId || params.redirectUri !== pending.redirectUri) {
      throw new RealmError(
        400,
        'invalid_grant',
        'client_id or redirect_uri differ from the authorization request',
      );
    }
    const challenge = createHash('sha256').update(params.codeVerifier).digest('base64url');
    if (
      !/^[A-Za-z0-9._~-]{43,128}$/.test(params.codeVerifier) ||
      !timingSafeEqual(Buffer.from(challenge), Buffer.from(pending.codeChallenge))
    ) {
      throw new RealmError(400, 'invalid_grant', 'code_verifier does not match the code_challenge');
    }
    const now = Date.now();
    await this.#repo.deleteExpiredSessions(now);
    if ((await this.#repo.countSessions(pending.username, now)) >= MAX_SESSIONS_PER_USER) {
      throw new RealmError(
        400,
        'invalid_grant',
        `user "${pending.username}" has ${MAX_SESSIONS_PER_USER} live sessions; sign out of one first`,
      );
    }
    const sessionId = randomUUID();
    await this.#repo.insertSession({
      id: sessionId,
      username: pending.username,
      client_id: pending.clientId,
      created_at: now,
      expires_at: now + this.sessionTtl * 1000,
    });
    this.#log.info({ username: pending.username, sessionId }, 'console session started');
    const iat = Math.floor(now / 1000);
    const exp = iat + this.sessionTtl;
    const common = { iss: issuer, sub: pending.username, sid: sessionId, iat, exp };
    return {
      access_token: this.#sign({ ...common, aud: pending.clientId, preferred_username: pending.username }),
      id_token: this.#sign({
        ...common,
        aud: pending.clientId,
        auth_time: iat,
        preferred_username: pending.username,
        ...(pending.nonce ? { nonce: pending.nonce } : {}),
      }),
      token_type: 'Bearer',
      expires_in: this.sessionTtl,
      scope: pending.scope,
      sessionId,
    };
  }

  /** The claims of a valid access (or ID) token of a live session; null otherwise. */
  async verifySession(token: string): Promise<AccessClaims | null> {
    const claims = this.#verify(token);
    if (!claims) return null;
    const session = await this.#repo.getSession(claims.sid);
    if (!session || session.expires_at <= Date.now() || session.username !== claims.sub) return null;
    return claims;
  }

  /** The claims of a token this realm signed, expired or not (for `id_token_hint`). */
  peek(token: string): AccessClaims | null {
    return this.#verify(token, true);
  }

  async endSession(sessionId: string): Promise<boolean> {
    const ended = await this.#repo.deleteSession(sessionId);
    if (ended) this.#log.info({ sessionId }, 'console session ended');
    return ended;
  }

  #sign(claims: Record<string, unknown>): string {
    const head = Buffer.from(JSON.stringify({ ...HEADER_FIELDS, kid: this.#kid })).toString('base64url');
    const body = `${head}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
    const sig = sign('sha256', Buffer.from(body), { key: this.#key, dsaEncoding: 'ieee-p1363' });
    return `${body}.${sig.toString('base64url')}`;
  }

  #verify(token: string, ignoreExpiry = false): AccessClaims | null {
    if (token.length > 4096) return null;
    const parts = token.split('.');
    if (parts.length !== 3) return null;
    const [head, payload, sig] = parts as [string, string, string];
    let ok = false;
    try {
      ok = verify(
        'sha256',
        Buffer.from(`${head}.${payload}`),
        { key: this.#public, dsaEncoding: 'ieee-p1363' },
        Buffer.from(sig, 'base64url'),
      );
    } catch {
      return null;
    }
    if (!ok) return null;
    let claims: AccessClaims;
    try {
      claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as AccessClaims;
    } catch {
      return null;
    }
    if (typeof claims.sub !== 'string' || typeof claims.sid !== 'string' || typeof claims.exp !== 'number') {
      return null;
    }
    if (!ignoreExpiry && claims.exp * 1000 <= Date.now()) return null;
    return claims;
  }
}
