/** The marketplace's tables: items, their versions, installs and usage events. */
import type { Transaction } from '../../kernel/db/index.js';
import { BoundRepository } from '../../kernel/db/bound-repository.js';
import { runList, type ListDefinition, type ListSpec } from '../../kernel/paging.js';

export interface MarketplaceTables {
  mgr_mp_item: {
    id: string;
    name: string;
    kind: string;
    description: string;
    /** JSON array of category names. */
    categories: string;
    /** Lower-case name, description and categories: what `q` searches. */
    search: string;
    latest_version: string;
    latest_seq: number;
    versions: number;
    installs: number;
    imports: number;
    created_by: string;
    created_at: number;
    updated_by: string;
    updated_at: number;
  };
  mgr_mp_version: {
    item_id: string;
    version: string;
    seq: number;
    changelog: string;
    content: string;
    size: number;
    published_by: string;
    published_at: number;
  };
  mgr_mp_install: {
    id: string;
    item_id: string;
    version: string;
    target_type: string;
    target_id: string;
    company_id: string | null;
    project_id: string | null;
    template_id: string | null;
    task_id: string;
    created_by: string;
    created_at: number;
  };
  mgr_mp_secret: { key: string; value: string; updated_by: string; updated_at: number };
  mgr_mp_event: {
    event_id: string;
    item_id: string;
    version: string;
    action: string;
    reporter: string;
    received_at: number;
  };
}

export type ItemRow = MarketplaceTables['mgr_mp_item'];
export type VersionRow = MarketplaceTables['mgr_mp_version'];
export type InstallRow = MarketplaceTables['mgr_mp_install'];
export type EventRow = MarketplaceTables['mgr_mp_event'];

export const ITEM_LIST: ListDefinition = {
  fields: {
    id: 'i.id',
    name: 'i.name',
    kind: 'i.kind',
    description: 'i.description',
    latestVersion: { column: 'i.latest_version', sortable: false },
    installs: { column: 'i.installs', type: 'integer' },
    imports: { column: 'i.imports', type: 'integer' },
    createdBy: 'i.created_by',
    createdAt: { column: 'i.created_at', type: 'integer' },
    updatedAt: { column: 'i.updated_at', type: 'integer' },
    // Reached through `q` and `category` (see the routes), not shown on the wire.
    search: { column: 'i.search', sortable: false },
    categories: { column: 'i.categories', sortable: false },
  },
  tiebreak: 'i.id',
  defaultSort: [{ field: 'name', order: 'asc' }],
  maxLimit: 1000,
};

export const VERSION_LIST: ListDefinition = {
  fields: {
    version: { column: 'v.seq', type: 'integer', filterable: false },
    publishedBy: 'v.published_by',
    publishedAt: { column: 'v.published_at', type: 'integer' },
  },
  tiebreak: 'v.version',
  defaultSort: [{ field: 'version', order: 'desc' }],
  maxLimit: 1000,
};

export const INSTALL_LIST: ListDefinition = {
  fields: {
    version: 'n.version',
    targetType: 'n.target_type',
    targetId: 'n.target_id',
    projectId: 'n.project_id',
    taskId: 'n.task_id',
    createdBy: 'n.created_by',
    createdAt: { column: 'n.created_at', type: 'integer' },
  },
  tiebreak: 'n.id',
  defaultSort: [{ field: 'createdAt', order: 'desc' }],
  maxLimit: 1000,
};

export class MarketplaceRepository extends BoundRepository<MarketplaceTables, MarketplaceRepository> {
  protected bind(trx: Transaction<MarketplaceTables>): MarketplaceRepository {
    return new MarketplaceRepository(this.database, trx);
  }

  async countItems(): Promise<number> {
    const r = await this.db
      .selectFrom('mgr_mp_item')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  item(id: string): Promise<ItemRow | undefined> {
    return this.db.selectFrom('mgr_mp_item').selectAll().where('id', '=', id).executeTakeFirst();
  }

  itemByName(name: string): Promise<ItemRow | undefined> {
    return this.db.selectFrom('mgr_mp_item').selectAll().where('name', '=', name).executeTakeFirst();
  }

  /** Items paged; `spec` may filter on `search` and `categories` (see ITEM_LIST). */
  listItems(spec: ListSpec) {
    const q = this.db.selectFrom('mgr_mp_item as i').selectAll('i');
    return runList(this.database, q, ITEM_LIST, spec);
  }

  /** Every category with how many items list it (categories are few per item). */
  async categoryCounts(): Promise<Map<string, number>> {
    const rows = await this.db.selectFrom('mgr_mp_item').select(['categories']).execute();
    const out = new Map<string, number>();
    for (const r of rows)
      for (const c of JSON.parse(r.categories) as string[]) out.set(c, (out.get(c) ?? 0) + 1);
    return out;
  }

  async insertItem(item: ItemRow, version: VersionRow): Promise<void> {
    await this.transaction(async (repo) => {
      await repo.db.insertInto('mgr_mp_item').values(item).execute();
      await repo.db.insertInto('mgr_mp_version').values(version).execute();
    });
  }

  async updateItem(id: string, change: Partial<Omit<ItemRow, 'id'>>): Promise<void> {
    await this.db.updateTable('mgr_mp_item').set(change).where('id', '=', id).execute();
  }

  /** A new version, and the item's newest version and count moved with it, in one transaction. */
  async insertVersion(version: VersionRow, item: Partial<Omit<ItemRow, 'id'>>): Promise<void> {
    await this.transaction(async (repo) => {
      await repo.db.insertInto('mgr_mp_version').values(version).execute();
      await repo.db.updateTable('mgr_mp_item').set(item).where('id', '=', version.item_id).execute();
    });
  }

  async deleteItem(id: string): Promise<void> {
    await this.transaction(async (repo) => {
      await repo.db.deleteFrom('mgr_mp_version').where('item_id', '=', id).execute();
      await repo.db.deleteFrom('mgr_mp_install').where('item_id', '=', id).execute();
      await repo.db.deleteFrom('mgr_mp_item').where('id', '=', id).execute();
    });
  }

  version(itemId: string, version: string): Promise<VersionRow | undefined> {
    return this.db
      .selectFrom('mgr_mp_version')
      .selectAll()
      .where('item_id', '=', itemId)
      .where('version', '=', version)
      .executeTakeFirst();
  }

  /** Versions without their content, paged. */
  listVersions(itemId: string, spec: ListSpec) {
    const q = this.db
      .selectFrom('mgr_mp_version as v')
      .select([
        'v.item_id',
        'v.version',
        'v.seq',
        'v.changelog',
        'v.size',
        'v.published_by',
        'v.published_at',
      ])
      .where('v.item_id', '=', itemId);
    return runList(this.database, q, VERSION_LIST, spec);
  }

  async insertInstall(row: InstallRow): Promise<void> {
    await this.transaction(async (repo) => {
      await repo.db.insertInto('mgr_mp_install').values(row).execute();
      const item = await repo.item(row.item_id);
      if (item) await repo.updateItem(row.item_id, { installs: item.installs + 1 });
    });
  }

  /** The template an earlier install of the same version on the same project made, if any. */
  async templateOf(itemId: string, version: string, projectId: string): Promise<string | undefined> {
    const r = await this.db
      .selectFrom('mgr_mp_install')
      .select('template_id')
      .where('item_id', '=', itemId)
      .where('version', '=', version)
      .where('project_id', '=', projectId)
      .where('template_id', 'is not', null)
      .orderBy('created_at', 'desc')
      .executeTakeFirst();
    return r?.template_id ?? undefined;
  }

  /** Installs of an item paged; `visible` restricts them to projects (null: every one). */
  listInstalls(
    itemId: string,
    spec: ListSpec,
    visible: { projectIds: string[]; companyIds: string[] } | null,
  ) {
    let q = this.db.selectFrom('mgr_mp_install as n').selectAll('n').where('n.item_id', '=', itemId);
    if (visible) {
      const { projectIds, companyIds } = visible;
      q = q.where((eb) =>
        eb.or([
          eb('n.project_id', 'in', projectIds.length ? projectIds : ['']),
          eb('n.company_id', 'in', companyIds.length ? companyIds : ['']),
        ]),
      );
    }
    return runList(this.database, q, INSTALL_LIST, spec);
  }

  /**
   * Records usage events (import, update, delete) reported by another manager: each event once
   * (by id), counted on its item; the oldest events beyond `keep` are forgotten (the counts stay).
   * Answers how many were new.
   */
  async recordEvents(events: EventRow[], keep: number): Promise<number> {
    return this.transaction(async (repo) => {
      let fresh = 0;
      for (const e of events) {
        const seen = await repo.db
          .selectFrom('mgr_mp_event')
          .select('event_id')
          .where('event_id', '=', e.event_id)
          .executeTakeFirst();
        if (seen) continue;
        await repo.db.insertInto('mgr_mp_event').values(e).execute();
        fresh++;
        const item = await repo.item(e.item_id);
        if (item && e.action === 'IMPORT') await repo.updateItem(item.id, { imports: item.imports + 1 });
      }
      const n = Number(
        (
          await repo.db
            .selectFrom('mgr_mp_event')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
      if (n > keep) {
        const cut = await repo.db
          .selectFrom('mgr_mp_event')
          .select('received_at')
          .orderBy('received_at', 'desc')
          .offset(keep)
          .limit(1)
          .executeTakeFirst();
        if (cut)
          await repo.db.deleteFrom('mgr_mp_event').where('received_at', '<=', cut.received_at).execute();
      }
      return fresh;
    });
  }

  /** Usage events of an item, newest first (at most `limit`). */
  events(itemId: string, limit: number): Promise<EventRow[]> {
    return this.db
      .selectFrom('mgr_mp_event')
      .selectAll()
      .where('item_id', '=', itemId)
      .orderBy('received_at', 'desc')
      .limit(limit)
      .execute();
  }

  // --- secrets ----------------------------------------------------------------------------------

  secret(key: string): Promise<MarketplaceTables['mgr_mp_secret'] | undefined> {
    return this.db.selectFrom('mgr_mp_secret').selectAll().where('key', '=', key).executeTakeFirst();
  }

  /** Sets a secret, refusing a new key beyond `max` keys (in one transaction). Answers false when full. */
  async setSecret(row: MarketplaceTables['mgr_mp_secret'], max: number): Promise<boolean> {
    return this.transaction(async (repo) => {
      const exists = await repo.secret(row.key);
      if (exists) {
        await repo.db.updateTable('mgr_mp_secret').set(row).where('key', '=', row.key).execute();
        return true;
      }
      const n = Number(
        (
          await repo.db
            .selectFrom('mgr_mp_secret')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
      if (n >= max) return false;
      await repo.db.insertInto('mgr_mp_secret').values(row).execute();
      return true;
    });
  }

  async deleteSecret(key: string): Promise<boolean> {
    const r = await this.db.deleteFrom('mgr_mp_secret').where('key', '=', key).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }
}
