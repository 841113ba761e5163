/**
 * A repository that can bind itself to one transaction: `transaction(fn)` hands `fn` a copy of the
 * repository whose every query runs in that transaction (or the repository itself when it is
 * bound already), so that a check and the write it guards land together or not at all. Inside,
 * go through the repository handed in only (on SQLite another query would wait for the end).
 */
import type { Database, Kysely, Transaction } from './index.js';

export abstract class BoundRepository<Tables, Self extends BoundRepository<Tables, Self>> {
  protected readonly database: Database;
  /** The module's tables: on the database, or on the transaction this repository is bound to. */
  protected readonly db: Kysely<Tables>;
  readonly #bound: boolean;

  constructor(database: Database, trx?: Transaction<Tables>) {
    this.database = database;
    this.db = trx ?? database.typed<Tables>();
    this.#bound = trx !== undefined;
  }

  /** The same repository bound to `trx` (`new XRepository(this.database, trx)`). */
  protected abstract bind(trx: Transaction<Tables>): Self;

  /** Runs `fn` with the repository bound to one transaction (see the file comment). */
  transaction<T>(fn: (repo: Self) => Promise<T>): Promise<T> {
    if (this.#bound) return fn(this as unknown as Self);
    return this.db.transaction().execute((trx) => fn(this.bind(trx)));
  }
}
