/**
 * The edge's identity: the local admin user and its first-run bootstrap, API clients (OAuth 2.0
 * client credentials), long-lived API tokens, and the check of every request's credentials.
 * Plain domain code: no HTTP here.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { AppError, badRequest, notFound, unauthorized, ERRORS } from '../../kernel/errors.js';
import {
  TokenSigner,
  hashPassword,
  hashSecret,
  randomPassword,
  randomSecret,
  secretMatches,
  verifyPassword,
  type JwtClaims,
} from '../../kernel/crypto.js';
import type { AuthContext, Role } from '../../kernel/http/auth-types.js';
import { runList, type ListDefinition, type ListPage, type ListSpec } from '../../kernel/paging.js';
import type { AuthRepository } from './repository.js';

/** The local identity provider's ID, as `providerId` of `POST /auth/v2/login`. */
export const LOCAL_PROVIDER_ID = '4f1c7a52-9d0e-4b7e-8c1a-6d2f3e5b7a90';
export const ADMIN_USERNAME = 'admin';
export const EULA_VERSION = '1.0';
export const MIN_PASSWORD_LENGTH = 8;
export const ROLES: readonly Role[] = ['admin', 'viewer'];

/** What the client list may be sorted and filtered by. */
export const CLIENT_LIST: ListDefinition = {
  fields: {
    name: 'name',
    role: 'role',
    createdAt: { column: 'created_at', type: 'integer', filterable: false },
  },
  tiebreak: 'client_id',
  defaultSort: [{ field: 'createdAt', order: 'asc' }],
  maxLimit: 200,
};

/** What the API token list may be sorted and filtered by. */
export const TOKEN_LIST: ListDefinition = { ...CLIENT_LIST, tiebreak: 'id' };

/** How long a positive credential lookup is trusted before the database is asked again. */
const CACHE_MS = 5000;

export interface AuthServiceOptions {
  /** Lifetime of access and session tokens, seconds. */
  tokenTtl: number;
  logger: Logger;
}

export interface ApiClientView {
  client_id: string;
  name: string;
  role: Role;
  createdAt: string;
  updatedAt: string;
}

export interface ApiTokenView {
  id: string;
  name: string;
  role: Role;
  createdAt: string;
}

/** Tokens whose signature was checked, keyed by the token itself; cleared when full. */
const VERIFIED_CACHE_SIZE = 10_000;

type VerifiedToken =
  | { kind: 'api'; hash: string; exp: number }
  | { kind: 'session' | 'access'; subject: string; issuedAt: number; exp: number };

interface CachedCredential {
  role: Role;
  validAfter: number;
  until: number;
}

export class AuthService {
  readonly #repo: AuthRepository;
  readonly #signer: TokenSigner;
  readonly #ttl: number;
  readonly #log: Logger;
  #eulaAccepted = false;
  #mustChangePassword = true;
  #sessionsValidAfter = 0;
  readonly #clients = new Map<string, CachedCredential>();
  readonly #tokens = new Map<string, CachedCredential & { id: string }>();
  readonly #verified = new Map<string, VerifiedToken>();

  private constructor(repo: AuthRepository, signer: TokenSigner, options: AuthServiceOptions) {
    this.#repo = repo;
    this.#signer = signer;
    this.#ttl = options.tokenTtl;
    this.#log = options.logger;
  }

  /** Opens the identity store: the signing key is created on first use and kept in the database. */
  static async open(repo: AuthRepository, options: AuthServiceOptions): Promise<AuthService> {
    const key = await repo.settings.init('jwt_signing_key', randomBytes(32).toString('base64'));
    const service = new AuthService(repo, new TokenSigner(Buffer.from(key, 'base64')), options);
    await service.#loadBootstrapState();
    return service;
  }

  get tokenTtl(): number {
    return this.#ttl;
  }

  async #loadBootstrapState(): Promise<void> {
    this.#eulaAccepted = (await this.#repo.settings.get('eula_version')) !== undefined;
    const admin = await this.#repo.getUser(ADMIN_USERNAME);
    this.#mustChangePassword = admin ? admin.must_change_password === 1 : true;
    this.#sessionsValidAfter = admin?.sessions_valid_after ?? 0;
  }

  /**
   * Creates the local admin on first start, with `initialPassword` or a generated one. The
   * generated password is answered once, for the caller to show; it is stored only as a hash.
   */
  async ensureAdmin(initialPassword?: string): Promise<{ created: boolean; generatedPassword?: string }> {
    if (await this.#repo.getUser(ADMIN_USERNAME)) return { created: false };
    if (initialPassword !== undefined && initialPassword.length < MIN_PASSWORD_LENGTH) {
      throw new AppError(
        ERRORS.weakPassword,
        `the first-run admin password must have at least ${MIN_PASSWORD_LENGTH} characters`,
      );
    }
    const password = initialPassword ?? randomPassword();
    const now = Date.now();
    const created = await this.#repo.createUserIfAbsent({
      username: ADMIN_USERNAME,
      password_hash: await hashPassword(password),
      must_change_password: 1,
      sessions_valid_after: 0,
      created_at: now,
      updated_at: now,
    });
    await this.#loadBootstrapState();
    if (!created) return { created: false };
    this.#log.info({ username: ADMIN_USERNAME }, 'local admin user created');
    return initialPassword === undefined ? { created: true, generatedPassword: password } : { created: true };
  }

  /**
   * A new one-time password for the local admin (created if absent), answered once: the older
   * sessions end and the bootstrap asks for a password change again at the next login. For
   * `millwright edge admin reset-password`, which works whether or not the edge runs.
   */
  async resetAdminPassword(): Promise<{ username: string; password: string }> {
    const password = randomPassword();
    const now = Date.now();
    const hash = await hashPassword(password);
    const created = await this.#repo.createUserIfAbsent({
      username: ADMIN_USERNAME,
      password_hash: hash,
      must_change_password: 1,
      sessions_valid_after: now,
      created_at: now,
      updated_at: now,
    });
    if (!created) await this.#repo.resetUserPassword(ADMIN_USERNAME, hash, now);
    await this.#loadBootstrapState();
    this.#log.info({ username: ADMIN_USERNAME }, 'admin password reset');
    return { username: ADMIN_USERNAME, password };
  }

  /** What the admin still has to do before its session may do anything else. */
  bootstrapSteps(): string[] {
    const steps: string[] = [];
    if (!this.#eulaAccepted) steps.push('accept the EULA (PUT /auth/v2/eula)');
    if (this.#mustChangePassword) steps.push('change the first-run password (PUT /auth/v2/password)');
    return steps;
  }

  eulaStatus() {
    return { version: EULA_VERSION, accepted: this.#eulaAccepted };
  }

  async login(username: string, password: string, providerId: string): Promise<string> {
    if (providerId !== LOCAL_PROVIDER_ID) {
      throw badRequest(
        `unknown identity provider "${providerId}"; GET /auth/v2/providers lists the providers`,
      );
    }
    const user = await this.#repo.getUser(username);
    // Hash even for an unknown user, so that timing does not tell which user names exist.
    const ok = user
      ? await verifyPassword(password, user.password_hash)
      : (await verifyPassword(password, DUMMY_HASH), false);
    if (!user || !ok) {
      this.#log.warn({ username }, 'login refused');
      throw new AppError(ERRORS.invalidCredentials, 'invalid username or password');
    }
    // The stored flag, not the one read at start: `edge admin reset-password` may have run since.
    this.#mustChangePassword = user.must_change_password === 1;
    this.#sessionsValidAfter = user.sessions_valid_after;
    this.#log.info({ username }, 'login');
    return this.#sessionToken(username);
  }

  #sessionToken(username: string): string {
    return this.#signer.sign(
      { sub: `user:${username}`, kind: 'session', role: 'admin', t: Date.now() },
      this.#ttl,
    );
  }

  async acceptEula(agree: boolean, version: string): Promise<void> {
    if (!agree) throw badRequest('the EULA must be agreed to ("agree": true) to use this edge');
    if (version.trim() === '') throw badRequest('version must name the EULA version agreed to');
    await this.#repo.settings.put('eula_version', version);
    this.#eulaAccepted = true;
    this.#log.info({ version }, 'EULA accepted');
  }

  /** Changes the admin's password; older sessions end; answers a fresh session token. */
  async changePassword(subject: string, currentPassword: string, newPassword: string): Promise<string> {
    const username = subject.slice('user:'.length);
    const user = await this.#repo.getUser(username);
    if (!user) throw unauthorized('the session user no longer exists');
    if (!(await verifyPassword(currentPassword, user.password_hash))) {
      throw new AppError(ERRORS.invalidPassword, 'currentPassword is not the current password');
    }
    if (newPassword.length < MIN_PASSWORD_LENGTH) {
      throw new AppError(
        ERRORS.weakPassword,
        `newPassword must have at least ${MIN_PASSWORD_LENGTH} characters`,
      );
    }
    if (newPassword === currentPassword) {
      throw new AppError(ERRORS.weakPassword, 'newPassword must differ from the current password');
    }
    const now = Date.now();
    await this.#repo.updateUserPassword(username, await hashPassword(newPassword), now);
    this.#mustChangePassword = false;
    this.#sessionsValidAfter = now;
    this.#log.info({ username }, 'password changed');
    return this.#sessionToken(username);
  }

  // --- API clients ------------------------------------------------------------------------

  async createClient(name: string, role: Role = 'admin'): Promise<ApiClientView & { client_secret: string }> {
    validateName(name);
    validateRole(role);
    const now = Date.now();
    const clientId = randomUUID();
    const secret = randomSecret('mws');
    await this.#repo.insertClient({
      client_id: clientId,
      name,
      role,
      secret_hash: hashSecret(secret),
      tokens_valid_after: 0,
      created_at: now,
      updated_at: now,
    });
    this.#log.info({ client_id: clientId, name, role }, 'api client created');
    return {
      ...clientView({ client_id: clientId, name, role, created_at: now, updated_at: now }),
      client_secret: secret,
    };
  }

  async getClient(clientId: string): Promise<ApiClientView> {
    const row = await this.#repo.getClient(clientId);
    if (!row) throw notFound(`api client "${clientId}" not found`);
    return clientView(row);
  }

  async listClients(spec: ListSpec): Promise<ListPage<ApiClientView>> {
    const page = await runList(this.#repo.database, this.#repo.clientListQuery(), CLIENT_LIST, spec);
    return { items: page.items.map(clientView), total: page.total };
  }

  /** Renames a client or changes its role (a new role applies to its tokens at once). */
  async updateClient(clientId: string, change: { name?: string | undefined; role?: Role | undefined }) {
    if (change.name !== undefined) validateName(change.name);
    if (change.role !== undefined) validateRole(change.role);
    if (!(await this.#repo.updateClient(clientId, change, Date.now()))) {
      throw notFound(`api client "${clientId}" not found`);
    }
    this.#clients.delete(clientId);
    this.#log.info({ client_id: clientId, ...change }, 'api client updated');
    return this.getClient(clientId);
  }

  async deleteClient(clientId: string): Promise<void> {
    if (!(await this.#repo.deleteClient(clientId))) throw notFound(`api client "${clientId}" not found`);
    this.#clients.delete(clientId);
    this.#log.info({ client_id: clientId }, 'api client deleted');
  }

  /** Drops what is cached of a client (changed or deleted by a configuration apply). */
  forgetClient(clientId: string): void {
    this.#clients.delete(clientId);
  }

  /** A new secret; the old one and every token issued before stop working at once. */
  async rotateClientSecret(clientId: string): Promise<{ client_id: string; client_secret: string }> {
    const secret = randomSecret('mws');
    if (!(await this.#repo.updateClientSecret(clientId, hashSecret(secret), Date.now()))) {
      throw notFound(`api client "${clientId}" not found`);
    }
    this.#clients.delete(clientId);
    this.#log.info({ client_id: clientId }, 'api client secret rotated');
    return { client_id: clientId, client_secret: secret };
  }

  /** OAuth 2.0 client credentials: answers an access token, or `null` for bad credentials. */
  async issueToken(
    clientId: string,
    clientSecret: string,
  ): Promise<{ token: string; expiresIn: number } | null> {
    const row = await this.#repo.getClient(clientId);
    if (!row || !secretMatches(clientSecret, row.secret_hash)) return null;
    const token = this.#signer.sign(
      { sub: `client:${clientId}`, kind: 'access', role: row.role, t: Date.now() },
      this.#ttl,
    );
    return { token, expiresIn: this.#ttl };
  }

  // --- API tokens --------------------------------------------------------------------------

  async createApiToken(name: string, role: Role = 'admin'): Promise<ApiTokenView & { token: string }> {
    validateName(name);
    validateRole(role);
    const id = randomUUID();
    const token = randomSecret('mwt');
    const now = Date.now();
    await this.#repo.insertToken({ id, name, role, token_hash: hashSecret(token), created_at: now });
    this.#log.info({ id, name, role }, 'api token created');
    return { id, name, role, createdAt: new Date(now).toISOString(), token };
  }

  async listApiTokens(spec: ListSpec): Promise<ListPage<ApiTokenView>> {
    const page = await runList(this.#repo.database, this.#repo.tokenListQuery(), TOKEN_LIST, spec);
    return { items: page.items.map(tokenView), total: page.total };
  }

  async revokeApiToken(id: string): Promise<void> {
    const hash = await this.#repo.deleteToken(id);
    if (!hash) throw notFound(`api token "${id}" not found`);
    this.#tokens.delete(hash);
    this.#log.info({ id }, 'api token revoked');
  }

  // --- request authentication ------------------------------------------------------------------

  /**
   * The caller behind an `Authorization` header or `jwtAccess` cookie: `null` when none was sent;
   * a 401 `AppError` when one was sent and is not valid (bad, expired or revoked).
   */
  async authenticate(
    authorization: string | undefined,
    cookieToken: string | undefined,
  ): Promise<AuthContext | null> {
    if (authorization) {
      const space = authorization.indexOf(' ');
      const scheme = space > 0 ? authorization.slice(0, space).toLowerCase() : '';
      const value = space > 0 ? authorization.slice(space + 1).trim() : '';
      if (scheme === 'bearer' && value) return this.#credential(value, 'bearer');
      if (scheme === 'basic' && value) {
        const decoded = Buffer.from(value, 'base64').toString('utf8');
        const colon = decoded.indexOf(':');
        const user = colon >= 0 ? decoded.slice(0, colon) : decoded;
        const pass = colon >= 0 ? decoded.slice(colon + 1) : '';
        // The legacy header token: `base64(<token>:)`; the token may stand in either half.
        const token = user && (user.startsWith('mwt_') || user.split('.').length === 3) ? user : pass || user;
        if (token) return this.#credential(token, 'basic');
      }
      throw unauthorized(
        'unsupported Authorization header: use "Bearer <token>" or "Basic base64(<token>:)"',
      );
    }
    if (cookieToken) return this.#credential(cookieToken, 'cookie');
    return null;
  }

  async #credential(token: string, scheme: AuthContext['scheme']): Promise<AuthContext> {
    // A token seen before skips signature and parsing: the hot path of every data route.
    let v = this.#verified.get(token);
    if (!v) {
      v = this.#verify(token);
      if (this.#verified.size >= VERIFIED_CACHE_SIZE) this.#verified.clear();
      this.#verified.set(token, v);
    }
    if (v.exp <= Date.now()) {
      this.#verified.delete(token);
      throw unauthorized('invalid or expired token');
    }
    switch (v.kind) {
      case 'api':
        return this.#apiToken(v.hash, scheme);
      case 'session':
        if (v.issuedAt < this.#sessionsValidAfter) throw unauthorized('session ended: log in again');
        return { subject: v.subject, role: 'admin', scheme };
      case 'access':
        return this.#accessToken(v.subject, v.issuedAt, scheme);
    }
  }

  /** Checks a token's form and signature once; what can change later (revocation) is checked per use. */
  #verify(token: string): VerifiedToken {
    if (token.startsWith('mwt_')) return { kind: 'api', hash: hashSecret(token), exp: Infinity };
    const claims = this.#signer.verify(token);
    if (!claims) throw unauthorized('invalid or expired token');
    const base = { subject: claims.sub, issuedAt: issuedAt(claims), exp: claims.exp * 1000 };
    if (claims.kind === 'session' && claims.sub.startsWith('user:')) return { kind: 'session', ...base };
    if (claims.kind === 'access' && claims.sub.startsWith('client:')) return { kind: 'access', ...base };
    throw unauthorized('invalid or expired token');
  }

  async #accessToken(subject: string, issued: number, scheme: AuthContext['scheme']): Promise<AuthContext> {
    const clientId = subject.slice('client:'.length);
    const now = Date.now();
    let cached = this.#clients.get(clientId);
    if (!cached || cached.until < now) {
      const row = await this.#repo.getClient(clientId);
      if (!row) {
        this.#clients.delete(clientId);
        throw unauthorized('token revoked: its api client no longer exists');
      }
      cached = { role: row.role, validAfter: row.tokens_valid_after, until: now + CACHE_MS };
      this.#clients.set(clientId, cached);
    }
    if (issued < cached.validAfter) throw unauthorized('token revoked: its client secret was rotated');
    return { subject, role: cached.role, scheme };
  }

  async #apiToken(hash: string, scheme: AuthContext['scheme']): Promise<AuthContext> {
    const now = Date.now();
    let cached = this.#tokens.get(hash);
    if (!cached || cached.until < now) {
      const row = await this.#repo.getTokenByHash(hash);
      if (!row) {
        this.#tokens.delete(hash);
        throw unauthorized('invalid or revoked api token');
      }
      cached = { id: row.id, role: row.role, validAfter: 0, until: now + CACHE_MS };
      this.#tokens.set(hash, cached);
    }
    return { subject: `token:${cached.id}`, role: cached.role, scheme };
  }
}

/** Issue time in milliseconds (claim `t`), finer than `iat`, so that a change revokes at once. */
function issuedAt(claims: JwtClaims): number {
  return typeof claims.t === 'number' ? claims.t : claims.iat * 1000;
}

// A valid hash of a random password, verified against when the user is unknown.
const DUMMY_HASH = 'scrypt$32768$8$1$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=';

export function clientView(row: {
  client_id: string;
  name: string;
  role: Role;
  created_at: number;
  updated_at: number;
}): ApiClientView {
  return {
    client_id: row.client_id,
    name: row.name,
    role: row.role,
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}

export function tokenView(row: { id: string; name: string; role: Role; created_at: number }): ApiTokenView {
  return { id: row.id, name: row.name, role: row.role, createdAt: new Date(row.created_at).toISOString() };
}

function validateName(name: string): void {
  if (name.trim() === '' || name.length > 200) throw badRequest('name must have 1 to 200 characters');
}

function validateRole(role: string): asserts role is Role {
  if (!ROLES.includes(role as Role)) {
    throw badRequest(`role must be one of ${ROLES.join(', ')}, got "${role}"`);
  }
}
