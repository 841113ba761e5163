/**
 * The manager's identity: long-lived API tokens (hashed, shown once, named, revocable, rotated),
 * console users, and roles (admin, operator, viewer) granted globally, on a company or on a
 * project. A token either carries its own global role, or belongs to a user and carries that
 * user's grants. Plain domain code: no HTTP here.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { badRequest, conflict, forbidden, notFound, unauthorized } from '../../kernel/errors.js';
import {
  hashPassword,
  hashSecret,
  randomPassword,
  randomSecret,
  verifyPassword,
} from '../../kernel/crypto.js';
import { runList, type ListDefinition, type ListPage, type ListSpec } from '../../kernel/paging.js';
import type { BindingRow, ManagerAuthRepository, ManagerRole, TokenRow } from './repository.js';
import type { Realm } from './realm.js';
import { MANAGER_ROLES } from './roles.js';

export type { ManagerRole };
export { MANAGER_ROLES };
const RANK: Record<ManagerRole, number> = { viewer: 1, operator: 2, admin: 3 };

/** A role over a scope: everything (both null), one company, or one project. */
export interface Grant {
  role: ManagerRole;
  companyId: string | null;
  projectId: string | null;
}

/** Who made a request to the manager. */
export interface Principal {
  subject: string;
  tokenId: string;
  tokenName: string;
  username: string | null;
  grants: Grant[];
}

/** Where a call acts: a project (with its company) or a company. */
export interface Scope {
  companyId?: string | null;
  projectId?: string | null;
}

/** The strongest role `principal` holds over `scope` (a global grant covers every scope). */
export function roleAt(principal: Principal, scope: Scope): ManagerRole | null {
  let best: ManagerRole | null = null;
  for (const g of principal.grants) {
    const covers =
      (g.companyId === null && g.projectId === null) ||
      (g.projectId !== null && g.projectId === scope.projectId) ||
      (g.projectId === null && g.companyId !== null && g.companyId === scope.companyId);
    if (covers && (best === null || RANK[g.role] > RANK[best])) best = g.role;
  }
  return best;
}

/** Throws 403 unless `principal` holds at least `needed` over `scope`. */
export function requireRole(principal: Principal, scope: Scope, needed: ManagerRole): void {
  const role = roleAt(principal, scope);
  if (role === null || RANK[role] < RANK[needed]) {
    throw forbidden(
      `this call needs the ${needed} role${scope.projectId ? ` on project "${scope.projectId}"` : scope.companyId ? ` on company "${scope.companyId}"` : ''}${role ? ` (the caller is ${role})` : ''}`,
    );
  }
}

/** The strongest role the principal holds anywhere. */
export function strongestRole(principal: Principal): ManagerRole | null {
  let best: ManagerRole | null = null;
  for (const g of principal.grants) if (best === null || RANK[g.role] > RANK[best]) best = g.role;
  return best;
}

export function isGlobal(principal: Principal, needed: ManagerRole): boolean {
  return principal.grants.some(
    (g) => g.companyId === null && g.projectId === null && RANK[g.role] >= RANK[needed],
  );
}

export const TOKEN_LIST: ListDefinition = {
  fields: {
    name: 'name',
    role: 'role',
    username: 'username',
    createdAt: { column: 'created_at', type: 'integer', filterable: false },
  },
  tiebreak: 'id',
  defaultSort: [{ field: 'createdAt', order: 'asc' }],
  maxLimit: 1000,
};

export const BINDING_LIST: ListDefinition = {
  fields: {
    username: 'username',
    role: 'role',
    companyId: 'company_id',
    projectId: 'project_id',
    createdAt: { column: 'created_at', type: 'integer', filterable: false },
  },
  tiebreak: 'id',
  defaultSort: [{ field: 'username', order: 'asc' }],
  maxLimit: 1000,
};

export const USER_LIST: ListDefinition = {
  fields: { username: 'username', createdAt: { column: 'created_at', type: 'integer', filterable: false } },
  tiebreak: 'username',
  defaultSort: [{ field: 'username', order: 'asc' }],
  maxLimit: 1000,
};

export interface TokenView {
  id: string;
  name: string;
  role: ManagerRole;
  username: string | null;
  createdAt: string;
  rotatedAt: string;
}

export interface BindingView {
  id: string;
  username: string;
  role: ManagerRole;
  companyId: string | null;
  projectId: string | null;
  createdAt: string;
}

/**
 * How long a positive token lookup is trusted before the database is asked again. The cache is
 * keyed by the token as sent (a hit costs no hash: the bridge's hot path), emptied on every
 * change of tokens, users or roles made by this process.
 */
const CACHE_MS = 5000;
/** The user the first start creates. */
export const FIRST_ADMIN = 'admin';
/** Verified against when the user does not exist, so that a miss costs what a hit costs. */
const DUMMY_HASH = `scrypt$32768$8$1$${Buffer.alloc(16).toString('base64')}$${Buffer.alloc(32).toString('base64')}`;
const CACHE_SIZE = 10_000;

export class ManagerAuthService {
  readonly #repo: ManagerAuthRepository;
  readonly #log: Logger;
  readonly #cache = new Map<string, { principal: Principal; until: number }>();
  /** The OpenID Connect realm `standalone` (set by the module at start). */
  realm: Realm | null = null;
  /** The first administrator's generated password, once, for the banner (null when none was made). */
  firstRun: { username: string; password?: string } | null = null;

  constructor(repo: ManagerAuthRepository, logger: Logger) {
    this.#repo = repo;
    this.#log = logger;
  }

  // --- API tokens ------------------------------------------------------------------------------

  /** A new token; the secret is answered once and stored only as a hash. */
  async createToken(
    name: string,
    role: ManagerRole = 'admin',
    username?: string,
  ): Promise<TokenView & { token: string }> {
    validateName(name);
    validateRole(role);
    if (username !== undefined && !(await this.#repo.getUser(username))) {
      throw notFound(`user "${username}" not found`);
    }
    const now = Date.now();
    const token = randomSecret('mwm');
    const row: TokenRow = {
      id: randomUUID(),
      name,
      role,
      username: username ?? null,
      token_hash: hashSecret(token),
      created_at: now,
      rotated_at: now,
    };
    await this.#repo.insertToken(row);
    this.#log.info({ id: row.id, name, role, username }, 'api token created');
    return { ...tokenView(row), token };
  }

  async listTokens(spec: ListSpec): Promise<ListPage<TokenView>> {
    const page = await runList(this.#repo.database, this.#repo.tokenListQuery(), TOKEN_LIST, spec);
    return { items: page.items.map(tokenView), total: page.total };
  }

  async revokeToken(id: string): Promise<void> {
    if (!(await this.#repo.deleteToken(id))) throw notFound(`api token "${id}" not found`);
    this.#cache.clear();
    this.#log.info({ id }, 'api token revoked');
  }

  /** A new secret for the token; the old one stops working at once. */
  async rotateToken(id: string): Promise<TokenView & { token: string }> {
    const token = randomSecret('mwm');
    const now = Date.now();
    if (!(await this.#repo.rotateToken(id, hashSecret(token), now))) {
      throw notFound(`api token "${id}" not found`);
    }
    this.#cache.clear();
    this.#log.info({ id }, 'api token rotated');
    const row = await this.#repo.getToken(id);
    return { ...tokenView(row!), token };
  }

  /** The principal of `token` when it is in memory and fresh (no database read); else undefined. */
  cachedPrincipal(token: string): Principal | undefined {
    const cached = this.#cache.get(token);
    return cached && cached.until > Date.now() ? cached.principal : undefined;
  }

  /** The principal behind a token value; a 401 for an unknown, revoked or rotated token. */
  async authenticate(token: string): Promise<Principal> {
    const now = Date.now();
    const cached = this.#cache.get(token);
    if (cached && cached.until > now) return cached.principal;
    const hash = hashSecret(token);
    const row = await this.#repo.getTokenByHash(hash);
    if (!row) throw unauthorized('invalid, revoked or rotated API token');
    let grants: Grant[];
    if (row.username === null) grants = [{ role: row.role, companyId: null, projectId: null }];
    else {
      grants = (await this.#repo.bindingsOf(row.username)).map((b) => ({
        role: b.role,
        companyId: b.company_id,
        projectId: b.project_id,
      }));
    }
    const principal: Principal = {
      subject: `token:${row.id}`,
      tokenId: row.id,
      tokenName: row.name,
      username: row.username,
      grants,
    };
    if (this.#cache.size >= CACHE_SIZE) this.#cache.clear();
    this.#cache.set(token, { principal, until: now + CACHE_MS });
    return principal;
  }

  // --- users and roles -------------------------------------------------------------------------

  /**
   * The first administrator, at the first start (no user yet): `admin` with a global admin role
   * and `password` or a generated one, answered once for the caller to print.
   */
  async ensureAdmin(password?: string): Promise<{ created: boolean; generatedPassword?: string }> {
    if ((await this.#repo.countUsers()) > 0) return { created: false };
    if (password !== undefined && password.length < 8) {
      throw badRequest('the first administrator password must have at least 8 characters');
    }
    const chosen = password ?? randomPassword();
    const now = Date.now();
    await this.#repo.insertUserWithBinding(
      { username: FIRST_ADMIN, password_hash: await hashPassword(chosen), created_at: now },
      {
        id: randomUUID(),
        username: FIRST_ADMIN,
        role: 'admin',
        company_id: null,
        project_id: null,
        created_at: now,
      },
    );
    this.#log.info({ username: FIRST_ADMIN }, 'first administrator created');
    return password === undefined ? { created: true, generatedPassword: chosen } : { created: true };
  }

  /** Whether `password` is the user's (the same work whether or not the user exists). */
  async checkPassword(username: string, password: string): Promise<boolean> {
    const user = username.length <= 100 ? await this.#repo.getUser(username) : undefined;
    if (!user) {
      await verifyPassword(password, DUMMY_HASH);
      return false;
    }
    return verifyPassword(password, user.password_hash);
  }

  /** The principal of a console session of `username` (its grants, read now). */
  async principalOfUser(username: string, sessionId: string): Promise<Principal> {
    const grants = (await this.#repo.bindingsOf(username)).map((b) => ({
      role: b.role,
      companyId: b.company_id,
      projectId: b.project_id,
    }));
    return {
      subject: `user:${username}`,
      tokenId: `session:${sessionId}`,
      tokenName: 'console session',
      username,
      grants,
    };
  }

  async createUser(username: string, password: string): Promise<{ username: string; createdAt: string }> {
    if (!/^[A-Za-z0-9._@-]{1,100}$/.test(username)) {
      throw badRequest('username must have 1 to 100 letters, digits or ._@-');
    }
    if (password.length < 8) throw badRequest('password must have at least 8 characters');
    if (await this.#repo.getUser(username)) throw conflict(`user "${username}" exists`);
    const now = Date.now();
    await this.#repo.insertUser({ username, password_hash: await hashPassword(password), created_at: now });
    this.#log.info({ username }, 'user created');
    return { username, createdAt: new Date(now).toISOString() };
  }

  async hasUser(username: string): Promise<boolean> {
    return (await this.#repo.getUser(username)) !== undefined;
  }

  async deleteUser(username: string): Promise<void> {
    if (!(await this.#repo.deleteUser(username))) throw notFound(`user "${username}" not found`);
    this.#cache.clear();
    this.#log.info({ username }, 'user deleted');
  }

  async listUsers(spec: ListSpec) {
    const page = await runList(this.#repo.database, this.#repo.userListQuery(), USER_LIST, spec);
    return {
      items: page.items.map((u) => ({
        username: u.username,
        createdAt: new Date(u.created_at).toISOString(),
      })),
      total: page.total,
    };
  }

  /** Grants `role` to a user over everything, one company, or one project. */
  async grant(username: string, role: ManagerRole, scope: Scope): Promise<BindingView> {
    validateRole(role);
    if (!(await this.#repo.getUser(username))) throw notFound(`user "${username}" not found`);
    if (scope.companyId && scope.projectId) {
      throw badRequest('a role is granted on a company or on a project, not both');
    }
    const row: BindingRow = {
      id: randomUUID(),
      username,
      role,
      company_id: scope.companyId ?? null,
      project_id: scope.projectId ?? null,
      created_at: Date.now(),
    };
    await this.#repo.insertBinding(row);
    this.#cache.clear();
    this.#log.info({ username, role, companyId: row.company_id, projectId: row.project_id }, 'role granted');
    return bindingView(row);
  }

  async revokeGrant(id: string): Promise<void> {
    if (!(await this.#repo.deleteBinding(id))) throw notFound(`role binding "${id}" not found`);
    this.#cache.clear();
  }

  async listBindings(spec: ListSpec): Promise<ListPage<BindingView>> {
    const page = await runList(this.#repo.database, this.#repo.bindingListQuery(), BINDING_LIST, spec);
    return { items: page.items.map(bindingView), total: page.total };
  }
}

function tokenView(row: Omit<TokenRow, 'token_hash'>): TokenView {
  return {
    id: row.id,
    name: row.name,
    role: row.role,
    username: row.username,
    createdAt: new Date(row.created_at).toISOString(),
    rotatedAt: new Date(row.rotated_at).toISOString(),
  };
}

function bindingView(row: BindingRow): BindingView {
  return {
    id: row.id,
    username: row.username,
    role: row.role,
    companyId: row.company_id,
    projectId: row.project_id,
    createdAt: new Date(row.created_at).toISOString(),
  };
}

function validateName(name: string): void {
  if (name.trim() === '' || name.length > 200) throw badRequest('name must have 1 to 200 characters');
}

function validateRole(role: string): asserts role is ManagerRole {
  if (!MANAGER_ROLES.includes(role as ManagerRole)) {
    throw badRequest(`role must be one of ${MANAGER_ROLES.join(', ')}, got "${role}"`);
  }
}
