/** The asset hub module's tables: the hub's settings, imports by company, usage events to deliver. */
import type { Transaction } from '../../kernel/db/index.js';
import { BoundRepository } from '../../kernel/db/bound-repository.js';
import { runList, type ListDefinition, type ListSpec } from '../../kernel/paging.js';

export interface AssetHubTables {
  mgr_hub_setting: { key: string; value: string };
  mgr_hub_import: {
    id: string;
    company_id: string;
    hub_url: string;
    item_id: string;
    item_name: string;
    kind: string;
    version: string;
    latest_version: string | null;
    content: string;
    size: number;
    target_ref: string | null;
    imported_by: string;
    imported_at: number;
    updated_by: string;
    updated_at: number;
    synced_at: number | null;
  };
  mgr_hub_telemetry: {
    id: string;
    item_id: string;
    version: string;
    action: string;
    status: string;
    attempts: number;
    last_error: string | null;
    next_at: number;
    created_at: number;
  };
}

export type ImportRow = AssetHubTables['mgr_hub_import'];
export type TelemetryRow = AssetHubTables['mgr_hub_telemetry'];

export const IMPORT_LIST: ListDefinition = {
  fields: {
    itemId: 'h.item_id',
    itemName: 'h.item_name',
    kind: 'h.kind',
    version: { column: 'h.version', sortable: false },
    importedBy: 'h.imported_by',
    importedAt: { column: 'h.imported_at', type: 'integer' },
    updatedAt: { column: 'h.updated_at', type: 'integer' },
  },
  tiebreak: 'h.id',
  defaultSort: [{ field: 'itemName', order: 'asc' }],
  maxLimit: 1000,
};

export class AssetHubRepository extends BoundRepository<AssetHubTables, AssetHubRepository> {
  protected bind(trx: Transaction<AssetHubTables>): AssetHubRepository {
    return new AssetHubRepository(this.database, trx);
  }

  async setting(key: string): Promise<string | undefined> {
    return (
      await this.db.selectFrom('mgr_hub_setting').select('value').where('key', '=', key).executeTakeFirst()
    )?.value;
  }

  async setSetting(key: string, value: string): Promise<void> {
    await this.transaction(async (repo) => {
      await repo.db.deleteFrom('mgr_hub_setting').where('key', '=', key).execute();
      await repo.db.insertInto('mgr_hub_setting').values({ key, value }).execute();
    });
  }

  /** Removes settings; answers how many there were. */
  async deleteSettings(keys: string[]): Promise<number> {
    const r = await this.db.deleteFrom('mgr_hub_setting').where('key', 'in', keys).executeTakeFirst();
    return Number(r.numDeletedRows);
  }

  async countImports(): Promise<number> {
    const r = await this.db
      .selectFrom('mgr_hub_import')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  importById(companyId: string, id: string): Promise<ImportRow | undefined> {
    return this.db
      .selectFrom('mgr_hub_import')
      .selectAll()
      .where('company_id', '=', companyId)
      .where('id', '=', id)
      .executeTakeFirst();
  }

  importOfItem(companyId: string, itemId: string): Promise<ImportRow | undefined> {
    return this.db
      .selectFrom('mgr_hub_import')
      .selectAll()
      .where('company_id', '=', companyId)
      .where('item_id', '=', itemId)
      .executeTakeFirst();
  }

  async insertImport(row: ImportRow): Promise<void> {
    await this.db.insertInto('mgr_hub_import').values(row).execute();
  }

  async updateImport(id: string, change: Partial<Omit<ImportRow, 'id'>>): Promise<void> {
    await this.db.updateTable('mgr_hub_import').set(change).where('id', '=', id).execute();
  }

  async deleteImport(id: string): Promise<void> {
    await this.db.deleteFrom('mgr_hub_import').where('id', '=', id).execute();
  }

  /** A company's imports without their content, paged. */
  listImports(companyId: string, spec: ListSpec) {
    const q = this.db
      .selectFrom('mgr_hub_import as h')
      .select([
        'h.id',
        'h.company_id',
        'h.hub_url',
        'h.item_id',
        'h.item_name',
        'h.kind',
        'h.version',
        'h.latest_version',
        'h.size',
        'h.target_ref',
        'h.imported_by',
        'h.imported_at',
        'h.updated_by',
        'h.updated_at',
        'h.synced_at',
      ])
      .where('h.company_id', '=', companyId);
    return runList(this.database, q, IMPORT_LIST, spec);
  }

  /** Every import of a company (at most `max`), for a sync. */
  allImports(companyId: string, max: number): Promise<ImportRow[]> {
    return this.db
      .selectFrom('mgr_hub_import')
      .selectAll()
      .where('company_id', '=', companyId)
      .orderBy('item_name')
      .limit(max)
      .execute();
  }

  // --- telemetry ----------------------------------------------------------------------------------

  /** Queues an event; beyond `max` waiting events the oldest (parked first) are dropped. Answers the dropped count. */
  async enqueueEvent(row: TelemetryRow, max: number): Promise<number> {
    return this.transaction(async (repo) => {
      const n = Number(
        (
          await repo.db
            .selectFrom('mgr_hub_telemetry')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
      let dropped = 0;
      if (n >= max) {
        const victims = await repo.db
          .selectFrom('mgr_hub_telemetry')
          .select('id')
          .orderBy('status', 'asc') // PARKED before PENDING
          .orderBy('created_at', 'asc')
          .limit(n - max + 1)
          .execute();
        const ids = victims.map((v) => v.id);
        if (ids.length > 0) await repo.db.deleteFrom('mgr_hub_telemetry').where('id', 'in', ids).execute();
        dropped = ids.length;
      }
      await repo.db.insertInto('mgr_hub_telemetry').values(row).execute();
      return dropped;
    });
  }

  dueEvents(now: number, limit: number): Promise<TelemetryRow[]> {
    return this.db
      .selectFrom('mgr_hub_telemetry')
      .selectAll()
      .where('status', '=', 'PENDING')
      .where('next_at', '<=', now)
      .orderBy('created_at')
      .limit(limit)
      .execute();
  }

  async deleteEvents(ids: string[]): Promise<void> {
    if (ids.length > 0) await this.db.deleteFrom('mgr_hub_telemetry').where('id', 'in', ids).execute();
  }

  async failEvents(rows: TelemetryRow[], error: string, park: (r: TelemetryRow) => boolean, nextAt: number) {
    await this.transaction(async (repo) => {
      for (const r of rows) {
        await repo.db
          .updateTable('mgr_hub_telemetry')
          .set({
            attempts: r.attempts + 1,
            last_error: error.slice(0, 500),
            status: park(r) ? 'PARKED' : 'PENDING',
            next_at: nextAt,
          })
          .where('id', '=', r.id)
          .execute();
      }
    });
  }

  /** Parked events back to waiting, due now; answers how many. */
  async unpark(now: number): Promise<number> {
    const r = await this.db
      .updateTable('mgr_hub_telemetry')
      .set({ status: 'PENDING', attempts: 0, next_at: now })
      .where('status', '=', 'PARKED')
      .executeTakeFirst();
    return Number(r.numUpdatedRows);
  }

  async eventCounts(): Promise<Record<string, number>> {
    const rows = await this.db
      .selectFrom('mgr_hub_telemetry')
      .select(['status', (eb) => eb.fn.countAll().as('n')])
      .groupBy('status')
      .execute();
    return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
  }

  parkedEvents(limit: number): Promise<TelemetryRow[]> {
    return this.db
      .selectFrom('mgr_hub_telemetry')
      .selectAll()
      .where('status', '=', 'PARKED')
      .orderBy('created_at')
      .limit(limit)
      .execute();
  }
}
