/**
 * A durable aedes persistence on the kernel's database (SQLite by default, PostgreSQL when
 * configured): retained messages, subscriptions of persistent sessions, queued outgoing QoS 1/2
 * messages, inbound QoS 2 messages awaiting PUBREL, and wills survive a restart.
 *
 * Reads are answered by aedes-persistence's own in-memory persistence (its topic trie and
 * retained-message matching), which this class fills from the database at `setup` and keeps in
 * step; every change is also written to the database. Writes are grouped: the changes made while
 * one transaction commits go into the next one, and each call resolves only when its change is
 * committed, so a QoS 1 PUBACK or QoS 2 PUBREC that aedes sends after the call means the message
 * is on disk. Proven against aedes-persistence's abstract conformance suite
 * (test/uns/sql-persistence.test.ts) plus a restart test of its own.
 *
 * One broker process per database: a shared session store for several processes is the Redis
 * persistence (`--redis-url`).
 */
import { createRequire } from 'node:module';
import { Readable } from 'node:stream';
import type { Kysely, Transaction } from '../../kernel/db/index.js';
import type { Database } from '../../kernel/db/index.js';

const require = createRequire(import.meta.url);
const MemoryPersistence = require('aedes-persistence/asyncPersistence.js') as new () => AsyncPersistence;

type Packet = Record<string, any> & { topic: string; payload: Buffer | string; messageId?: number };
interface ClientRef {
  id: string;
}
interface Sub {
  topic: string;
  qos: number;
  [k: string]: unknown;
}

/** The async persistence interface aedes 1.x calls (aedes-persistence 11). */
export interface AsyncPersistence {
  setup(broker: any): Promise<void>;
  storeRetained(packet: Packet): Promise<void>;
  createRetainedStream(pattern: string): Readable;
  createRetainedStreamCombi(patterns: string[]): Readable;
  addSubscriptions(client: ClientRef, subs: Sub[]): Promise<void>;
  removeSubscriptions(client: ClientRef, topics: string[]): Promise<void>;
  subscriptionsByClient(client: ClientRef): Promise<Sub[]>;
  countOffline(): Promise<{ subsCount: number; clientsCount: number }>;
  subscriptionsByTopic(topic: string): Promise<unknown[]>;
  cleanSubscriptions(client: ClientRef): Promise<void>;
  outgoingEnqueue(sub: { clientId: string }, packet: Packet): Promise<void>;
  outgoingEnqueueCombi(subs: { clientId: string }[], packet: Packet): Promise<void>;
  outgoingUpdate(client: ClientRef, packet: Packet): Promise<unknown>;
  outgoingClearMessageId(client: ClientRef, packet: Packet): Promise<Packet | undefined>;
  outgoingStream(client: ClientRef): Readable;
  incomingStorePacket(client: ClientRef, packet: Packet): Promise<void>;
  incomingGetPacket(client: ClientRef, packet: Packet): Promise<Packet>;
  incomingDelPacket(client: ClientRef, packet: Packet): Promise<void>;
  cleanIncoming?(client: ClientRef): Promise<void>;
  putWill(client: ClientRef, packet: Packet): Promise<void>;
  getWill(client: ClientRef): Promise<Packet | undefined>;
  delWill(client: ClientRef): Promise<Packet | undefined>;
  streamWill(brokers?: Record<string, number>): Readable;
  getClientList(topic: string): Readable;
  destroy(): Promise<void>;
}

type Op = (trx: Transaction<any>) => Promise<unknown>;

export class SqlPersistence implements AsyncPersistence {
  readonly #db: Kysely<any>;
  readonly #database: Database;
  readonly #mem = new MemoryPersistence();
  readonly #wills = new Map<string, Packet>();
  #broker: { id: string; [key: string]: unknown } | undefined;
  #seq = 0;
  #queue: { op: Op; resolve: () => void; reject: (err: unknown) => void }[] = [];
  #flushing: Promise<void> | undefined;
  #destroyed = false;

  constructor(database: Database) {
    this.#database = database;
    this.#db = database.db;
  }

  get broker() {
    return this.#broker;
  }

  async setup(broker: { id: string; [key: string]: unknown }): Promise<void> {
    this.#broker = broker;
    await this.#mem.setup(broker);
    const db = this.#db;
    for (const row of await db.selectFrom('uns_mqtt_retained').selectAll().execute()) {
      await this.#mem.storeRetained(decode(row.packet));
    }
    const subsOf = new Map<string, Sub[]>();
    for (const row of await db.selectFrom('uns_mqtt_subscription').selectAll().execute()) {
      let list = subsOf.get(row.client_id);
      if (!list) subsOf.set(row.client_id, (list = []));
      list.push(JSON.parse(row.sub) as Sub);
    }
    for (const [id, subs] of subsOf) await this.#mem.addSubscriptions({ id }, subs);
    const outgoing = await db
      .selectFrom('uns_mqtt_outgoing')
      .selectAll()
      .orderBy('client_id')
      .orderBy('seq')
      .execute();
    for (const row of outgoing) {
      this.#seq = Math.max(this.#seq, Number(row.seq));
      // The row's broker id and counter identify the packet (a PUBREL has none of its own).
      const packet = {
        ...decode(row.packet),
        brokerId: row.broker_id,
        brokerCounter: Number(row.broker_counter),
      };
      await this.#mem.outgoingEnqueue({ clientId: row.client_id }, packet);
      if (row.message_id !== null && row.message_id !== undefined) {
        await this.#mem.outgoingUpdate(
          { id: row.client_id },
          { ...packet, messageId: Number(row.message_id) },
        );
      }
    }
    for (const row of await db.selectFrom('uns_mqtt_incoming').selectAll().execute()) {
      await this.#mem.incomingStorePacket(
        { id: row.client_id },
        { ...decode(row.packet), messageId: Number(row.message_id) },
      );
    }
    for (const row of await db.selectFrom('uns_mqtt_will').selectAll().execute()) {
      this.#wills.set(row.client_id, decode(row.packet));
    }
  }

  // --- the write queue ------------------------------------------------------------------------

  #write(op: Op): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ op, resolve, reject });
      this.#flushing ??= this.#flush();
    });
  }

  async #flush(): Promise<void> {
    // Let the calls of this tick join the batch.
    await new Promise((r) => setImmediate(r));
    while (this.#queue.length > 0) {
      const batch = this.#queue;
      this.#queue = [];
      try {
        await this.#database.transaction(async (trx) => {
          for (const item of batch) await item.op(trx);
        });
        for (const item of batch) item.resolve();
      } catch (err) {
        for (const item of batch) item.reject(err);
      }
    }
    this.#flushing = undefined;
  }

  /** Waits until every change made so far is committed. */
  async flush(): Promise<void> {
    while (this.#flushing) await this.#flushing;
  }

  // --- retained -------------------------------------------------------------------------------

  async storeRetained(packet: Packet): Promise<void> {
    await this.#mem.storeRetained(packet);
    const topic = packet.topic;
    if (packet.payload.length === 0) {
      await this.#write((trx) => trx.deleteFrom('uns_mqtt_retained').where('topic', '=', topic).execute());
    } else {
      const text = encode(packet);
      await this.#write((trx) =>
        trx
          .insertInto('uns_mqtt_retained')
          .values({ topic, packet: text })
          .onConflict((oc) => oc.column('topic').doUpdateSet({ packet: text }))
          .execute(),
      );
    }
  }

  createRetainedStream(pattern: string): Readable {
    return this.#mem.createRetainedStream(pattern);
  }

  createRetainedStreamCombi(patterns: string[]): Readable {
    return this.#mem.createRetainedStreamCombi(patterns);
  }

  // --- subscriptions --------------------------------------------------------------------------

  async addSubscriptions(client: ClientRef, subs: Sub[]): Promise<void> {
    await this.#mem.addSubscriptions(client, subs);
    const id = client.id;
    const rows = subs.map((s) => ({ client_id: id, topic: s.topic, sub: JSON.stringify(s) }));
    await this.#write(async (trx) => {
      for (const row of rows) {
        await trx
          .insertInto('uns_mqtt_subscription')
          .values(row)
          .onConflict((oc) => oc.columns(['client_id', 'topic']).doUpdateSet({ sub: row.sub }))
          .execute();
      }
    });
  }

  async removeSubscriptions(client: ClientRef, topics: string[]): Promise<void> {
    await this.#mem.removeSubscriptions(client, topics);
    const id = client.id;
    if (topics.length === 0) return;
    await this.#write((trx) =>
      trx
        .deleteFrom('uns_mqtt_subscription')
        .where('client_id', '=', id)
        .where('topic', 'in', topics)
        .execute(),
    );
  }

  subscriptionsByClient(client: ClientRef): Promise<Sub[]> {
    return this.#mem.subscriptionsByClient(client);
  }

  countOffline(): Promise<{ subsCount: number; clientsCount: number }> {
    return this.#mem.countOffline();
  }

  subscriptionsByTopic(topic: string): Promise<unknown[]> {
    return this.#mem.subscriptionsByTopic(topic);
  }

  async cleanSubscriptions(client: ClientRef): Promise<void> {
    await this.#mem.cleanSubscriptions(client);
    const id = client.id;
    await this.#write((trx) => trx.deleteFrom('uns_mqtt_subscription').where('client_id', '=', id).execute());
  }

  // --- outgoing -------------------------------------------------------------------------------

  async outgoingEnqueue(sub: { clientId: string }, packet: Packet): Promise<void> {
    await this.#mem.outgoingEnqueue(sub, packet);
    await this.#write(this.#enqueueOp(sub.clientId, packet));
  }

  async outgoingEnqueueCombi(subs: { clientId: string }[], packet: Packet): Promise<void> {
    await this.#mem.outgoingEnqueueCombi(subs, packet);
    if (subs.length === 0) return;
    const ops = subs.map((s) => this.#enqueueOp(s.clientId, packet));
    await this.#write(async (trx) => {
      for (const op of ops) await op(trx);
    });
  }

  #enqueueOp(clientId: string, packet: Packet): Op {
    const row = {
      client_id: clientId,
      seq: ++this.#seq,
      broker_id: String(packet.brokerId ?? this.#broker?.id ?? ''),
      broker_counter: Number(packet.brokerCounter ?? 0),
      message_id: null,
      packet: encode({ ...packet, messageId: undefined }),
    };
    return (trx) => trx.insertInto('uns_mqtt_outgoing').values(row).execute();
  }

  async outgoingUpdate(client: ClientRef, packet: Packet): Promise<unknown> {
    const result = await this.#mem.outgoingUpdate(client, packet);
    const id = client.id;
    const brokerId = String(packet.brokerId);
    const counter = Number(packet.brokerCounter);
    const messageId = packet.messageId ?? null;
    const text = encode({ ...packet, messageId: undefined });
    // A PUBREL carries no broker id or counter of its own.
    const identified = packet.brokerId !== undefined && Number.isFinite(counter);
    await this.#write(async (trx) => {
      const res = identified
        ? await trx
            .updateTable('uns_mqtt_outgoing')
            .set({ message_id: messageId })
            .where('client_id', '=', id)
            .where('broker_id', '=', brokerId)
            .where('broker_counter', '=', counter)
            .executeTakeFirst()
        : { numUpdatedRows: 0n };
      if (Number(res.numUpdatedRows) === 0 && messageId !== null) {
        // The packet in flight with this message id is replaced (as in memory): a PUBREL, or a
        // packet of another broker.
        await trx
          .updateTable('uns_mqtt_outgoing')
          .set({ packet: text })
          .where('client_id', '=', id)
          .where('message_id', '=', messageId)
          .execute();
      }
    });
    return result;
  }

  async outgoingClearMessageId(client: ClientRef, packet: Packet): Promise<Packet | undefined> {
    const removed = await this.#mem.outgoingClearMessageId(client, packet);
    if (removed) {
      const id = client.id;
      const messageId = Number(packet.messageId);
      await this.#write((trx) =>
        trx
          .deleteFrom('uns_mqtt_outgoing')
          .where('client_id', '=', id)
          .where('message_id', '=', messageId)
          .execute(),
      );
    }
    return removed;
  }

  outgoingStream(client: ClientRef): Readable {
    return this.#mem.outgoingStream(client);
  }

  // --- incoming (QoS 2 awaiting PUBREL) ---------------------------------------------------------

  async incomingStorePacket(client: ClientRef, packet: Packet): Promise<void> {
    await this.#mem.incomingStorePacket(client, packet);
    const row = { client_id: client.id, message_id: Number(packet.messageId), packet: encode(packet) };
    await this.#write((trx) =>
      trx
        .insertInto('uns_mqtt_incoming')
        .values(row)
        .onConflict((oc) => oc.columns(['client_id', 'message_id']).doUpdateSet({ packet: row.packet }))
        .execute(),
    );
  }

  incomingGetPacket(client: ClientRef, packet: Packet): Promise<Packet> {
    return this.#mem.incomingGetPacket(client, packet);
  }

  async incomingDelPacket(client: ClientRef, packet: Packet): Promise<void> {
    await this.#mem.incomingDelPacket(client, packet);
    const id = client.id;
    const messageId = Number(packet.messageId);
    await this.#write((trx) =>
      trx
        .deleteFrom('uns_mqtt_incoming')
        .where('client_id', '=', id)
        .where('message_id', '=', messageId)
        .execute(),
    );
  }

  async cleanIncoming(client: ClientRef): Promise<void> {
    await this.#mem.cleanIncoming?.(client);
    const id = client.id;
    await this.#write((trx) => trx.deleteFrom('uns_mqtt_incoming').where('client_id', '=', id).execute());
  }

  // --- wills (kept here, not in memory persistence, so that a restored will keeps the id of the
  // broker that stored it and is published by the next broker as the will of a dead one) -------

  async putWill(client: ClientRef, packet: Packet): Promise<void> {
    packet.brokerId = this.#broker?.id;
    packet.clientId = client.id;
    this.#wills.set(client.id, packet);
    const text = encode(packet);
    const id = client.id;
    await this.#write((trx) =>
      trx
        .insertInto('uns_mqtt_will')
        .values({ client_id: id, packet: text })
        .onConflict((oc) => oc.column('client_id').doUpdateSet({ packet: text }))
        .execute(),
    );
  }

  async getWill(client: ClientRef): Promise<Packet | undefined> {
    return this.#wills.get(client.id);
  }

  async delWill(client: ClientRef): Promise<Packet | undefined> {
    const will = this.#wills.get(client.id);
    this.#wills.delete(client.id);
    const id = client.id;
    await this.#write((trx) => trx.deleteFrom('uns_mqtt_will').where('client_id', '=', id).execute());
    return will;
  }

  streamWill(brokers: Record<string, number> = {}): Readable {
    return Readable.from([...this.#wills.values()].filter((w) => !brokers[w.brokerId as string]));
  }

  getClientList(topic: string): Readable {
    return this.#mem.getClientList(topic);
  }

  async destroy(): Promise<void> {
    if (this.#destroyed) throw new Error('destroyed called twice!');
    this.#destroyed = true;
    await this.flush();
    await this.#mem.destroy();
  }
}

function encode(packet: Packet): string {
  const { payload, ...rest } = packet;
  return Buffer.isBuffer(payload)
    ? JSON.stringify({ ...rest, payload: payload.toString('base64'), b64: true })
    : JSON.stringify({ ...rest, payload });
}

function decode(text: string): Packet {
  const { b64, payload, ...rest } = JSON.parse(text) as Packet & { b64?: boolean };
  return { ...rest, payload: b64 ? Buffer.from(payload as string, 'base64') : payload } as Packet;
}
