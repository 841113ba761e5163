/** The manager auth module's tables: API tokens, console users and their role bindings. */
import type { Database, Kysely } from '../../kernel/db/index.js';

export type ManagerRole = 'admin' | 'operator' | 'viewer';

export interface ManagerAuthTables {
  mgr_auth_setting: { key: string; value: string };
  mgr_user: { username: string; password_hash: string; created_at: number };
  mgr_role_binding: {
    id: string;
    username: string;
    role: ManagerRole;
    company_id: string | null;
    project_id: string | null;
    created_at: number;
  };
  mgr_api_token: {
    id: string;
    name: string;
    role: ManagerRole;
    username: string | null;
    token_hash: string;
    created_at: number;
    rotated_at: number;
  };
}

export type TokenRow = ManagerAuthTables['mgr_api_token'];
export type BindingRow = ManagerAuthTables['mgr_role_binding'];

export class ManagerAuthRepository {
  readonly database: Database;
  readonly db: Kysely<ManagerAuthTables>;

  constructor(database: Database) {
    this.database = database;
    this.db = database.typed<ManagerAuthTables>();
  }

  async insertToken(row: TokenRow): Promise<void> {
    await this.db.insertInto('mgr_api_token').values(row).execute();
  }

  getTokenByHash(hash: string): Promise<TokenRow | undefined> {
    return this.db.selectFrom('mgr_api_token').selectAll().where('token_hash', '=', hash).executeTakeFirst();
  }

  getToken(id: string): Promise<TokenRow | undefined> {
    return this.db.selectFrom('mgr_api_token').selectAll().where('id', '=', id).executeTakeFirst();
  }

  tokenListQuery() {
    return this.db
      .selectFrom('mgr_api_token')
      .select(['id', 'name', 'role', 'username', 'created_at', 'rotated_at']);
  }

  async deleteToken(id: string): Promise<boolean> {
    const res = await this.db.deleteFrom('mgr_api_token').where('id', '=', id).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }

  async rotateToken(id: string, hash: string, now: number): Promise<boolean> {
    const res = await this.db
      .updateTable('mgr_api_token')
      .set({ token_hash: hash, rotated_at: now })
      .where('id', '=', id)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  getUser(username: string) {
    return this.db.selectFrom('mgr_user').selectAll().where('username', '=', username).executeTakeFirst();
  }

  async insertUser(row: ManagerAuthTables['mgr_user']): Promise<void> {
    await this.db.insertInto('mgr_user').values(row).execute();
  }

  async deleteUser(username: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('mgr_role_binding').where('username', '=', username).execute();
      await trx.deleteFrom('mgr_api_token').where('username', '=', username).execute();
      const res = await trx.deleteFrom('mgr_user').where('username', '=', username).executeTakeFirst();
      return Number(res.numDeletedRows) > 0;
    });
  }

  userListQuery() {
    return this.db.selectFrom('mgr_user').select(['username', 'created_at']);
  }

  async insertBinding(row: BindingRow): Promise<void> {
    await this.db.insertInto('mgr_role_binding').values(row).execute();
  }

  async deleteBinding(id: string): Promise<boolean> {
    const res = await this.db.deleteFrom('mgr_role_binding').where('id', '=', id).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }

  bindingsOf(username: string): Promise<BindingRow[]> {
    return this.db.selectFrom('mgr_role_binding').selectAll().where('username', '=', username).execute();
  }

  bindingListQuery() {
    return this.db
      .selectFrom('mgr_role_binding')
      .select(['id', 'username', 'role', 'company_id', 'project_id', 'created_at']);
  }
}
