/** The integration module's tables (`cc_instance`, `cc_subscription`), through the query layer. */
import type { Database, Kysely, Tx } from '../../kernel/db/index.js';

export interface InstanceRow {
  id: string;
  name: string;
  provider_id: string;
  config: string;
  enabled: number;
  exec_command_enabled: number;
  description: string;
  created_at: number;
  updated_at: number;
}

export interface SubscriptionRow {
  id: string;
  instance_id: string;
  is_local_to_remote: number;
  enabled: number;
  local_name: string;
  remote_name: string;
  config: string;
  description: string;
  created_at: number;
  updated_at: number;
}

/** The integration module's tables as Kysely sees them (migrations/0001-create-integrations.ts). */
export interface IntegrationsTables {
  cc_instance: InstanceRow;
  cc_subscription: SubscriptionRow;
}

export class IntegrationsRepository {
  readonly #db: Kysely<IntegrationsTables>;

  constructor(readonly database: Database) {
    this.#db = database.typed<IntegrationsTables>();
  }

  /**
   * The repository reading and writing through `trx`, a transaction someone else owns (the
   * configuration apply's): nothing here commits it.
   */
  inTransaction(trx: Tx): IntegrationsRepository {
    return new IntegrationsRepository(Object.create(this.database, { db: { value: trx } }) as Database);
  }

  /** Every subscription of every instance (the configuration section's export). */
  allSubscriptions(): Promise<SubscriptionRow[]> {
    return this.#db
      .selectFrom('cc_subscription')
      .selectAll()
      .orderBy('instance_id')
      .orderBy('created_at')
      .orderBy('id')
      .execute() as Promise<SubscriptionRow[]>;
  }

  allInstances(): Promise<InstanceRow[]> {
    return this.#db.selectFrom('cc_instance').selectAll().orderBy('created_at').execute();
  }

  instanceListQuery() {
    return this.#db.selectFrom('cc_instance').selectAll();
  }

  async getInstance(id: string): Promise<InstanceRow | undefined> {
    return this.#db.selectFrom('cc_instance').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async getInstanceByName(name: string): Promise<InstanceRow | undefined> {
    return this.#db.selectFrom('cc_instance').selectAll().where('name', '=', name).executeTakeFirst();
  }

  async countInstances(): Promise<number> {
    const r = await this.#db
      .selectFrom('cc_instance')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async insertInstance(row: InstanceRow): Promise<void> {
    await this.#db.insertInto('cc_instance').values(row).execute();
  }

  async updateInstance(row: InstanceRow): Promise<void> {
    await this.#db.updateTable('cc_instance').set(row).where('id', '=', row.id).execute();
  }

  async deleteInstance(id: string): Promise<boolean> {
    await this.#db.deleteFrom('cc_subscription').where('instance_id', '=', id).execute();
    const r = await this.#db.deleteFrom('cc_instance').where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  subscriptionsOf(instanceId: string): Promise<SubscriptionRow[]> {
    return this.#db
      .selectFrom('cc_subscription')
      .selectAll()
      .where('instance_id', '=', instanceId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
  }

  subscriptionListQuery(instanceId: string) {
    return this.#db.selectFrom('cc_subscription').selectAll().where('instance_id', '=', instanceId);
  }

  async getSubscription(id: string): Promise<SubscriptionRow | undefined> {
    return this.#db.selectFrom('cc_subscription').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async insertSubscription(row: SubscriptionRow): Promise<void> {
    await this.#db.insertInto('cc_subscription').values(row).execute();
  }

  async updateSubscription(row: SubscriptionRow): Promise<void> {
    await this.#db.updateTable('cc_subscription').set(row).where('id', '=', row.id).execute();
  }

  async deleteSubscription(id: string): Promise<boolean> {
    const r = await this.#db.deleteFrom('cc_subscription').where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }
}
