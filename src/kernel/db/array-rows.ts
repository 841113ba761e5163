/**
 * Selects answered as arrays of values instead of one object per row. Both drivers build a row
 * object property by property, and for a big read that costs more than finding the rows: the
 * 11,111 rows of a hierarchy subtree take about half the time as arrays on SQLite. The query
 * carries a marker at its end (a comment, so it runs unchanged anywhere); `index.ts` has each
 * driver answer a marked query as arrays (better-sqlite3's raw mode, pg's `rowMode: 'array'`).
 */
import { sql, type RawBuilder } from 'kysely';

/** The end of the SQL of a select whose rows come back as arrays. */
const ARRAY_ROWS = '/* rows as arrays */';

/** Whether the driver answers `sqlText` with arrays. */
export const wantsArrays = (sqlText: string): boolean => sqlText.endsWith(ARRAY_ROWS);

/**
 * Runs `query` and answers its rows as arrays of the selected values, in the order of the select
 * list. `Row` is the caller's word for that order (a labelled tuple beside the column list).
 */
export async function selectArrays<Row extends readonly unknown[]>(query: Selecting): Promise<Row[]> {
  return (await query.modifyEnd(sql.raw(ARRAY_ROWS)).execute()) as Row[];
}

/**
 * Runs `query` and hands its rows (arrays, as `selectArrays`) to `each` one by one, each let go
 * once handed: a caller that consumes a row at once keeps none of them alive. (Kysely's
 * `stream()` was tried for SQLite, a row at a time from the statement: its async iteration per row
 * cost more CPU and garbage than the rows' lifetime saved.)
 */
export async function eachArray<Row extends readonly unknown[]>(
  query: Selecting,
  each: (row: Row) => void,
): Promise<void> {
  const rows = (await query.modifyEnd(sql.raw(ARRAY_ROWS)).execute()) as (Row | undefined)[];
  for (let i = 0; i < rows.length; i++) {
    each(rows[i]!);
    rows[i] = undefined;
  }
}

/** What `selectArrays` needs of a Kysely select query builder. */
interface Selecting {
  modifyEnd(modifier: RawBuilder<unknown>): { execute(): Promise<unknown[]> };
}
