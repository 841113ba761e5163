/**
 * A module's key/value settings table (`key text primary key, value text not null`), such as the
 * signing key made on first start: read, set once (first writer wins, even across processes), set.
 */
import { typed, type Db, type Kysely } from './index.js';

/** Any module's settings table, by its name. */
type SettingsTables = Record<string, { key: string; value: string }>;

export class SettingsTable {
  readonly #db: Kysely<SettingsTables>;
  readonly #table: string;

  constructor(db: Db, table: string) {
    this.#db = typed<SettingsTables>(db);
    this.#table = table;
  }

  async get(key: string): Promise<string | undefined> {
    const row = await this.#db
      .selectFrom(this.#table)
      .select('value')
      .where('key', '=', key)
      .executeTakeFirst();
    return row?.value;
  }

  /** Sets a value only if the key has none yet; answers the value in force (ours or an earlier one). */
  async init(key: string, value: string): Promise<string> {
    await this.#db
      .insertInto(this.#table)
      .values({ key, value })
      .onConflict((oc) => oc.column('key').doNothing())
      .execute();
    return (await this.get(key))!;
  }

  async put(key: string, value: string): Promise<void> {
    await this.#db
      .insertInto(this.#table)
      .values({ key, value })
      .onConflict((oc) => oc.column('key').doUpdateSet({ value }))
      .execute();
  }
}
