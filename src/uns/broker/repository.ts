/**
 * The broker's session tables (retained messages, subscriptions of persistent sessions, queued
 * outgoing and inbound QoS 2 messages, wills), through the query layer. `SqlPersistence` batches
 * its writes: the write methods take the transaction of the batch (`transaction`).
 */
import type { CompiledQuery, Database, Kysely, Transaction } from '../../kernel/db/index.js';

/** The broker's tables as Kysely sees them (migrations.ts). Packets are JSON text. */
export interface BrokerTables {
  uns_mqtt_retained: { topic: string; packet: string };
  uns_mqtt_subscription: { client_id: string; topic: string; sub: string };
  uns_mqtt_outgoing: {
    client_id: string;
    seq: number;
    broker_id: string;
    broker_counter: number;
    message_id: number | null;
    packet: string;
  };
  uns_mqtt_incoming: { client_id: string; message_id: number; packet: string };
  uns_mqtt_will: { client_id: string; packet: string };
}

/** Rows of one retained upsert statement, at most. */
const UPSERT_ROWS = 200;

export type OutgoingRow = BrokerTables['uns_mqtt_outgoing'];
export type BrokerTx = Transaction<BrokerTables>;

export class BrokerRepository {
  readonly #db: Kysely<BrokerTables>;

  constructor(database: Database) {
    this.#db = database.typed<BrokerTables>();
  }

  /** Runs `fn` in one transaction (a batch of writes). */
  transaction(fn: (trx: BrokerTx) => Promise<void>): Promise<void> {
    return this.#db.transaction().execute(fn);
  }

  // --- reads at start -------------------------------------------------------------------------

  retained(): Promise<BrokerTables['uns_mqtt_retained'][]> {
    return this.#db.selectFrom('uns_mqtt_retained').selectAll().execute();
  }

  subscriptions(): Promise<BrokerTables['uns_mqtt_subscription'][]> {
    return this.#db.selectFrom('uns_mqtt_subscription').selectAll().execute();
  }

  /** Every queued outgoing message, by session and in queue order. */
  outgoing(): Promise<OutgoingRow[]> {
    return this.#db.selectFrom('uns_mqtt_outgoing').selectAll().orderBy('client_id').orderBy('seq').execute();
  }

  /** The stored size of every queued outgoing message, by session and in queue order. */
  outgoingSizes(): Promise<{ client_id: string; seq: number; message_id: number | null; size: number }[]> {
    return this.#db
      .selectFrom('uns_mqtt_outgoing')
      .select(['client_id', 'seq', 'message_id', (eb) => eb.fn<number>('length', ['packet']).as('size')])
      .orderBy('client_id')
      .orderBy('seq')
      .execute();
  }

  incoming(): Promise<BrokerTables['uns_mqtt_incoming'][]> {
    return this.#db.selectFrom('uns_mqtt_incoming').selectAll().execute();
  }

  wills(): Promise<BrokerTables['uns_mqtt_will'][]> {
    return this.#db.selectFrom('uns_mqtt_will').selectAll().execute();
  }

  /** Deletes queued outgoing messages of a session by their sequence numbers. */
  async deleteOutgoingSeqs(clientId: string, seqs: number[]): Promise<void> {
    for (let i = 0; i < seqs.length; i += 500) {
      const part = seqs.slice(i, i + 500);
      await this.#db
        .deleteFrom('uns_mqtt_outgoing')
        .where('client_id', '=', clientId)
        .where('seq', 'in', part)
        .execute();
    }
  }

  // --- writes of a batch ----------------------------------------------------------------------

  /**
   * The retained messages of a batch in few statements: `packets` maps a topic to its packet, or
   * to null for a deletion (upserts of up to 200 rows per statement, deletions of up to 500).
   */
  async writeRetained(trx: BrokerTx, packets: Map<string, string | null>): Promise<void> {
    const puts: string[] = [];
    const dels: string[] = [];
    for (const [topic, packet] of packets) {
      if (packet === null) dels.push(topic);
      else puts.push(topic, packet);
    }
    for (let i = 0; i < puts.length; i += 2 * UPSERT_ROWS) {
      const part = puts.slice(i, i + 2 * UPSERT_ROWS);
      const compiled = this.#upsert(part.length / 2);
      await trx.executeQuery({ ...compiled, parameters: part });
    }
    for (let i = 0; i < dels.length; i += 500) {
      await trx
        .deleteFrom('uns_mqtt_retained')
        .where('topic', 'in', dels.slice(i, i + 500))
        .execute();
    }
  }

  /**
   * The upsert of `rows` retained messages, built and compiled once per row count (at most
   * `UPSERT_ROWS` of them): building and compiling it per batch cost as much as running it.
   * Its parameters are topic and packet of each row, in order.
   */
  #upsert(rows: number): CompiledQuery {
    let compiled = this.#upserts[rows];
    if (!compiled) {
      compiled = this.#db
        .insertInto('uns_mqtt_retained')
        .values(Array.from({ length: rows }, () => ({ topic: '', packet: '' })))
        .onConflict((oc) => oc.column('topic').doUpdateSet({ packet: (eb) => eb.ref('excluded.packet') }))
        .compile();
      this.#upserts[rows] = compiled;
    }
    return compiled;
  }

  /** Compiled upserts by row count (`#upsert`): at most `UPSERT_ROWS`. */
  readonly #upserts: (CompiledQuery | undefined)[] = [];

  async putSubscriptions(trx: BrokerTx, rows: BrokerTables['uns_mqtt_subscription'][]): Promise<void> {
    for (const row of rows) {
      await trx
        .insertInto('uns_mqtt_subscription')
        .values(row)
        .onConflict((oc) => oc.columns(['client_id', 'topic']).doUpdateSet({ sub: row.sub }))
        .execute();
    }
  }

  async deleteSubscriptions(trx: BrokerTx, clientId: string, topics?: string[]): Promise<void> {
    let q = trx.deleteFrom('uns_mqtt_subscription').where('client_id', '=', clientId);
    if (topics) q = q.where('topic', 'in', topics);
    await q.execute();
  }

  async insertOutgoing(trx: BrokerTx, row: OutgoingRow): Promise<void> {
    await trx.insertInto('uns_mqtt_outgoing').values(row).execute();
  }

  /** Deletes a queued message not yet sent, by the broker's id and counter. */
  async deleteUnsentOutgoing(
    trx: BrokerTx,
    clientId: string,
    brokerId: string,
    counter: number,
  ): Promise<void> {
    await trx
      .deleteFrom('uns_mqtt_outgoing')
      .where('client_id', '=', clientId)
      .where('broker_id', '=', brokerId)
      .where('broker_counter', '=', counter)
      .where('message_id', 'is', null)
      .execute();
  }

  /** Marks the message of the broker's id and counter as sent with `messageId`; answers whether it was found. */
  async markOutgoingSent(
    trx: BrokerTx,
    clientId: string,
    brokerId: string,
    counter: number,
    messageId: number | null,
  ): Promise<boolean> {
    const res = await trx
      .updateTable('uns_mqtt_outgoing')
      .set({ message_id: messageId })
      .where('client_id', '=', clientId)
      .where('broker_id', '=', brokerId)
      .where('broker_counter', '=', counter)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  /** Replaces the packet in flight with `messageId`. */
  async replaceOutgoingPacket(
    trx: BrokerTx,
    clientId: string,
    messageId: number,
    packet: string,
  ): Promise<void> {
    await trx
      .updateTable('uns_mqtt_outgoing')
      .set({ packet })
      .where('client_id', '=', clientId)
      .where('message_id', '=', messageId)
      .execute();
  }

  async deleteOutgoing(trx: BrokerTx, clientId: string, messageId: number): Promise<void> {
    await trx
      .deleteFrom('uns_mqtt_outgoing')
      .where('client_id', '=', clientId)
      .where('message_id', '=', messageId)
      .execute();
  }

  async putIncoming(trx: BrokerTx, row: BrokerTables['uns_mqtt_incoming']): Promise<void> {
    await trx
      .insertInto('uns_mqtt_incoming')
      .values(row)
      .onConflict((oc) => oc.columns(['client_id', 'message_id']).doUpdateSet({ packet: row.packet }))
      .execute();
  }

  /** Deletes a session's inbound message (`messageId`) or all of them. */
  async deleteIncoming(trx: BrokerTx, clientId: string, messageId?: number): Promise<void> {
    let q = trx.deleteFrom('uns_mqtt_incoming').where('client_id', '=', clientId);
    if (messageId !== undefined) q = q.where('message_id', '=', messageId);
    await q.execute();
  }

  async putWill(trx: BrokerTx, clientId: string, packet: string): Promise<void> {
    await trx
      .insertInto('uns_mqtt_will')
      .values({ client_id: clientId, packet })
      .onConflict((oc) => oc.column('client_id').doUpdateSet({ packet }))
      .execute();
  }

  async deleteWill(trx: BrokerTx, clientId: string): Promise<void> {
    await trx.deleteFrom('uns_mqtt_will').where('client_id', '=', clientId).execute();
  }
}
