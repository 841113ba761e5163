/**
 * The identity module's section of a configuration template: API clients.
 *
 *     { "apiClients": [ { "client_id", "name", "role", "secret"?: { "$secret": "<hash>" } } ] }
 *
 * Keyed by `client_id`. The secret is the stored hash of the client secret (never the secret
 * itself, which is shown once at creation): a template carries it only encrypted, so that the same
 * client credentials work on every edge the template is applied to. A client the edge does not
 * have cannot be created without it. The first-run admin user and the API tokens are not part of
 * the section.
 */
import type { Kysely } from '../../kernel/db/index.js';
import type {
  ApplyMode,
  ConfigSection,
  SecretValue,
  SectionApplyContext,
  SectionDiff,
  SectionIssue,
} from '../../kernel/service/index.js';
import { applyKeyed, missingSecret } from '../../kernel/service/keyed-section.js';
import { checkObject, diffByKey, join, mergeByKey } from '../../kernel/service/section-shape.js';
import type { ApiClientRow, AuthRepository, AuthTables } from './repository.js';
import type { AuthService } from './service.js';
import { ROLES } from './service.js';

export interface TemplateApiClient {
  client_id: string;
  name: string;
  role: string;
  secret?: SecretValue;
}

export interface AuthSection {
  apiClients: TemplateApiClient[];
}

const FIELDS = { client_id: 'string', name: 'string', role: 'string', 'secret?': 'secret' } as const;

const same = (a: TemplateApiClient, b: TemplateApiClient) =>
  a.name === b.name &&
  a.role === b.role &&
  (b.secret === undefined || a.secret?.$secret === b.secret.$secret);

export class AuthConfigSection implements ConfigSection<AuthSection> {
  readonly name = 'auth';
  readonly #repo: AuthRepository;
  readonly #service: AuthService;

  constructor(repo: AuthRepository, service: AuthService) {
    this.#repo = repo;
    this.#service = service;
  }

  async export(): Promise<AuthSection> {
    return { apiClients: (await this.#repo.allClients()).map(clientOut) };
  }

  validate(doc: unknown): SectionIssue[] {
    const issues: SectionIssue[] = [];
    if (!checkObject(issues, '', doc, { apiClients: 'array' })) return issues;
    const seen = new Map<string, number>();
    for (const [i, c] of (doc as AuthSection).apiClients.entries()) {
      const path = join('apiClients', i);
      if (!checkObject(issues, path, c, FIELDS)) continue;
      if (c.client_id.trim() === '' || c.client_id.length > 200)
        issues.push({ path: join(path, 'client_id'), message: 'must have 1 to 200 characters' });
      if (c.name.trim() === '' || c.name.length > 200)
        issues.push({ path: join(path, 'name'), message: 'must have 1 to 200 characters' });
      if (!(ROLES as readonly string[]).includes(c.role))
        issues.push({ path: join(path, 'role'), message: `must be one of ${ROLES.join(', ')}` });
      const dup = seen.get(c.client_id);
      if (dup !== undefined)
        issues.push({
          path: join(path, 'client_id'),
          message: `client "${c.client_id}" is given twice (apiClients[${dup}])`,
        });
      seen.set(c.client_id, i);
    }
    return issues;
  }

  diff(current: AuthSection, next: AuthSection, mode: ApplyMode): SectionDiff {
    const target = mode === 'merge-apply' ? this.merge(current, next).merged : next;
    return diffByKey(current.apiClients, target.apiClients, (c) => c.client_id, same, mode);
  }

  merge(current: AuthSection, template: AuthSection): { merged: AuthSection; overwrites: string[] } {
    const { merged, overwrites } = mergeByKey(
      current.apiClients,
      template.apiClients,
      (c) => c.client_id,
      'secret',
    );
    return { merged: { apiClients: merged }, overwrites };
  }

  async apply(next: AuthSection, ctx: SectionApplyContext): Promise<void> {
    const trx = ctx.trx as unknown as Kysely<AuthTables>;
    const now = Date.now();
    /** The row `c` makes of `was` (a new secret or role: tokens issued before stop working). */
    const rowOf = (c: TemplateApiClient, was: ApiClientRow): ApiClientRow => {
      const secret = c.secret?.$secret ?? was.secret_hash;
      const role = c.role as ApiClientRow['role'];
      const revoke = secret !== was.secret_hash || role !== was.role;
      return {
        ...was,
        name: c.name,
        role,
        secret_hash: secret,
        tokens_valid_after: revoke ? now : was.tokens_valid_after,
      };
    };
    const done = await applyKeyed(await this.#repo.allClients(trx), next.apiClients, ctx, {
      section: 'auth',
      path: 'apiClients',
      key: (c) => c.client_id,
      rowKey: (r) => r.client_id,
      same: (was, c) => same(clientOut(was), c),
      merge: (was, c) => mergeByKey([clientOut(was)], [c], (x) => x.client_id, 'secret').merged[0]!,
      create: async (c) => {
        if (!c.secret) throw missingSecret(`api client "${c.client_id}"`, 'secret');
        const role = c.role as ApiClientRow['role'];
        const row = { client_id: c.client_id, name: c.name, role, secret_hash: c.secret.$secret };
        await this.#repo.insertClientIn(
          { ...row, tokens_valid_after: 0, created_at: now, updated_at: now },
          trx,
        );
      },
      update: (c, was) => this.#repo.replaceClient({ ...rowOf(c, was), updated_at: now }, trx),
      remove: (rows) =>
        this.#repo.deleteClients(
          rows.map((r) => r.client_id),
          trx,
        ),
    });
    const touched = [...done.updated.map((u) => u.row.client_id), ...done.removed.map((r) => r.client_id)];
    ctx.afterCommit(() => {
      for (const id of touched) this.#service.forgetClient(id);
    });
  }
}

function clientOut(r: ApiClientRow): TemplateApiClient {
  return { client_id: r.client_id, name: r.name, role: r.role, secret: { $secret: r.secret_hash } };
}
