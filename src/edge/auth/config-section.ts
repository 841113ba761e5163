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
import { conflict } from '../../kernel/errors.js';
import type {
  ApplyMode,
  ConfigSection,
  SecretValue,
  SectionApplyContext,
  SectionDiff,
  SectionIssue,
} from '../../kernel/service/index.js';
import { checkObject, diffByKey, join, mergeByKey } from '../../kernel/service/section-shape.js';
import type { AuthTables } from './repository.js';
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
  readonly #db: Kysely<AuthTables>;
  readonly #service: AuthService;

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- pending (issue 24, another's work in progress): the section queries its tables through `db` until its SQL is in AuthRepository
  constructor(db: Kysely<any>, service: AuthService) {
    this.#db = db as Kysely<AuthTables>;
    this.#service = service;
  }

  async export(): Promise<AuthSection> {
    return exportIn(this.#db);
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
    const target = ctx.mode === 'merge-apply' ? this.merge(await exportIn(trx), next).merged : next;
    const rows = await trx.selectFrom('auth_api_client').selectAll().execute();
    const cur = new Map(rows.map((r) => [r.client_id, r]));
    const touched: string[] = [];
    const now = Date.now();
    for (const [i, c] of target.apiClients.entries()) {
      const was = cur.get(c.client_id);
      cur.delete(c.client_id);
      const role = c.role as AuthTables['auth_api_client']['role'];
      if (!was) {
        if (!c.secret) {
          const message = `section auth: apiClients[${i}]: api client "${c.client_id}" has no secret in the template (exported without an encryptionKey) and does not exist on this edge`;
          if (ctx.failFast) throw conflict(message);
          ctx.fail(`auth: apiClients[${i}] (${c.client_id})`, message);
          continue;
        }
        await trx
          .insertInto('auth_api_client')
          .values({
            client_id: c.client_id,
            name: c.name,
            role,
            secret_hash: c.secret.$secret,
            tokens_valid_after: 0,
            created_at: now,
            updated_at: now,
          })
          .execute();
        continue;
      }
      const secret = c.secret?.$secret ?? was.secret_hash;
      if (was.name === c.name && was.role === role && was.secret_hash === secret) continue;
      await trx
        .updateTable('auth_api_client')
        .set({
          name: c.name,
          role,
          secret_hash: secret,
          updated_at: now,
          // A new secret or role: tokens issued before stop working.
          ...(secret !== was.secret_hash || role !== was.role ? { tokens_valid_after: now } : {}),
        })
        .where('client_id', '=', c.client_id)
        .execute();
      touched.push(c.client_id);
    }
    if (ctx.mode === 'use' && cur.size > 0) {
      const gone = [...cur.keys()];
      await trx.deleteFrom('auth_api_client').where('client_id', 'in', gone).execute();
      touched.push(...gone);
    }
    ctx.afterCommit(() => {
      for (const id of touched) this.#service.forgetClient(id);
    });
  }
}

async function exportIn(db: Kysely<AuthTables>): Promise<AuthSection> {
  const rows = await db.selectFrom('auth_api_client').selectAll().orderBy('client_id').execute();
  return {
    apiClients: rows.map((r) => ({
      client_id: r.client_id,
      name: r.name,
      role: r.role,
      secret: { $secret: r.secret_hash },
    })),
  };
}
