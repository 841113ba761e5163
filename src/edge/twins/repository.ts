/**
 * The twins' tables, through the kernel's query layer. No other module reads them. The service
 * keeps the whole configuration in memory (it is bounded, see docs/security.md) and writes through
 * this repository; rows are the records with snake_case columns, booleans as 0/1 and JSON as text.
 */
import type { Database, Kysely } from '../../kernel/db/index.js';

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

export class TwinsRepository {
  readonly #db: Kysely<any>;
  readonly #database: Database;

  constructor(database: Database) {
    this.#database = database;
    this.#db = database.db;
  }

  async all<T>(table: TableKey): Promise<T[]> {
    const rows = await this.#db.selectFrom(TABLES[table]).selectAll().execute();
    return rows.map((r) => fromRow<T>(r as Record<string, unknown>));
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

  /** Several writes in one transaction. */
  async batch(
    steps: {
      op: 'insert' | 'update' | 'remove';
      table: TableKey;
      record?: object;
      ids?: readonly string[];
    }[],
  ): Promise<void> {
    await this.#database.db.transaction().execute(async (trx) => {
      for (const s of steps) {
        if (s.op === 'insert') await trx.insertInto(TABLES[s.table]).values(toRow(s.record!)).execute();
        else if (s.op === 'update') {
          const { id, ...rest } = toRow(s.record!);
          await trx.updateTable(TABLES[s.table]).set(rest).where('id', '=', id).execute();
        } else {
          const ids = s.ids ?? [];
          for (let i = 0; i < ids.length; i += 500)
            await trx
              .deleteFrom(TABLES[s.table])
              .where('id', 'in', ids.slice(i, i + 500))
              .execute();
        }
      }
    });
  }
}
