import { dialectOf, sql, type Db, type Migration } from '../../../kernel/db/index.js';

/** The columns of a record, in the order of 0001's table (and of the hash's fields). */
const COLUMNS = [
  'seq',
  'id',
  'at',
  'actor',
  'actor_name',
  'company_id',
  'project_id',
  'module',
  'action',
  'origin',
  'target',
  'outcome',
  'status',
  'request_id',
  'details',
  'legacy_id',
  'prev_hash',
  'hash',
];

/**
 * Fewer B-trees to write per record (issue 27: every change the manager makes appends one, in
 * the change's transaction, and the commit wrote the record's table and five indexes):
 * - on SQLite, `seq` becomes the table's rowid (`integer primary key`): the record is stored in
 *   seq order, and the separate index 0001's `bigint primary key` made is gone;
 * - `id` loses its unique index (ids are time-ordered random UUIDs; nothing looks a record up by
 *   id: the lists and exports walk seq);
 * - `legacy_id`'s unique index covers only the records moved from the older store (partial:
 *   `where legacy_id is not null`), so that a new record does not touch it.
 * The `at` and `action` indexes stay (the time and action filters). Existing rows are kept as they
 * are (every field of the hash unchanged), so the chain verifies after the migration.
 *
 * SQLite cannot change a table's primary key or drop a column's UNIQUE: the table is rebuilt
 * (copied, dropped, renamed). PostgreSQL keeps its table (a heap: its primary key is one index
 * either way) and drops the two unique constraints.
 */
export const leanRecordTable: Migration = {
  name: '0002-lean-record-table',
  async up(db: Db) {
    if (dialectOf(db) === 'sqlite') {
      await sql`create table audit_record_new (
        seq integer primary key,
        id text not null,
        at bigint not null,
        actor text not null,
        actor_name text,
        company_id text,
        project_id text,
        module text not null,
        action text not null,
        origin text not null,
        target text,
        outcome text not null,
        status integer,
        request_id text,
        details text not null,
        legacy_id text,
        prev_hash text not null,
        hash text not null
      )`.execute(db);
      const cols = sql.join(COLUMNS.map((c) => sql.ref(c)));
      await sql`insert into audit_record_new (${cols}) select ${cols} from audit_record order by seq`.execute(
        db,
      );
      await sql`drop table audit_record`.execute(db);
      await sql`alter table audit_record_new rename to audit_record`.execute(db);
      await db.schema.createIndex('audit_record_at').on('audit_record').column('at').execute();
      await db.schema.createIndex('audit_record_action').on('audit_record').column('action').execute();
    } else {
      await sql`alter table audit_record drop constraint audit_record_id_key`.execute(db);
      await sql`alter table audit_record drop constraint audit_record_legacy_id_key`.execute(db);
    }
    await sql`create unique index audit_record_legacy_id on audit_record (legacy_id) where legacy_id is not null`.execute(
      db,
    );
  },
};
