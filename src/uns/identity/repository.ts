/** The identity module's tables (users of the service, realm settings). No other module reads them. */
import { typed, type Db, type Kysely } from '../../kernel/db/index.js';
import { SettingsTable } from '../../kernel/db/settings.js';

export type UserRole = 'admin' | 'operator';

export interface IdentityTables {
  uns_setting: { key: string; value: string };
  uns_user: {
    username: string;
    password_hash: string;
    role: UserRole;
    tokens_valid_after: number;
    created_at: number;
    updated_at: number;
  };
}

export type UserRow = IdentityTables['uns_user'];

export class IdentityRepository {
  readonly db: Kysely<IdentityTables>;
  /** The module's key/value settings (signing key, EULA version, realm policy). */
  readonly settings: SettingsTable;

  constructor(db: Db) {
    this.db = typed<IdentityTables>(db);
    this.settings = new SettingsTable(db, 'uns_setting');
  }

  getUser(username: string): Promise<UserRow | undefined> {
    return this.db.selectFrom('uns_user').selectAll().where('username', '=', username).executeTakeFirst();
  }

  listUsers(): Promise<UserRow[]> {
    return this.db.selectFrom('uns_user').selectAll().orderBy('username').execute();
  }

  /** Creates the user unless the name is taken; answers whether it was created. */
  async insertUser(row: UserRow): Promise<boolean> {
    const res = await this.db
      .insertInto('uns_user')
      .values(row)
      .onConflict((oc) => oc.column('username').doNothing())
      .executeTakeFirst();
    return Number(res.numInsertedOrUpdatedRows ?? 0) > 0;
  }

  async updateUser(username: string, set: Partial<UserRow>): Promise<boolean> {
    const res = await this.db
      .updateTable('uns_user')
      .set(set)
      .where('username', '=', username)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  async deleteUser(username: string): Promise<boolean> {
    const res = await this.db.deleteFrom('uns_user').where('username', '=', username).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }
}
