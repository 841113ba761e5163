/**
 * The retained writer's thread (`retained-writer.ts`): its own connection to the broker's SQLite
 * file (WAL, like the main one) and one transaction per batch of retained rows it is sent; it
 * answers each batch once it is committed, or with the error.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Database } from '../../kernel/db/index.js';
import { BrokerRepository } from './repository.js';

/** A batch: its id and its rows, [topic, packet text or null (deleted)]. */
export interface RetainedBatch {
  id: number;
  rows: [string, string | null][];
}
export interface RetainedReply {
  id: number;
  error?: string;
}

const port = parentPort;
if (port) {
  const database = Database.open({ sqlitePath: (workerData as { sqlitePath: string }).sqlitePath });
  const repo = new BrokerRepository(database);
  port.on('message', (batch: RetainedBatch) => {
    repo
      .transaction((trx) => repo.writeRetained(trx, new Map(batch.rows)))
      .then(
        () => port.postMessage({ id: batch.id } satisfies RetainedReply),
        (err: unknown) => port.postMessage({ id: batch.id, error: String(err) } satisfies RetainedReply),
      );
  });
}
