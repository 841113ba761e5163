/**
 * The UNS's bundled identity provider (realm `standalone`): users of the service (administrators
 * and operators) with hashed passwords, the OAuth 2.0 password grant, the realm policy (access
 * token lifetime, 15 to 60 minutes), and the check of every request's Bearer token. An operator
 * reads; an administrator also changes (the kernel's `viewer` and `admin` roles).
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { AppError, badRequest, conflict, notFound, unauthorized, ERRORS } from '../../kernel/errors.js';
import { TokenSigner, hashPassword, randomPassword, verifyPassword } from '../../kernel/crypto.js';
import type { AuthContext } from '../../kernel/http/auth-types.js';
import type { IdentityRepository, UserRole, UserRow } from './repository.js';
import { USER_ROLES } from './roles.js';

export const ADMIN_USERNAME = 'admin';
export const REALM = 'standalone';
export { USER_ROLES };
export const MIN_USER_PASSWORD = 8;
export const MIN_TOKEN_LIFETIME = 15;
export const MAX_TOKEN_LIFETIME = 60;
const CACHE_MS = 5000;
const VERIFIED_MAX = 10_000;

export interface UserView {
  username: string;
  role: UserRole;
  createdAt: number;
  updatedAt: number;
}

export interface IdentityOptions {
  /** The OAuth client the token endpoints accept (its secret is empty). */
  clientId: string;
  /** The realm's token lifetime on first start, minutes. */
  tokenLifetime: number;
  logger: Logger;
}

export class IdentityService {
  readonly #repo: IdentityRepository;
  readonly #signer: TokenSigner;
  readonly #log: Logger;
  readonly clientId: string;
  #lifetime: number;
  readonly #users = new Map<string, { role: UserRole; validAfter: number; until: number }>();
  readonly #verified = new Map<string, { sub: string; iat: number; exp: number }>();

  private constructor(
    repo: IdentityRepository,
    signer: TokenSigner,
    lifetime: number,
    options: IdentityOptions,
  ) {
    this.#repo = repo;
    this.#signer = signer;
    this.#lifetime = lifetime;
    this.#log = options.logger;
    this.clientId = options.clientId;
  }

  static async open(repo: IdentityRepository, options: IdentityOptions): Promise<IdentityService> {
    const key = await repo.settings.init('jwt_signing_key', randomBytes(32).toString('base64'));
    const lifetime = Number(
      await repo.settings.init('token_lifetime_minutes', String(options.tokenLifetime)),
    );
    return new IdentityService(repo, new TokenSigner(Buffer.from(key, 'base64')), lifetime, options);
  }

  /** Access token lifetime of the realm, minutes. */
  get tokenLifetime(): number {
    return this.#lifetime;
  }

  async setTokenLifetime(minutes: number): Promise<number> {
    if (!Number.isInteger(minutes) || minutes < MIN_TOKEN_LIFETIME || minutes > MAX_TOKEN_LIFETIME) {
      throw badRequest(
        `tokenLifetimeMinutes must be an integer from ${MIN_TOKEN_LIFETIME} to ${MAX_TOKEN_LIFETIME}`,
      );
    }
    await this.#repo.settings.put('token_lifetime_minutes', String(minutes));
    this.#lifetime = minutes;
    this.#log.info({ minutes }, 'realm token lifetime changed');
    return minutes;
  }

  /** Creates the administrator `admin` on first start, with `password` or a generated one (answered once). */
  async ensureAdmin(password?: string): Promise<{ created: boolean; generatedPassword?: string }> {
    if ((await this.#repo.listUsers()).some((u) => u.role === 'admin')) return { created: false };
    const chosen = password ?? randomPassword();
    try {
      await this.createUser(ADMIN_USERNAME, chosen, 'admin');
    } catch (err) {
      if (err instanceof AppError && err.status === 409) return { created: false };
      throw err;
    }
    return password === undefined ? { created: true, generatedPassword: chosen } : { created: true };
  }

  async createUser(username: string, password: string, role: UserRole = 'operator'): Promise<UserView> {
    if (!/^[A-Za-z0-9_.@-]{1,100}$/.test(username)) {
      throw badRequest('username must have 1 to 100 characters of A-Z a-z 0-9 _ . @ -');
    }
    if (!USER_ROLES.includes(role))
      throw badRequest(`role must be one of ${USER_ROLES.join(', ')}, got "${role}"`);
    checkPassword(password);
    const now = Date.now();
    const row: UserRow = {
      username,
      password_hash: await hashPassword(password),
      role,
      tokens_valid_after: 0,
      created_at: now,
      updated_at: now,
    };
    if (!(await this.#repo.insertUser(row))) throw conflict(`a user named "${username}" already exists`);
    this.#log.info({ username, role }, 'user created');
    return userView(row);
  }

  async listUsers(): Promise<UserView[]> {
    return (await this.#repo.listUsers()).map(userView);
  }

  async getUser(username: string): Promise<UserView> {
    const row = await this.#repo.getUser(username);
    if (!row) throw notFound(`user "${username}" not found`);
    return userView(row);
  }

  /** Deletes a user; its tokens stop working at once. The last administrator cannot be deleted. */
  async deleteUser(username: string): Promise<void> {
    const users = await this.#repo.listUsers();
    const user = users.find((u) => u.username === username);
    if (!user) throw notFound(`user "${username}" not found`);
    if (user.role === 'admin' && users.filter((u) => u.role === 'admin').length === 1) {
      throw conflict('the last administrator cannot be deleted');
    }
    await this.#repo.deleteUser(username);
    this.#users.delete(username);
    this.#log.info({ username }, 'user deleted');
  }

  /** Sets a user's password; tokens issued before stop working. */
  async setPassword(username: string, password: string): Promise<UserView> {
    checkPassword(password);
    const now = Date.now();
    if (
      !(await this.#repo.updateUser(username, {
        password_hash: await hashPassword(password),
        tokens_valid_after: now,
        updated_at: now,
      }))
    ) {
      throw notFound(`user "${username}" not found`);
    }
    this.#users.delete(username);
    this.#log.info({ username }, 'user password changed');
    return this.getUser(username);
  }

  /** The OAuth 2.0 password grant: an access token, or null for bad user credentials. */
  async passwordGrant(
    username: string,
    password: string,
  ): Promise<{ token: string; expiresIn: number; role: UserRole } | null> {
    const row = await this.#repo.getUser(username);
    const ok = row
      ? await verifyPassword(password, row.password_hash)
      : (await verifyPassword(password, DUMMY_HASH), false);
    if (!row || !ok) {
      this.#log.warn({ username }, 'token refused: invalid user credentials');
      return null;
    }
    const expiresIn = this.#lifetime * 60;
    // Issued-at in milliseconds (`t`), so that a password change in the same second ends older tokens.
    const token = this.#signer.sign(
      {
        sub: `user:${username}`,
        typ: 'Bearer',
        azp: this.clientId,
        realm: REALM,
        scope: 'openid',
        role: row.role,
        t: Date.now(),
      },
      expiresIn,
    );
    return { token, expiresIn, role: row.role };
  }

  /** The caller of a request: null without an Authorization header; a 401 for anything invalid. */
  async authenticate(authorization: string | undefined): Promise<AuthContext | null> {
    if (!authorization) return null;
    const m = /^bearer\s+(\S+)$/i.exec(authorization.trim());
    if (!m) throw unauthorized('unsupported Authorization header: use "Bearer <access token>"');
    const token = m[1]!;
    let v = this.#verified.get(token);
    if (!v) {
      const claims = this.#signer.verify(token);
      if (!claims || !claims.sub.startsWith('user:')) throw unauthorized('invalid or expired token');
      v = {
        sub: claims.sub,
        iat: typeof claims.t === 'number' ? claims.t : claims.iat * 1000,
        exp: claims.exp * 1000,
      };
      if (this.#verified.size >= VERIFIED_MAX) this.#verified.clear();
      this.#verified.set(token, v);
    }
    const now = Date.now();
    if (v.exp <= now) {
      this.#verified.delete(token);
      throw unauthorized('invalid or expired token');
    }
    const username = v.sub.slice('user:'.length);
    let user = this.#users.get(username);
    if (!user || user.until < now) {
      const row = await this.#repo.getUser(username);
      if (!row) {
        this.#users.delete(username);
        throw unauthorized('token revoked: its user no longer exists');
      }
      user = { role: row.role, validAfter: Number(row.tokens_valid_after), until: now + CACHE_MS };
      this.#users.set(username, user);
    }
    if (v.iat < user.validAfter) throw unauthorized('token revoked: the password was changed');
    return { subject: v.sub, role: user.role === 'admin' ? 'admin' : 'viewer', scheme: 'bearer' };
  }
}

const DUMMY_HASH = await hashPassword(randomBytes(16).toString('hex'));

function checkPassword(password: string): void {
  if (password.length < MIN_USER_PASSWORD) {
    throw new AppError(ERRORS.weakPassword, `password must have at least ${MIN_USER_PASSWORD} characters`);
  }
}

export function userView(row: UserRow): UserView {
  return {
    username: row.username,
    role: row.role,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}
