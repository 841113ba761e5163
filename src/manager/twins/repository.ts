/** The fleet twins' table: one row per model of a company, its document as JSON. */
import type { Transaction } from '../../kernel/db/index.js';
import { BoundRepository } from '../../kernel/db/bound-repository.js';

export interface Dt2Tables {
  mgr_dt2_model: {
    id: string;
    company_id: string;
    name: string;
    document: string;
    created_by: string;
    created_at: number;
    updated_at: number;
  };
}

export type Dt2ModelRow = Dt2Tables['mgr_dt2_model'];

export class Dt2Repository extends BoundRepository<Dt2Tables, Dt2Repository> {
  protected bind(trx: Transaction<Dt2Tables>) {
    return new Dt2Repository(this.database, trx);
  }

  models(companyId: string): Promise<Dt2ModelRow[]> {
    return this.db
      .selectFrom('mgr_dt2_model')
      .selectAll()
      .where('company_id', '=', companyId)
      .orderBy('name')
      .execute();
  }

  model(id: string): Promise<Dt2ModelRow | undefined> {
    return this.db.selectFrom('mgr_dt2_model').selectAll().where('id', '=', id).executeTakeFirst();
  }

  modelByName(companyId: string, name: string): Promise<Dt2ModelRow | undefined> {
    return this.db
      .selectFrom('mgr_dt2_model')
      .selectAll()
      .where('company_id', '=', companyId)
      .where('name', '=', name)
      .executeTakeFirst();
  }

  async count(companyId: string): Promise<number> {
    const r = await this.db
      .selectFrom('mgr_dt2_model')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('company_id', '=', companyId)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async insert(row: Dt2ModelRow): Promise<void> {
    await this.db.insertInto('mgr_dt2_model').values(row).execute();
  }

  async update(id: string, document: string, now: number): Promise<void> {
    await this.db
      .updateTable('mgr_dt2_model')
      .set({ document, updated_at: now })
      .where('id', '=', id)
      .execute();
  }

  async delete(id: string): Promise<boolean> {
    const r = await this.db.deleteFrom('mgr_dt2_model').where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }
}
