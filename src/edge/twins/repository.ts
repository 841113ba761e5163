/**
 * The twins' tables, through the kernel's query layer. No other module reads them. The service
 * keeps the whole configuration in memory (it is bounded, see docs/security.md) and writes through
 * this repository; rows are the records with snake_case columns, booleans as 0/1 and JSON as text.
 *
 * `TwinsRepository.inTransaction(trx)` is the same repository bound to a transaction that someone
 * else owns (the configuration apply's): every read and write goes through `trx`, and `batch`
 * runs its steps in it instead of opening a transaction of its own.
 */
import { typed, type Database, type Db, type Kysely, type Tx } from '../../kernel/db/index.js';

interface Stamps {
  created_at: number;
  updated_at: number;
}
interface OwnedRow extends Stamps {
  id: string;
  model_id: string;
  instance_id: string | null;
}
interface KeyValueRow extends OwnedRow {
  key: string;
  value: string;
}

/** The twins' tables as Kysely sees them (migrations/0001-create-twins.ts). */
export interface TwinsTables {
  twins_model: Stamps & {
    id: string;
    name: string;
    assets: string;
    description: string;
    publish_on_change: number;
    publish_interval_ms: number;
    stale_after_ms: number;
  };
  twins_instance: Stamps & {
    id: string;
    model_id: string;
    name: string;
    description: string;
    source: string;
    topic: string;
    enabled: number;
  };
  twins_static_attribute: KeyValueRow;
  twins_parameter: KeyValueRow;
  twins_dynamic_attribute: OwnedRow & {
    name: string;
    description: string;
    type: string;
    attribute_type: string;
    topic: string;
    transformation_id: string | null;
    nested_model_id: string | null;
    nested_instance_id: string | null;
  };
  twins_transformation: Stamps & { id: string; name: string; description: string; expression: string };
  twins_hierarchy_node: {
    id: string;
    model_id: string;
    parent_id: string | null;
    position: number;
    name: string;
    is_folder: number;
    attribute_id: string | null;
    attribute_type: string | null;
    node_type: string | null;
  };
  twins_asset_placement: { id: string; instance_id: string; path: string; metadata: string | null };
}

export const TABLES = {
  model: 'twins_model',
  instance: 'twins_instance',
  static: 'twins_static_attribute',
  parameter: 'twins_parameter',
  dynamic: 'twins_dynamic_attribute',
  transformation: 'twins_transformation',
  node: 'twins_hierarchy_node',
  placement: 'twins_asset_placement',
} as const;
export type TableKey = keyof typeof TABLES;

/**
 * The same tables addressed by a `TableKey` chosen at run time: rows are the records of `toRow` and
 * `fromRow` (the generic methods below).
 */
type RecordTables = Record<(typeof TABLES)[TableKey], Record<string, unknown>>;

const BOOLEANS = new Set(['publishOnChange', 'enabled', 'isFolder']);
const JSON_FIELDS = new Set(['metadata']);

const snake = (k: string) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const camel = (k: string) => k.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());

function toRow(record: object): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(record)) {
    row[snake(k)] = BOOLEANS.has(k)
      ? v
        ? 1
        : 0
      : JSON_FIELDS.has(k)
        ? v == null
          ? null
          : JSON.stringify(v)
        : v;
  }
  return row;
}

function fromRow<T>(row: Record<string, unknown>): T {
  const record: Record<string, unknown> = {};
  for (const [c, v] of Object.entries(row)) {
    const k = camel(c);
    record[k] = BOOLEANS.has(k)
      ? Number(v) === 1
      : JSON_FIELDS.has(k)
        ? v == null
          ? null
          : JSON.parse(String(v))
        : typeof v === 'bigint'
          ? Number(v)
          : v;
  }
  return record as T;
}

/** One write of `TwinsRepository.batch`. */
export interface BatchStep {
  op: 'insert' | 'update' | 'remove';
  table: TableKey;
  record?: object;
  ids?: readonly string[];
}

export class TwinsRepository {
  readonly #typed: Kysely<TwinsTables>;
  // The tables are addressed by a `TableKey` chosen at run time: the generic methods below go
  // through the record view of the same handle.
  readonly #db: Kysely<RecordTables>;
  /** null: bound to a transaction owned elsewhere (`inTransaction`). */
  readonly #database: Database | null;

  /** `trx`: bind to a transaction owned elsewhere; use `inTransaction` for that. */
  constructor(database: Database | null, trx?: Tx) {
    if (!database && !trx) throw new Error('TwinsRepository needs a database or a transaction');
    this.#database = trx ? null : database;
    const db: Db = trx ?? database!.db;
    this.#typed = typed<TwinsTables>(db);
    this.#db = typed<RecordTables>(db);
  }

  /** The repository bound to `trx` (see the file comment); `trx` is not committed here. */
  static inTransaction(trx: Tx): TwinsRepository {
    return new TwinsRepository(null, trx);
  }

  /** The typed handle of the repository's database (or transaction). */
  get db(): Kysely<TwinsTables> {
    return this.#typed;
  }

  async all<T>(table: TableKey): Promise<T[]> {
    const rows = await this.#db.selectFrom(TABLES[table]).selectAll().execute();
    return rows.map((r) => fromRow<T>(r));
  }

  async insert(table: TableKey, record: object): Promise<void> {
    await this.#db.insertInto(TABLES[table]).values(toRow(record)).execute();
  }

  async update(table: TableKey, record: { id: string }): Promise<void> {
    const { id, ...rest } = toRow(record);
    await this.#db.updateTable(TABLES[table]).set(rest).where('id', '=', id).execute();
  }

  async remove(table: TableKey, ids: readonly string[]): Promise<void> {
    for (let i = 0; i < ids.length; i += 500) {
      await this.#db
        .deleteFrom(TABLES[table])
        .where('id', 'in', ids.slice(i, i + 500))
        .execute();
    }
  }

  /** Several writes in one transaction (the bound one, with `inTransaction`). */
  async batch(steps: BatchStep[]): Promise<void> {
    if (!this.#database) return run(this.#db, steps);
    await this.#db.transaction().execute((trx) => run(trx, steps));
  }
}

async function run(db: Kysely<RecordTables>, steps: BatchStep[]): Promise<void> {
  for (const s of steps) {
    if (s.op === 'insert') await db.insertInto(TABLES[s.table]).values(toRow(s.record!)).execute();
    else if (s.op === 'update') {
      const { id, ...rest } = toRow(s.record!);
      await db.updateTable(TABLES[s.table]).set(rest).where('id', '=', id).execute();
    } else {
      const ids = s.ids ?? [];
      for (let i = 0; i < ids.length; i += 500)
        await db
          .deleteFrom(TABLES[s.table])
          .where('id', 'in', ids.slice(i, i + 500))
          .execute();
    }
  }
}
