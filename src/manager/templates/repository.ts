/** The templates module's tables: templates, their version history, parameter values by scope. */
import type { Transaction } from '../../kernel/db/index.js';
import { BoundRepository } from '../../kernel/db/bound-repository.js';
import { runList, type ListDefinition, type ListSpec } from '../../kernel/paging.js';

export interface TemplateTables {
  mgr_template: {
    id: string;
    friendly_name: string;
    description: string;
    version: number;
    document: string;
    sections: string;
    size: number;
    encrypted: number;
    /** The user's encryption key of the document's secrets, sealed (never in clear). */
    user_key: string | null;
    company_id: string | null;
    project_id: string | null;
    source_device_id: string | null;
    /** A composed template's parts (JSON `[{ id, friendlyName, version }]`); null otherwise. */
    parts: string | null;
    created_by: string;
    created_at: number;
    updated_by: string;
    updated_at: number;
  };
  mgr_template_version: {
    template_id: string;
    version: number;
    friendly_name: string;
    description: string;
    document: string;
    updated_by: string;
    updated_at: number;
  };
  mgr_template_vars: {
    template_id: string;
    scope_type: string;
    scope_id: string;
    parameters: string;
    updated_by: string;
    updated_at: number;
  };
  mgr_template_setting: { key: string; value: string };
}

export type TemplateRow = TemplateTables['mgr_template'];
export type VarsRow = TemplateTables['mgr_template_vars'];

/** The companies and projects a caller holds a role on (null: a global role, everything). */
export type Visible = { companyIds: string[]; projectIds: string[] } | null;

export const TEMPLATE_LIST: ListDefinition = {
  fields: {
    id: 't.id',
    friendlyName: 't.friendly_name',
    templateDescription: 't.description',
    version: { column: 't.version', type: 'integer' },
    createdBy: 't.created_by',
    updatedBy: 't.updated_by',
    projectId: 't.project_id',
    companyId: 't.company_id',
    createdAt: { column: 't.created_at', type: 'integer' },
    updatedAt: { column: 't.updated_at', type: 'integer' },
  },
  tiebreak: 't.id',
  defaultSort: [{ field: 'updatedAt', order: 'desc' }],
  maxLimit: 1000,
};

export class TemplateRepository extends BoundRepository<TemplateTables, TemplateRepository> {
  protected bind(trx: Transaction<TemplateTables>): TemplateRepository {
    return new TemplateRepository(this.database, trx);
  }

  /** A new template and its first version, in one transaction. */
  async insert(row: TemplateRow): Promise<void> {
    await this.transaction(async (repo) => {
      const trx = repo.db;
      await trx.insertInto('mgr_template').values(row).execute();
      await trx
        .insertInto('mgr_template_version')
        .values({
          template_id: row.id,
          version: row.version,
          friendly_name: row.friendly_name,
          description: row.description,
          document: row.document,
          updated_by: row.updated_by,
          updated_at: row.updated_at,
        })
        .execute();
    });
  }

  /**
   * Writes a new version of a template (the version one more than the stored one, history kept),
   * in one transaction; answers the new row, or undefined when the template is gone.
   */
  async update(
    id: string,
    change: (current: TemplateRow) => Omit<TemplateRow, 'id' | 'version' | 'created_by' | 'created_at'>,
  ): Promise<TemplateRow | undefined> {
    return this.transaction(async (repo) => {
      const trx = repo.db;
      let q = trx.selectFrom('mgr_template').selectAll().where('id', '=', id);
      if (this.database.dialect === 'postgres') q = q.forUpdate();
      const current = await q.executeTakeFirst();
      if (!current) return undefined;
      const next: TemplateRow = {
        ...current,
        ...change(current),
        id,
        version: current.version + 1,
        created_by: current.created_by,
        created_at: current.created_at,
      };
      await trx
        .updateTable('mgr_template')
        .set(next)
        .where('id', '=', id)
        .where('version', '=', current.version)
        .execute();
      await trx
        .insertInto('mgr_template_version')
        .values({
          template_id: id,
          version: next.version,
          friendly_name: next.friendly_name,
          description: next.description,
          document: next.document,
          updated_by: next.updated_by,
          updated_at: next.updated_at,
        })
        .execute();
      return next;
    });
  }

  get(id: string): Promise<TemplateRow | undefined> {
    return this.db.selectFrom('mgr_template').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Templates without their documents, paged: global ones, and those of what `visible` holds. */
  list(spec: ListSpec, visible: Visible) {
    let q = this.db
      .selectFrom('mgr_template as t')
      .select([
        't.id',
        't.friendly_name',
        't.description',
        't.version',
        't.sections',
        't.size',
        't.encrypted',
        't.company_id',
        't.project_id',
        't.source_device_id',
        't.parts',
        't.created_by',
        't.created_at',
        't.updated_by',
        't.updated_at',
      ]);
    if (visible) {
      const { companyIds, projectIds } = visible;
      q = q.where((eb) =>
        eb.or([
          eb.and([eb('t.company_id', 'is', null), eb('t.project_id', 'is', null)]),
          eb('t.company_id', 'in', companyIds.length ? companyIds : ['']),
          eb('t.project_id', 'in', projectIds.length ? projectIds : ['']),
        ]),
      );
    }
    return runList(this.database, q, TEMPLATE_LIST, spec);
  }

  async count(): Promise<number> {
    const r = await this.db
      .selectFrom('mgr_template')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  versions(id: string) {
    return this.db
      .selectFrom('mgr_template_version')
      .select(['version', 'friendly_name', 'description', 'updated_by', 'updated_at'])
      .where('template_id', '=', id)
      .orderBy('version', 'desc')
      .execute();
  }

  /** The document of one version of a template (history kept), or undefined. */
  async versionDocument(templateId: string, version: number): Promise<string | undefined> {
    const r = await this.db
      .selectFrom('mgr_template_version')
      .select('document')
      .where('template_id', '=', templateId)
      .where('version', '=', version)
      .executeTakeFirst();
    return r?.document;
  }

  vars(templateId: string): Promise<VarsRow[]> {
    return this.db
      .selectFrom('mgr_template_vars')
      .selectAll()
      .where('template_id', '=', templateId)
      .orderBy('scope_type')
      .orderBy('scope_id')
      .execute();
  }

  /** Sets the values of several scopes at once (an empty object removes a scope's values). */
  async setVars(rows: VarsRow[]): Promise<void> {
    await this.transaction(async (repo) => {
      const trx = repo.db;
      for (const r of rows) {
        await trx
          .deleteFrom('mgr_template_vars')
          .where('template_id', '=', r.template_id)
          .where('scope_type', '=', r.scope_type)
          .where('scope_id', '=', r.scope_id)
          .execute();
        if (r.parameters !== '{}') await trx.insertInto('mgr_template_vars').values(r).execute();
      }
    });
  }

  async setting(key: string): Promise<string | undefined> {
    return (
      await this.db
        .selectFrom('mgr_template_setting')
        .select('value')
        .where('key', '=', key)
        .executeTakeFirst()
    )?.value;
  }

  /** Sets a setting unless one is there (first writer wins); answers the stored value. */
  async settingOnce(key: string, value: string): Promise<string> {
    try {
      await this.db.insertInto('mgr_template_setting').values({ key, value }).execute();
    } catch {
      // another process wrote it first
    }
    return (await this.setting(key))!;
  }
}
