/** Running a list: a `ListSpec` applied to a Kysely query, on either dialect. */
import type { SelectQueryBuilder, SqlBool } from 'kysely';
import { sql, type Database } from '../db/index.js';
import {
  fieldOf,
  resolve,
  type Field,
  type FilterCondition,
  type FilterScalar,
  type ListDefinition,
  type ListPage,
  type ListSpec,
} from './definition.js';

/**
 * Runs `spec` on `query`, the endpoint's base query (joined and restricted by the caller, built on
 * `database.db`, without order or paging: its ORDER BY is replaced). `total` counts the filtered
 * rows; `items` is the requested page, ordered by the sort and then by the tiebreak column.
 */
export async function runList<DB, TB extends keyof DB, O>(
  database: Database,
  query: SelectQueryBuilder<DB, TB, O>,
  def: ListDefinition,
  spec: ListSpec,
): Promise<ListPage<O>> {
  const d = resolve(def);
  let filtered = query.clearOrderBy();
  for (const c of spec.filter) filtered = filtered.where(condition(database, fieldOf(d, c.field), c));

  const counted = await database.db
    .selectFrom(filtered.as('mw_list'))
    .select((eb) => eb.fn.countAll().as('total'))
    .executeTakeFirstOrThrow();

  let paged = filtered;
  for (const key of spec.sort) {
    paged = paged.orderBy(sql.ref(fieldOf(d, key.field).column), (ob) =>
      (key.order === 'desc' ? ob.desc() : ob.asc()).nullsLast(),
    );
  }
  const items = await paged.orderBy(sql.ref(def.tiebreak)).limit(spec.limit).offset(spec.offset).execute();
  return { items: items as O[], total: Number(counted.total) };
}

function condition(database: Database, field: Field, c: FilterCondition) {
  const col = sql.ref(field.column);
  const db = (v: FilterScalar) => (typeof v === 'boolean' ? (v ? 1 : 0) : v);
  const like = (pattern: string) => sql<SqlBool>`${col} ${sql.raw(database.ilike)} ${pattern} escape '!'`;
  if (c.op === 'in') {
    const values = (Array.isArray(c.value) ? c.value : [c.value]).map(db);
    return values.length === 0 ? sql<SqlBool>`1 = 0` : sql<SqlBool>`${col} in (${sql.join(values)})`;
  }
  const v = db(Array.isArray(c.value) ? (c.value[0] ?? '') : c.value);
  switch (c.op) {
    case 'eq':
      return sql<SqlBool>`${col} = ${v}`;
    case 'ne':
      return sql<SqlBool>`(${col} <> ${v} or ${col} is null)`;
    case 'gt':
      return sql<SqlBool>`${col} > ${v}`;
    case 'gte':
      return sql<SqlBool>`${col} >= ${v}`;
    case 'lt':
      return sql<SqlBool>`${col} < ${v}`;
    case 'lte':
      return sql<SqlBool>`${col} <= ${v}`;
    case 'contains':
      return like(`%${escapeLike(String(v))}%`);
    case 'startswith':
      return like(`${escapeLike(String(v))}%`);
  }
}

/** Makes `%`, `_` and the escape character `!` match themselves in a LIKE pattern. */
const escapeLike = (text: string) => text.replace(/[!%_]/g, '!$&');
