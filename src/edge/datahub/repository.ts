/** The DataHub's table of access keys, through the kernel's query layer. No other module reads it. */
import { typed, type Db, type Kysely } from '../../kernel/db/index.js';

export interface DataHubTables {
  datahub_access_key: {
    id: string;
    name: string;
    key_hash: string;
    key_prefix: string;
    /** JSON array of subject patterns; NULL: any subject. */
    publish: string | null;
    subscribe: string | null;
    created_at: number;
  };
}

export type AccessKeyRow = DataHubTables['datahub_access_key'];

export class DataHubRepository {
  readonly db: Kysely<DataHubTables>;

  constructor(db: Db) {
    this.db = typed<DataHubTables>(db);
  }

  async insertKey(row: AccessKeyRow): Promise<void> {
    await this.db.insertInto('datahub_access_key').values(row).execute();
  }

  getKey(id: string): Promise<AccessKeyRow | undefined> {
    return this.db.selectFrom('datahub_access_key').selectAll().where('id', '=', id).executeTakeFirst();
  }

  getKeyByHash(hash: string): Promise<AccessKeyRow | undefined> {
    return this.db
      .selectFrom('datahub_access_key')
      .selectAll()
      .where('key_hash', '=', hash)
      .executeTakeFirst();
  }

  /** The base query of the key list, for the kernel's paging helpers. */
  keyListQuery() {
    return this.db
      .selectFrom('datahub_access_key')
      .select(['id', 'name', 'key_prefix', 'publish', 'subscribe', 'created_at']);
  }

  async keyIds(): Promise<Set<string>> {
    const rows = await this.db.selectFrom('datahub_access_key').select('id').execute();
    return new Set(rows.map((r) => r.id));
  }

  // --- the configuration section's (through `db`: the apply's transaction)

  /** Every access key, by ID. */
  allKeys(db: Kysely<DataHubTables> = this.db): Promise<AccessKeyRow[]> {
    return db.selectFrom('datahub_access_key').selectAll().orderBy('id').execute();
  }

  async insertKeyIn(row: AccessKeyRow, db: Kysely<DataHubTables>): Promise<void> {
    await db.insertInto('datahub_access_key').values(row).execute();
  }

  /** Writes every column of `row` but `id` and `created_at` to the key `row.id`. */
  async replaceKey(row: AccessKeyRow, db: Kysely<DataHubTables> = this.db): Promise<void> {
    const { id, created_at: _created, ...rest } = row;
    await db.updateTable('datahub_access_key').set(rest).where('id', '=', id).execute();
  }

  async deleteKeys(ids: string[], db: Kysely<DataHubTables> = this.db): Promise<void> {
    if (ids.length === 0) return;
    await db.deleteFrom('datahub_access_key').where('id', 'in', ids).execute();
  }

  async deleteKey(id: string): Promise<boolean> {
    const res = await this.db.deleteFrom('datahub_access_key').where('id', '=', id).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }
}
