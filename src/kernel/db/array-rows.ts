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

/** What `selectArrays` needs of a Kysely select query builder. */
interface Selecting {
  modifyEnd(modifier: RawBuilder<unknown>): { execute(): Promise<unknown[]> };
}
