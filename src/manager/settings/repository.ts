/** The instance settings' tables: key/value settings and the sealed marketplace secrets. */
import type { Database, Kysely } from '../../kernel/db/index.js';
import { SettingsTable } from '../../kernel/db/settings.js';

export interface SettingsTables {
  mgr_instance_setting: { key: string; value: string };
  mgr_mpc_secret: { key: string; sealed: string; updated_at: number; updated_by: string };
}
export type MpcSecretRow = SettingsTables['mgr_mpc_secret'];

export class InstanceSettingsRepository {
  readonly #db: Kysely<SettingsTables>;
  readonly #settings: SettingsTable;

  constructor(database: Database) {
    this.#db = database.typed<SettingsTables>();
    this.#settings = new SettingsTable(database.db, 'mgr_instance_setting');
  }

  get(key: string): Promise<string | undefined> {
    return this.#settings.get(key);
  }

  put(key: string, value: string): Promise<void> {
    return this.#settings.put(key, value);
  }

  secret(key: string): Promise<MpcSecretRow | undefined> {
    return this.#db.selectFrom('mgr_mpc_secret').selectAll().where('key', '=', key).executeTakeFirst();
  }

  async secretCount(): Promise<number> {
    const r = await this.#db
      .selectFrom('mgr_mpc_secret')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async putSecret(row: MpcSecretRow): Promise<void> {
    await this.#db
      .insertInto('mgr_mpc_secret')
      .values(row)
      .onConflict((oc) =>
        oc
          .column('key')
          .doUpdateSet({ sealed: row.sealed, updated_at: row.updated_at, updated_by: row.updated_by }),
      )
      .execute();
  }

  async deleteSecret(key: string): Promise<boolean> {
    const r = await this.#db.deleteFrom('mgr_mpc_secret').where('key', '=', key).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }
}
