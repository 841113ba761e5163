/**
 * MQTT accounts of the namespace: who may connect (user name and hashed password, enabled or not)
 * and what each may publish and subscribe (rules). Every account and its compiled rules are held
 * in memory, so the broker checks a connection or a packet without a database round trip; every
 * change is written to the database first, then applied in memory and announced (`change`), so
 * that the broker can act on live connections at once. Changes made by another process (the CLI,
 * another UNS node on the same database) are noticed by `refresh()`, which the service runs
 * every second.
 */
import { EventEmitter } from 'node:events';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { Database } from '../../kernel/db/index.js';
import { AppError, badRequest, conflict, notFound, ERRORS } from '../../kernel/errors.js';
import {
  hashPassword,
  hashSecret,
  randomPassword,
  randomSecret,
  verifyPassword,
} from '../../kernel/crypto.js';
import { CompiledRules, PERMS, filterProblem, type Perm, type RuleSpec } from './rules.js';
import type { AccountRepository, AccountRow, RuleRow } from './repository.js';

export const AC_TYPES = ['General', 'Edge'] as const;
export type AcType = (typeof AC_TYPES)[number];
export const MIN_ACCOUNT_PASSWORD = 8;
export const MAX_RULES_PER_ACCOUNT = 10_000;

export interface Rule extends RuleSpec {
  id: string;
}

export interface Account {
  id: string;
  username: string;
  acType: string;
  enabled: boolean;
  rules: Rule[];
  createdAt: number;
  updatedAt: number;
}

interface Held {
  account: Account;
  passwordHash: string;
  compiled: CompiledRules;
}

export interface AccountChange {
  accountId: string;
  /** The account after the change; null when deleted. */
  account: Account | null;
  compiled: CompiledRules | null;
}

export interface ActivationView {
  id: string;
  path: string;
  description: string;
  expiresAt: number;
  usedAt: number | null;
  accountId: string | null;
  createdAt: number;
}

/** Passwords verified recently, so that reconnect storms do not each pay for scrypt. */
const VERIFIED_MAX = 10_000;

export class AccountService extends EventEmitter<{ change: [AccountChange] }> {
  readonly #repo: AccountRepository;
  readonly #log: Logger;
  readonly #byId = new Map<string, Held>();
  readonly #byName = new Map<string, string>();
  /** HMAC(user name, password) under a key of this process → the stored hash it was checked against. */
  readonly #verified = new Map<string, string>();
  readonly #verifiedKey = randomBytes(32);
  /**
   * Checks under way, one per credential and stored hash: a connect storm with one credential
   * runs scrypt once, not once per CONNECT (the others wait for that check). An entry lives only
   * while its check runs, so there are no more than CONNECTs waiting for an answer.
   */
  readonly #verifying = new Map<string, Promise<boolean>>();
  #version = -1;
  /** Bumped by every change made through this instance, so that a reload that raced one is dropped. */
  #epoch = 0;
  #refreshing: Promise<void> | undefined;

  constructor(repo: AccountRepository, logger: Logger) {
    super();
    this.#repo = repo;
    this.#log = logger;
  }

  /** Loads (or reloads) every account and rule; announces what changed since the last load. */
  async refresh(): Promise<void> {
    this.#refreshing ??= (async () => {
      try {
        const epoch = this.#epoch;
        const version = await this.#repo.version();
        if (version === this.#version) return;
        const [accounts, rules] = await Promise.all([this.#repo.allAccounts(), this.#repo.allRules()]);
        // A change of ours landed meanwhile: these rows may predate it; the next refresh reloads.
        if (epoch !== this.#epoch) return;
        this.#version = version;
        const rulesOf = new Map<string, Rule[]>();
        for (const r of rules) {
          let list = rulesOf.get(r.account_id);
          if (!list) rulesOf.set(r.account_id, (list = []));
          list.push({ id: r.id, path: r.path, perm: r.perm });
        }
        const seen = new Set<string>();
        for (const row of accounts) {
          seen.add(row.id);
          const next = toAccount(row, rulesOf.get(row.id) ?? []);
          const held = this.#byId.get(row.id);
          if (held && sameAccount(held.account, next) && held.passwordHash === row.password_hash) continue;
          this.#hold(next, row.password_hash, false);
        }
        for (const id of [...this.#byId.keys()]) if (!seen.has(id)) this.#drop(id, false);
      } finally {
        this.#refreshing = undefined;
      }
    })();
    return this.#refreshing;
  }

  #hold(account: Account, passwordHash: string, local = true): Held {
    if (local) this.#epoch++;
    const old = this.#byId.get(account.id);
    if (old && old.account.username !== account.username) this.#byName.delete(old.account.username);
    const held = { account, passwordHash, compiled: new CompiledRules(account.rules) };
    this.#byId.set(account.id, held);
    this.#byName.set(account.username, account.id);
    this.emit('change', { accountId: account.id, account, compiled: held.compiled });
    return held;
  }

  #drop(id: string, local = true): void {
    if (local) this.#epoch++;
    const held = this.#byId.get(id);
    if (!held) return;
    this.#byId.delete(id);
    this.#byName.delete(held.account.username);
    this.emit('change', { accountId: id, account: null, compiled: null });
  }

  // --- reads ---------------------------------------------------------------------------------

  get(id: string): Account | undefined {
    return this.#byId.get(id)?.account;
  }

  /** The account with exactly this user name. */
  byUsername(username: string): Account | undefined {
    const id = this.#byName.get(username);
    return id === undefined ? undefined : this.get(id);
  }

  require(id: string): Account {
    const account = this.get(id);
    if (!account) throw notFound(`account "${id}" not found`);
    return account;
  }

  compiled(id: string): CompiledRules | undefined {
    return this.#byId.get(id)?.compiled;
  }

  /** Accounts sorted by user name, optionally those whose user name contains `filter`. */
  list(options: { offset?: number; limit?: number; filter?: string | undefined } = {}): {
    items: Account[];
    total: number;
  } {
    let all = [...this.#byId.values()].map((h) => h.account);
    if (options.filter) {
      const f = options.filter.toLowerCase();
      all = all.filter((a) => a.username.toLowerCase().includes(f));
    }
    all.sort((a, b) => (a.username < b.username ? -1 : a.username > b.username ? 1 : 0));
    const offset = Math.max(0, options.offset ?? 0);
    const limit = Math.min(1000, Math.max(0, options.limit ?? all.length));
    return { items: all.slice(offset, offset + limit), total: all.length };
  }

  /**
   * The account a connection's credentials name, or null (unknown, wrong password, disabled).
   * A password verified before is recognised by a fast hash; scrypt runs once per credential.
   */
  async authenticate(username: string, password: string): Promise<Account | null> {
    let id = this.#byName.get(username);
    if (!id) {
      // Perhaps created a moment ago by another process (the CLI, another node).
      await this.refresh();
      id = this.#byName.get(username);
    }
    const held = id ? this.#byId.get(id) : undefined;
    if (!held) {
      await verifyPassword(password, DUMMY_HASH);
      return null;
    }
    const key = createHmac('sha256', this.#verifiedKey)
      .update(username)
      .update('\u0000')
      .update(password)
      .digest('base64url');
    if (this.#verified.get(key) !== held.passwordHash) {
      if (!(await this.#verifyOnce(key, password, held.passwordHash))) return null;
    }
    // Re-read: the account may have changed while the hash ran.
    const now = this.#byId.get(held.account.id);
    return now && now.account.enabled ? now.account : null;
  }

  /** scrypt for one credential against one stored hash, shared by the CONNECTs that ask meanwhile. */
  #verifyOnce(key: string, password: string, passwordHash: string): Promise<boolean> {
    const flight = `${key}$${passwordHash}`;
    let check = this.#verifying.get(flight);
    if (!check) {
      check = verifyPassword(password, passwordHash)
        .then((ok) => {
          if (ok) {
            if (this.#verified.size >= VERIFIED_MAX) this.#verified.clear();
            this.#verified.set(key, passwordHash);
          }
          return ok;
        })
        .finally(() => this.#verifying.delete(flight));
      this.#verifying.set(flight, check);
    }
    return check;
  }

  // --- changes -------------------------------------------------------------------------------

  async create(input: {
    username: string;
    password: string;
    acType?: string | undefined;
    enabled?: boolean | undefined;
    rules?: RuleSpec[] | undefined;
  }): Promise<Account> {
    const username = input.username;
    const problem = usernameProblem(username);
    if (problem) throw badRequest(problem);
    if (input.password.length < MIN_ACCOUNT_PASSWORD) {
      throw new AppError(
        ERRORS.weakPassword,
        `password must have at least ${MIN_ACCOUNT_PASSWORD} characters`,
      );
    }
    const acType = input.acType ?? 'General';
    if (!(AC_TYPES as readonly string[]).includes(acType)) {
      throw badRequest(`acType must be one of ${AC_TYPES.join(', ')}, got "${acType}"`);
    }
    const now = Date.now();
    const id = randomUUID();
    const rules = validateRules(input.rules ?? []).map((r) => ruleRow(id, r, now));
    const row: AccountRow = {
      id,
      username,
      password_hash: await hashPassword(input.password),
      ac_type: acType,
      enabled: input.enabled === false ? 0 : 1,
      created_at: now,
      updated_at: now,
    };
    try {
      await this.#repo.change((trx) => this.#repo.insertAccount(trx, row, rules));
    } catch (err) {
      if (Database.isUniqueViolation(err)) throw conflict(`an account named "${username}" already exists`);
      throw err;
    }
    this.#log.info({ accountId: id, username, acType }, 'account created');
    return this.#hold(toAccount(row, rules.map(ruleOf)), row.password_hash).account;
  }

  async remove(id: string): Promise<void> {
    this.require(id);
    await this.#repo.change((trx) => this.#repo.deleteAccount(trx, id));
    this.#log.info({ accountId: id }, 'account deleted');
    this.#drop(id);
  }

  async setEnabled(id: string, enabled: boolean): Promise<Account> {
    const held = this.#heldOrThrow(id);
    const now = Date.now();
    await this.#repo.change((trx) =>
      this.#repo.updateAccount(trx, id, { enabled: enabled ? 1 : 0, updated_at: now }),
    );
    this.#log.info({ accountId: id, enabled }, enabled ? 'account enabled' : 'account disabled');
    return this.#hold({ ...held.account, enabled, updatedAt: now }, held.passwordHash).account;
  }

  async setPassword(id: string, password: string): Promise<Account> {
    const held = this.#heldOrThrow(id);
    if (password.length < MIN_ACCOUNT_PASSWORD) {
      throw new AppError(
        ERRORS.weakPassword,
        `password must have at least ${MIN_ACCOUNT_PASSWORD} characters`,
      );
    }
    const now = Date.now();
    const hash = await hashPassword(password);
    await this.#repo.change((trx) =>
      this.#repo.updateAccount(trx, id, { password_hash: hash, updated_at: now }),
    );
    this.#log.info({ accountId: id }, 'account password changed');
    return this.#hold({ ...held.account, updatedAt: now }, hash).account;
  }

  async addRules(id: string, specs: RuleSpec[]): Promise<Account> {
    const held = this.#heldOrThrow(id);
    const valid = validateRules(specs);
    if (held.account.rules.length + valid.length > MAX_RULES_PER_ACCOUNT) {
      throw badRequest(`an account has at most ${MAX_RULES_PER_ACCOUNT} rules`);
    }
    const now = Date.now();
    const rows = valid.map((r) => ruleRow(id, r, now));
    await this.#repo.change(async (trx) => {
      await this.#repo.insertRules(trx, rows);
      await this.#repo.updateAccount(trx, id, { updated_at: now });
    });
    this.#log.info({ accountId: id, rules: valid }, 'account rules added');
    return this.#hold(
      { ...held.account, rules: [...held.account.rules, ...rows.map(ruleOf)], updatedAt: now },
      held.passwordHash,
    ).account;
  }

  async removeRules(id: string, ruleIds: string[]): Promise<Account> {
    const held = this.#heldOrThrow(id);
    const unknown = ruleIds.filter((r) => !held.account.rules.some((x) => x.id === r));
    if (unknown.length > 0)
      throw notFound(`account "${id}" has no rule ${unknown.map((u) => `"${u}"`).join(', ')}`);
    const now = Date.now();
    await this.#repo.change(async (trx) => {
      await this.#repo.deleteRules(trx, id, ruleIds);
      await this.#repo.updateAccount(trx, id, { updated_at: now });
    });
    this.#log.info({ accountId: id, ruleIds }, 'account rules removed');
    const drop = new Set(ruleIds);
    return this.#hold(
      { ...held.account, rules: held.account.rules.filter((r) => !drop.has(r.id)), updatedAt: now },
      held.passwordHash,
    ).account;
  }

  #heldOrThrow(id: string): Held {
    const held = this.#byId.get(id);
    if (!held) throw notFound(`account "${id}" not found`);
    return held;
  }

  // --- activation ----------------------------------------------------------------------------

  /**
   * An activation token for an edge service: redeemed once (before it expires) for an account
   * that may publish and subscribe under `path` (plus `extraRules`, e.g. its namespace's defaults).
   */
  async createActivation(input: {
    path: string;
    description?: string | undefined;
    ttlMinutes?: number | undefined;
  }): Promise<ActivationView & { token: string }> {
    const path = input.path.replace(/\/+$/, '');
    const problem = path === '' ? 'path cannot be empty' : filterProblem(path);
    if (problem || path.includes('+') || path.includes('#')) {
      throw badRequest(`path must be a topic prefix without wildcards${problem ? `: ${problem}` : ''}`);
    }
    const ttl = input.ttlMinutes ?? 24 * 60;
    if (!Number.isInteger(ttl) || ttl < 1 || ttl > 30 * 24 * 60)
      throw badRequest('ttlMinutes must be 1 to 43200');
    const token = randomSecret('mwa');
    const now = Date.now();
    const row = {
      id: randomUUID(),
      token_hash: hashSecret(token),
      path,
      description: input.description ?? '',
      expires_at: now + ttl * 60_000,
      used_at: null,
      account_id: null,
      created_at: now,
    };
    await this.#repo.insertActivation(row);
    this.#log.info({ id: row.id, path }, 'activation token created');
    return { ...activationView(row), token };
  }

  async listActivations(): Promise<ActivationView[]> {
    return (await this.#repo.listActivations()).map(activationView);
  }

  async revokeActivation(id: string): Promise<void> {
    if (!(await this.#repo.deleteActivation(id))) throw notFound(`activation "${id}" not found`);
  }

  /** Redeems an activation token: a new `Edge` account with a generated password, shown once. */
  async redeemActivation(
    token: string,
    extraRules: (path: string) => RuleSpec[],
  ): Promise<{ account: Account; password: string; path: string }> {
    const refused = () => new AppError(ERRORS.invalidActivation, 'invalid, used or expired activation token');
    const now = Date.now();
    const password = randomPassword();
    const passwordHash = await hashPassword(password);
    const id = randomUUID();
    const result = await this.#repo.change(async (trx) => {
      const act = await this.#repo.getActivation(trx, hashSecret(token));
      if (!act || act.used_at !== null || act.expires_at <= now) throw refused();
      if (!(await this.#repo.useActivation(trx, act.id, id, now))) throw refused();
      const specs = validateRules([{ path: `${act.path}/#`, perm: 'PubSub' }, ...extraRules(act.path)]);
      const row: AccountRow = {
        id,
        username: `edge-${act.path.replace(/[^A-Za-z0-9_.-]+/g, '-')}-${id.slice(0, 8)}`,
        password_hash: passwordHash,
        ac_type: 'Edge',
        enabled: 1,
        created_at: now,
        updated_at: now,
      };
      const rules = specs.map((r) => ruleRow(id, r, now));
      await this.#repo.insertAccount(trx, row, rules);
      return { row, rules, path: act.path };
    });
    this.#log.info({ accountId: id, path: result.path }, 'activation token redeemed');
    const account = this.#hold(toAccount(result.row, result.rules.map(ruleOf)), passwordHash).account;
    return { account, password, path: result.path };
  }

  /**
   * Activation of an edge (`/mqtt/activate`): redeems the token, then adds the rules of the
   * namespaces over the account's path (`defaultRules`) besides its own `<path>/#`.
   */
  async activate(
    token: string,
    defaultRules: (path: string) => Promise<RuleSpec[]>,
  ): Promise<{ account: Account; password: string; path: string }> {
    const redeemed = await this.redeemActivation(token, () => []);
    const extra = await defaultRules(redeemed.path);
    const account = extra.length > 0 ? await this.addRules(redeemed.account.id, extra) : redeemed.account;
    return { account, password: redeemed.password, path: redeemed.path };
  }
}

// A valid hash of a random password: checked for unknown user names so timing does not tell them.
const DUMMY_HASH = await hashPassword(randomSecret('dummy'));

/**
 * Why an MQTT account's user name is refused, or null. MQTT 3.1.1 forbids U+0000 and control
 * characters in its strings (1.5.3); `#` and `+` are refused too, since user names are often
 * substituted into topic filters (`%u` patterns) where they would act as wildcards.
 */
export function usernameProblem(username: string): string | null {
  if (username === '' || username.length > 200 || username.trim() !== username) {
    return 'username must have 1 to 200 characters and no surrounding spaces';
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f]/.test(username)) {
    return 'username cannot contain NUL or other control characters';
  }
  if (/[#+]/.test(username)) return 'username cannot contain the MQTT wildcards "#" or "+"';
  return null;
}

export function validateRules(specs: RuleSpec[]): RuleSpec[] {
  return specs.map((r) => {
    if (!PERMS.includes(r.perm)) throw badRequest(`perm must be one of ${PERMS.join(', ')}, got "${r.perm}"`);
    const problem = filterProblem(r.path);
    if (problem) throw badRequest(`invalid rule path "${r.path}": ${problem}`);
    return { path: r.path, perm: r.perm as Perm };
  });
}

function ruleRow(accountId: string, r: RuleSpec, now: number): RuleRow {
  return { id: randomUUID(), account_id: accountId, path: r.path, perm: r.perm, created_at: now };
}

const ruleOf = (r: RuleRow): Rule => ({ id: r.id, path: r.path, perm: r.perm });

function toAccount(row: AccountRow, rules: Rule[]): Account {
  return {
    id: row.id,
    username: row.username,
    acType: row.ac_type,
    enabled: row.enabled === 1,
    rules,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

function sameAccount(a: Account, b: Account): boolean {
  return (
    a.username === b.username &&
    a.acType === b.acType &&
    a.enabled === b.enabled &&
    a.rules.length === b.rules.length &&
    a.rules.every(
      (r, i) => r.id === b.rules[i]!.id && r.path === b.rules[i]!.path && r.perm === b.rules[i]!.perm,
    )
  );
}

function activationView(row: {
  id: string;
  path: string;
  description: string;
  expires_at: number;
  used_at: number | null;
  account_id: string | null;
  created_at: number;
}): ActivationView {
  return {
    id: row.id,
    path: row.path,
    description: row.description,
    expiresAt: Number(row.expires_at),
    usedAt: row.used_at === null ? null : Number(row.used_at),
    accountId: row.account_id,
    createdAt: Number(row.created_at),
  };
}
