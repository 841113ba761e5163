/**
 * Marketplace secrets (`/admin/v1/mpc-secrets/{key}`, a global admin): named values sealed at rest
 * and never shown back, referenced by application items as `{{mpc-secret:<key>}}` in any string of
 * a container (an environment variable, a registry password). An install checks that every key
 * it references is set; the subtask resolves them when it sends the container to the edge, so
 * neither the catalogue nor the task keeps a secret's value.
 */
import type { SecretBox } from '../../kernel/secret-box.js';
import { badRequest, conflict, forbidden, notFound } from '../../kernel/errors.js';
import { isGlobal, type Principal } from '../auth/index.js';
import type { MarketplaceRepository } from './repository.js';

/** Secrets kept at most, and the largest value. */
export const SECRET_LIMITS = { maxSecrets: 1000, maxValueBytes: 64 * 1024 };

const KEY = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;
const REF = /\{\{mpc-secret:([^}]*)\}\}/g;

function checkKey(key: string): string {
  if (!KEY.test(key))
    throw badRequest(`secret key "${key}" must be 1 to 100 letters, digits, dots, dashes or underscores`);
  return key;
}

/** Every `{{mpc-secret:<key>}}` in the strings of `value`. */
export function secretRefs(value: unknown, out = new Set<string>()): Set<string> {
  if (typeof value === 'string') for (const m of value.matchAll(REF)) out.add(m[1]!);
  else if (Array.isArray(value)) for (const v of value) secretRefs(v, out);
  else if (value && typeof value === 'object') for (const v of Object.values(value)) secretRefs(v, out);
  return out;
}

/** `value` with every reference replaced by the secret's value (`lookup` answers it). */
export function resolveRefs(value: unknown, lookup: Map<string, string>): unknown {
  if (typeof value === 'string') return value.replace(REF, (_m, k: string) => lookup.get(k) ?? '');
  if (Array.isArray(value)) return value.map((v) => resolveRefs(v, lookup));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolveRefs(v, lookup)]));
  return value;
}

export class MarketplaceSecrets {
  readonly #repo: MarketplaceRepository;
  readonly #box: SecretBox;

  constructor(repo: MarketplaceRepository, box: SecretBox) {
    this.#repo = repo;
    this.#box = box;
  }

  #requireAdmin(principal: Principal): void {
    if (!isGlobal(principal, 'admin')) throw forbidden('marketplace secrets need a global admin token');
  }

  async get(principal: Principal, key: string) {
    this.#requireAdmin(principal);
    const r = await this.#repo.secret(checkKey(key));
    if (!r) throw notFound(`marketplace secret "${key}" not found`);
    return {
      key: r.key,
      set: true,
      updatedBy: r.updated_by,
      updatedAt: new Date(Number(r.updated_at)).toISOString(),
    };
  }

  async set(principal: Principal, key: string, value: string) {
    this.#requireAdmin(principal);
    checkKey(key);
    if (value === '') throw badRequest('value must not be empty');
    if (Buffer.byteLength(value) > SECRET_LIMITS.maxValueBytes)
      throw badRequest(`value has at most ${SECRET_LIMITS.maxValueBytes} bytes`);
    const ok = await this.#repo.setSecret(
      { key, value: this.#box.seal(value), updated_by: principal.subject, updated_at: Date.now() },
      SECRET_LIMITS.maxSecrets,
    );
    if (!ok)
      throw conflict(`at most ${SECRET_LIMITS.maxSecrets} marketplace secrets are kept; delete some first`);
    return this.get(principal, key);
  }

  async remove(principal: Principal, key: string): Promise<void> {
    this.#requireAdmin(principal);
    if (!(await this.#repo.deleteSecret(checkKey(key))))
      throw notFound(`marketplace secret "${key}" not found`);
  }

  /** Throws 400 naming the keys `value` references that are not set. */
  async requireSet(value: unknown): Promise<void> {
    const missing: string[] = [];
    for (const k of secretRefs(value)) if (!KEY.test(k) || !(await this.#repo.secret(k))) missing.push(k);
    if (missing.length > 0)
      throw badRequest(
        `marketplace secret(s) not set: ${missing.join(', ')} (a global admin sets them at /admin/v1/mpc-secrets/{key})`,
      );
  }

  /** `value` with its references resolved (a missing key fails the subtask). */
  async resolve(value: unknown): Promise<unknown> {
    const lookup = new Map<string, string>();
    for (const k of secretRefs(value)) {
      const r = KEY.test(k) ? await this.#repo.secret(k) : undefined;
      if (!r) throw badRequest(`marketplace secret "${k}" is not set`);
      lookup.set(k, this.#box.open(r.value));
    }
    return lookup.size === 0 ? value : resolveRefs(value, lookup);
  }
}
