/**
 * The namespace module's tables (`uns_namespace`, `uns_topic`), through the query layer. No other
 * module reads them. `inTransaction(trx)` is the same repository over a transaction someone else
 * owns (nothing here commits it).
 */
import { typed, type Db, type Kysely, type Tx } from '../../kernel/db/index.js';

/** The namespace module's tables as Kysely sees them (migrations.ts). */
export interface NamespaceTables {
  uns_namespace: {
    id: string;
    prefix: string;
    description: string;
    /** JSON array of rule specs. */
    default_rules: string;
    created_at: number;
    updated_at: number;
  };
  uns_topic: { path: string; description: string; created_at: number; updated_at: number };
}

export type NamespaceRow = NamespaceTables['uns_namespace'];
export type TopicRow = NamespaceTables['uns_topic'];

export class NamespaceRepository {
  readonly #db: Kysely<NamespaceTables>;

  constructor(db: Db) {
    this.#db = typed<NamespaceTables>(db);
  }

  /** The repository over `trx` (see the file comment). */
  static inTransaction(trx: Tx): NamespaceRepository {
    return new NamespaceRepository(trx);
  }

  topics(): Promise<TopicRow[]> {
    return this.#db.selectFrom('uns_topic').selectAll().execute();
  }

  /** Every namespace, by prefix. */
  namespaces(): Promise<NamespaceRow[]> {
    return this.#db.selectFrom('uns_namespace').selectAll().orderBy('prefix').execute();
  }

  getNamespace(id: string): Promise<NamespaceRow | undefined> {
    return this.#db.selectFrom('uns_namespace').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async insertNamespace(row: NamespaceRow): Promise<void> {
    await this.#db.insertInto('uns_namespace').values(row).execute();
  }

  /** Answers whether the namespace exists. */
  async updateNamespace(
    id: string,
    set: Partial<Pick<NamespaceRow, 'description' | 'default_rules'>> & { updated_at: number },
  ): Promise<boolean> {
    const res = await this.#db.updateTable('uns_namespace').set(set).where('id', '=', id).executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  /** Answers whether the namespace existed. */
  async deleteNamespace(id: string): Promise<boolean> {
    const res = await this.#db.deleteFrom('uns_namespace').where('id', '=', id).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }

  /** Declares the topic, or changes the description of a declared one. */
  async putTopic(path: string, description: string, now: number): Promise<void> {
    await this.#db
      .insertInto('uns_topic')
      .values({ path, description, created_at: now, updated_at: now })
      .onConflict((oc) => oc.column('path').doUpdateSet({ description, updated_at: now }))
      .execute();
  }

  /** Answers whether the topic was declared. */
  async deleteTopic(path: string): Promise<boolean> {
    const res = await this.#db.deleteFrom('uns_topic').where('path', '=', path).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }
}
