/** The accounts module's tables, through the kernel's query layer. No other module reads them. */
import { sql, typed, type Db as UntypedDb, type Kysely, type Transaction } from '../../kernel/db/index.js';
import type { Perm } from './rules.js';

export interface AccountTables {
  uns_account: {
    id: string;
    username: string;
    password_hash: string;
    ac_type: string;
    enabled: number;
    created_at: number;
    updated_at: number;
  };
  uns_account_rule: { id: string; account_id: string; path: string; perm: Perm; created_at: number };
  uns_activation: {
    id: string;
    token_hash: string;
    path: string;
    description: string;
    expires_at: number;
    used_at: number | null;
    account_id: string | null;
    created_at: number;
  };
  uns_account_version: { id: number; version: number };
}

export type AccountRow = AccountTables['uns_account'];
export type RuleRow = AccountTables['uns_account_rule'];
export type ActivationRow = AccountTables['uns_activation'];

type Db = Kysely<AccountTables> | Transaction<AccountTables>;

export class AccountRepository {
  readonly db: Kysely<AccountTables>;

  constructor(db: UntypedDb) {
    this.db = typed<AccountTables>(db);
  }

  /** Runs `fn` in a transaction that also bumps the change version. */
  async change<T>(fn: (trx: Transaction<AccountTables>) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(async (trx) => {
      const out = await fn(trx);
      await trx
        .updateTable('uns_account_version')
        .set({ version: sql`version + 1` })
        .where('id', '=', 1)
        .execute();
      return out;
    });
  }

  async version(): Promise<number> {
    const row = await this.db
      .selectFrom('uns_account_version')
      .select('version')
      .where('id', '=', 1)
      .executeTakeFirst();
    return Number(row?.version ?? 0);
  }

  allAccounts(): Promise<AccountRow[]> {
    return this.db.selectFrom('uns_account').selectAll().execute();
  }

  allRules(): Promise<RuleRow[]> {
    return this.db.selectFrom('uns_account_rule').selectAll().orderBy('created_at').orderBy('id').execute();
  }

  getAccountByUsername(username: string, db: Db = this.db): Promise<AccountRow | undefined> {
    return db.selectFrom('uns_account').selectAll().where('username', '=', username).executeTakeFirst();
  }

  async insertAccount(trx: Db, row: AccountRow, rules: RuleRow[]): Promise<void> {
    await trx.insertInto('uns_account').values(row).execute();
    if (rules.length > 0) await trx.insertInto('uns_account_rule').values(rules).execute();
  }

  async deleteAccount(trx: Db, id: string): Promise<boolean> {
    await trx.deleteFrom('uns_account_rule').where('account_id', '=', id).execute();
    const res = await trx.deleteFrom('uns_account').where('id', '=', id).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }

  async updateAccount(trx: Db, id: string, set: Partial<AccountRow>): Promise<boolean> {
    const res = await trx.updateTable('uns_account').set(set).where('id', '=', id).executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  async insertRules(trx: Db, rules: RuleRow[]): Promise<void> {
    if (rules.length > 0) await trx.insertInto('uns_account_rule').values(rules).execute();
  }

  async deleteRules(trx: Db, accountId: string, ids: string[]): Promise<number> {
    if (ids.length === 0) return 0;
    const res = await trx
      .deleteFrom('uns_account_rule')
      .where('account_id', '=', accountId)
      .where('id', 'in', ids)
      .executeTakeFirst();
    return Number(res.numDeletedRows);
  }

  async insertActivation(row: ActivationRow): Promise<void> {
    await this.db.insertInto('uns_activation').values(row).execute();
  }

  getActivation(trx: Db, tokenHash: string): Promise<ActivationRow | undefined> {
    return trx
      .selectFrom('uns_activation')
      .selectAll()
      .where('token_hash', '=', tokenHash)
      .executeTakeFirst();
  }

  /** Marks an activation used; false when another redemption got there first. */
  async useActivation(trx: Db, id: string, accountId: string, now: number): Promise<boolean> {
    const res = await trx
      .updateTable('uns_activation')
      .set({ used_at: now, account_id: accountId })
      .where('id', '=', id)
      .where('used_at', 'is', null)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  listActivations(): Promise<ActivationRow[]> {
    return this.db.selectFrom('uns_activation').selectAll().orderBy('created_at').execute();
  }

  async deleteActivation(id: string): Promise<boolean> {
    const res = await this.db.deleteFrom('uns_activation').where('id', '=', id).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }
}
