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
  mgr_session: { id: string; username: string; client_id: string; created_at: number; expires_at: number };
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
export type SessionRow = ManagerAuthTables['mgr_session'];

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
      await trx.deleteFrom('mgr_session').where('username', '=', username).execute();
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

  async countUsers(): Promise<number> {
    const row = await this.db
      .selectFrom('mgr_user')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  /** A user with a global role binding, in one transaction (the first administrator). */
  async insertUserWithBinding(user: ManagerAuthTables['mgr_user'], binding: BindingRow): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx.insertInto('mgr_user').values(user).execute();
      await trx.insertInto('mgr_role_binding').values(binding).execute();
    });
  }

  async setting(key: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('mgr_auth_setting')
      .select('value')
      .where('key', '=', key)
      .executeTakeFirst();
    return row?.value;
  }

  async putSetting(key: string, value: string): Promise<void> {
    await this.db
      .insertInto('mgr_auth_setting')
      .values({ key, value })
      .onConflict((oc) => oc.column('key').doUpdateSet({ value }))
      .execute();
  }

  async insertSession(row: SessionRow): Promise<void> {
    await this.db.insertInto('mgr_session').values(row).execute();
  }

  getSession(id: string): Promise<SessionRow | undefined> {
    return this.db.selectFrom('mgr_session').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async deleteSession(id: string): Promise<boolean> {
    const res = await this.db.deleteFrom('mgr_session').where('id', '=', id).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }

  async deleteExpiredSessions(now: number): Promise<void> {
    await this.db.deleteFrom('mgr_session').where('expires_at', '<=', now).execute();
  }

  /** How many live sessions a user has (bounded per user by the realm). */
  async countSessions(username: string, now: number): Promise<number> {
    const row = await this.db
      .selectFrom('mgr_session')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('username', '=', username)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }
}
