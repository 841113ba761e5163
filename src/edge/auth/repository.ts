/** The auth module's tables, through the kernel's query layer. No other module reads them. */
import type { Database, Kysely } from '../../kernel/db/index.js';
import { SettingsTable } from '../../kernel/db/settings.js';
import type { Role } from '../../kernel/http/auth-types.js';

export interface AuthTables {
  auth_setting: { key: string; value: string };
  auth_user: {
    username: string;
    password_hash: string;
    must_change_password: number;
    sessions_valid_after: number;
    created_at: number;
    updated_at: number;
  };
  auth_api_client: {
    client_id: string;
    name: string;
    role: Role;
    secret_hash: string;
    tokens_valid_after: number;
    created_at: number;
    updated_at: number;
  };
  auth_api_token: { id: string; name: string; role: Role; token_hash: string; created_at: number };
}

export type UserRow = AuthTables['auth_user'];
export type ApiClientRow = AuthTables['auth_api_client'];
export type ApiTokenRow = AuthTables['auth_api_token'];

export class AuthRepository {
  readonly database: Database;
  readonly db: Kysely<AuthTables>;
  /** The module's key/value settings (signing key, EULA version, realm policy). */
  readonly settings: SettingsTable;

  constructor(database: Database) {
    this.database = database;
    this.db = database.typed<AuthTables>();
    this.settings = new SettingsTable(database.db, 'auth_setting');
  }

  getUser(username: string): Promise<UserRow | undefined> {
    return this.db.selectFrom('auth_user').selectAll().where('username', '=', username).executeTakeFirst();
  }

  /** Creates the user unless it exists; answers whether it was created. */
  async createUserIfAbsent(row: UserRow): Promise<boolean> {
    const res = await this.db
      .insertInto('auth_user')
      .values(row)
      .onConflict((oc) => oc.column('username').doNothing())
      .executeTakeFirst();
    return Number(res.numInsertedOrUpdatedRows ?? 0) > 0;
  }

  async updateUserPassword(username: string, passwordHash: string, now: number): Promise<void> {
    await this.db
      .updateTable('auth_user')
      .set({
        password_hash: passwordHash,
        must_change_password: 0,
        sessions_valid_after: now,
        updated_at: now,
      })
      .where('username', '=', username)
      .execute();
  }

  /** A one-time password: the user must change it at the next login; older sessions end. */
  async resetUserPassword(username: string, passwordHash: string, now: number): Promise<void> {
    await this.db
      .updateTable('auth_user')
      .set({
        password_hash: passwordHash,
        must_change_password: 1,
        sessions_valid_after: now,
        updated_at: now,
      })
      .where('username', '=', username)
      .execute();
  }

  async insertClient(row: ApiClientRow): Promise<void> {
    await this.db.insertInto('auth_api_client').values(row).execute();
  }

  getClient(clientId: string): Promise<ApiClientRow | undefined> {
    return this.db
      .selectFrom('auth_api_client')
      .selectAll()
      .where('client_id', '=', clientId)
      .executeTakeFirst();
  }

  /** The base query of the client list, for the kernel's paging helpers. */
  clientListQuery() {
    return this.db
      .selectFrom('auth_api_client')
      .select(['client_id', 'name', 'role', 'created_at', 'updated_at']);
  }

  async deleteClient(clientId: string): Promise<boolean> {
    const res = await this.db
      .deleteFrom('auth_api_client')
      .where('client_id', '=', clientId)
      .executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }

  async updateClient(
    clientId: string,
    change: { name?: string | undefined; role?: Role | undefined },
    now: number,
  ): Promise<boolean> {
    const res = await this.db
      .updateTable('auth_api_client')
      .set({
        ...(change.name !== undefined ? { name: change.name } : {}),
        ...(change.role !== undefined ? { role: change.role } : {}),
        updated_at: now,
      })
      .where('client_id', '=', clientId)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  async updateClientSecret(clientId: string, secretHash: string, now: number): Promise<boolean> {
    const res = await this.db
      .updateTable('auth_api_client')
      .set({ secret_hash: secretHash, tokens_valid_after: now, updated_at: now })
      .where('client_id', '=', clientId)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  // --- the configuration section's (in a transaction someone else owns: the apply's)

  /** Every API client, by `client_id`, read through `db` (the apply's transaction). */
  allClients(db: Kysely<AuthTables> = this.db): Promise<ApiClientRow[]> {
    return db.selectFrom('auth_api_client').selectAll().orderBy('client_id').execute();
  }

  /** Writes every column of `row` but `client_id` and `created_at` to the client `row.client_id`. */
  async replaceClient(row: ApiClientRow, db: Kysely<AuthTables> = this.db): Promise<void> {
    const { client_id, created_at: _created, ...rest } = row;
    await db.updateTable('auth_api_client').set(rest).where('client_id', '=', client_id).execute();
  }

  async insertClientIn(row: ApiClientRow, db: Kysely<AuthTables>): Promise<void> {
    await db.insertInto('auth_api_client').values(row).execute();
  }

  async deleteClients(clientIds: string[], db: Kysely<AuthTables> = this.db): Promise<void> {
    if (clientIds.length === 0) return;
    await db.deleteFrom('auth_api_client').where('client_id', 'in', clientIds).execute();
  }

  async insertToken(row: ApiTokenRow): Promise<void> {
    await this.db.insertInto('auth_api_token').values(row).execute();
  }

  getTokenByHash(hash: string): Promise<ApiTokenRow | undefined> {
    return this.db.selectFrom('auth_api_token').selectAll().where('token_hash', '=', hash).executeTakeFirst();
  }

  tokenListQuery() {
    return this.db.selectFrom('auth_api_token').select(['id', 'name', 'role', 'created_at']);
  }

  async deleteToken(id: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('auth_api_token')
      .select('token_hash')
      .where('id', '=', id)
      .executeTakeFirst();
    if (!row) return undefined;
    await this.db.deleteFrom('auth_api_token').where('id', '=', id).execute();
    return row.token_hash;
  }
}
