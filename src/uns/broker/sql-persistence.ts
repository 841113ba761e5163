/**
 * A durable aedes persistence on the kernel's database (SQLite by default, PostgreSQL when
 * configured): retained messages, subscriptions of persistent sessions, queued outgoing QoS 1/2
 * messages, inbound QoS 2 messages awaiting PUBREL, and wills survive a restart.
 *
 * Reads are answered from memory: retained messages from this class's own map (every retained
 * message, loaded at `setup`), the rest by aedes-persistence's in-memory persistence (its topic
 * trie), which this class fills from the database at `setup` and keeps in step; every change is
 * also written to the database. A SUBSCRIBE's retained messages never read the database. Writes are grouped: the changes made while
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
import type { Database } from '../../kernel/db/index.js';
import type { AsyncPersistence, ClientRef, Packet, Sub } from './async-persistence.js';
import { filterTest } from './aedes-support.js';
import { decode, encode } from './packet-json.js';

export type { AsyncPersistence } from './async-persistence.js';
import { BrokerRepository } from './repository.js';
import { RetainedReader } from './retained-reader.js';
import { RetainedSet, type RetainedLimits } from './retained-set.js';
import { WriteQueue, type Op } from './write-queue.js';

const require = createRequire(import.meta.url);
const MemoryPersistence = require('aedes-persistence/asyncPersistence.js') as new () => AsyncPersistence;
/** aedes's packet copy (the fields a stored packet keeps), as the memory persistence makes it. */
const AedesPacket = require('aedes-packet') as new (original: Packet) => Packet;
/** The answer to a look-up of a QoS 2 message not awaiting PUBREL: one error, made once. */
const NO_SUCH_PACKET = new Error('no such packet');

/** Bounds of each persistent session's queue of outgoing QoS 1/2 messages. */
export interface QueueLimits {
  /** Messages queued per session at most (sent but unacknowledged ones included). */
  maxMessages: number;
  /** Payload and topic bytes queued per session at most. */
  maxBytes: number;
  /**
   * One more message for a full queue: `drop-newest` drops it; `drop-oldest` drops the oldest
   * messages not yet sent until it fits (when every queued message is in flight, it is dropped).
   */
  overflow: 'drop-newest' | 'drop-oldest';
  /** Told of what was dropped. */
  onDrop?: ((clientId: string, dropped: number, reason: string) => void) | undefined;
}

/** One queued message, as this class accounts for it (a mirror of the in-memory queue). */
interface Queued {
  brokerId: unknown;
  brokerCounter: unknown;
  messageId: number | undefined;
  bytes: number;
}

interface SessionQueue {
  entries: Queued[];
  bytes: number;
  /** Messages dropped for this session that aedes may still try to mark as sent. */
  dropped: Set<string>;
}

const queuedBytes = (packet: Packet) =>
  (Buffer.isBuffer(packet.payload)
    ? packet.payload.length
    : Buffer.byteLength(String(packet.payload ?? ''))) + Buffer.byteLength(packet.topic ?? '');
const droppedKey = (packet: Packet) => `${String(packet.brokerId)}:${String(packet.brokerCounter)}`;

function* retainedMatching(
  retained: Map<string, Packet>,
  tests: ((topic: string) => boolean)[],
): Generator<Packet> {
  for (const test of tests) {
    for (const [topic, packet] of retained) if (test(topic)) yield packet;
  }
}

export class SqlPersistence implements AsyncPersistence {
  readonly #repo: BrokerRepository;
  readonly #mem = new MemoryPersistence();
  readonly #wills = new Map<string, Packet>();
  /** Every retained message, by topic: what a SUBSCRIBE's retained messages are read from. */
  readonly #retainedAll: RetainedSet;
  #broker: { id: string; [key: string]: unknown } | undefined;
  #seq = 0;
  readonly #writes: WriteQueue;
  #destroyed = false;
  readonly #limits: QueueLimits;
  readonly #queues = new Map<string, SessionQueue>();

  constructor(database: Database, limits: Partial<QueueLimits & RetainedLimits> = {}) {
    this.#repo = new BrokerRepository(database);
    this.#writes = new WriteQueue(this.#repo);
    this.#retainedAll = new RetainedSet(limits);
    this.#limits = {
      maxMessages: limits.maxMessages ?? Number.POSITIVE_INFINITY,
      maxBytes: limits.maxBytes ?? Number.POSITIVE_INFINITY,
      overflow: limits.overflow ?? 'drop-newest',
      onDrop: limits.onDrop,
    };
  }

  get broker() {
    return this.#broker;
  }

  async setup(broker: { id: string; [key: string]: unknown }): Promise<void> {
    this.#broker = broker;
    // A batch of retained messages commits once it holds half the Receive Maximum told to clients:
    // a publisher whose whole window came in one read gets half of it acknowledged while the
    // broker handles the other half (docs/performance.md, issue 34, h35ret).
    const receiveMaximum = Number(broker.receiveMaximum);
    if (receiveMaximum > 0) this.#writes.commitAt = Math.max(1, Math.floor(receiveMaximum / 2));
    await this.#mem.setup(broker);
    const repo = this.#repo;
    for (const row of await repo.retained()) {
      const packet = decode(row.packet);
      this.#retainedAll.load(packet);
    }
    const subsOf = new Map<string, Sub[]>();
    for (const row of await repo.subscriptions()) {
      let list = subsOf.get(row.client_id);
      if (!list) subsOf.set(row.client_id, (list = []));
      list.push(JSON.parse(row.sub) as Sub);
    }
    for (const [id, subs] of subsOf) await this.#mem.addSubscriptions({ id }, subs);
    await this.#trimStoredQueues();
    for (const row of await repo.outgoing()) {
      this.#seq = Math.max(this.#seq, Number(row.seq));
      // The row's broker id and counter identify the packet (a PUBREL has none of its own).
      const packet = {
        ...decode(row.packet),
        brokerId: row.broker_id,
        brokerCounter: Number(row.broker_counter),
      };
      await this.#mem.outgoingEnqueue({ clientId: row.client_id }, packet);
      this.#queueOf(row.client_id).entries.push({
        brokerId: packet.brokerId,
        brokerCounter: packet.brokerCounter,
        messageId: undefined,
        bytes: queuedBytes(packet),
      });
      this.#queueOf(row.client_id).bytes += queuedBytes(packet);
      if (row.message_id !== null && row.message_id !== undefined) {
        this.#mirrorUpdate(row.client_id, { ...packet, messageId: Number(row.message_id) });
        await this.#mem.outgoingUpdate(
          { id: row.client_id },
          { ...packet, messageId: Number(row.message_id) },
        );
      }
    }
    for (const row of await repo.incoming())
      this.#storeIncoming(row.client_id, { ...decode(row.packet), messageId: Number(row.message_id) });
    for (const row of await repo.wills()) {
      this.#wills.set(row.client_id, decode(row.packet));
    }
  }

  /**
   * Queues stored beyond the limits (by an earlier version, or with other limits) are cut down
   * before they are loaded, from their sizes alone: a start never loads more than the limits.
   */
  async #trimStoredQueues(): Promise<void> {
    const { maxMessages, maxBytes, overflow } = this.#limits;
    if (!Number.isFinite(maxMessages) && !Number.isFinite(maxBytes)) return;
    const sizes = await this.#repo.outgoingSizes();
    const byClient = new Map<string, { seq: number; size: number; sent: boolean }[]>();
    for (const r of sizes) {
      let list = byClient.get(r.client_id);
      if (!list) byClient.set(r.client_id, (list = []));
      // The stored text is base64 in JSON: about 4/3 of the message's bytes.
      list.push({
        seq: Number(r.seq),
        size: Math.floor((Number(r.size) * 3) / 4),
        sent: r.message_id !== null,
      });
    }
    for (const [clientId, list] of byClient) {
      const drop: number[] = [];
      let count = list.length;
      let bytes = list.reduce((a, r) => a + r.size, 0);
      const order = overflow === 'drop-oldest' ? list.filter((r) => !r.sent) : [...list].reverse();
      for (const r of order) {
        if (count <= maxMessages && bytes <= maxBytes) break;
        drop.push(r.seq);
        count--;
        bytes -= r.size;
      }
      if (drop.length === 0) continue;
      await this.#repo.deleteOutgoingSeqs(clientId, drop);
      this.#limits.onDrop?.(clientId, drop.length, 'stored queue beyond the limits at start');
    }
  }

  // --- the write queue (write-queue.ts) -------------------------------------------------------

  #write(op: Op): Promise<void> {
    return this.#writes.write(op);
  }

  /** Waits until every change made so far is committed. */
  flush(): Promise<void> {
    return this.#writes.flush();
  }

  // --- retained -------------------------------------------------------------------------------

  async storeRetained(packet: Packet): Promise<void> {
    // A copy of its fields now (aedes goes on with the packet): what new subscribers get at once,
    // and, for the batch, encoded when the batch is written (the last packet of a topic only).
    const copy = packet.payload.length === 0 ? null : { ...packet };
    if (!this.#retainedAll.put(packet.topic, copy)) return; // over the bound: not retained
    // The batch's retained messages go in one statement (the last of a topic wins); this call
    // resolves when that batch commits, or, for a payload `deferRetainedCommit` named, at once
    // (the commit is then `retainedCommit`'s).
    const committed = this.#writes.retain(packet.topic, copy);
    const payload = packet.payload;
    if (typeof payload === 'object' && this.#deferred.get(payload) === null) {
      committed.catch(() => {});
      this.#deferred.set(payload, committed);
      return;
    }
    await committed;
  }

  /**
   * Payload → the commit of its retained message: null until `storeRetained` has queued it.
   * Keyed by the payload because aedes stores a copy of the packet that keeps the same payload.
   */
  readonly #deferred = new WeakMap<Buffer, Promise<void> | null>();

  /**
   * The next `storeRetained` of this payload resolves once the message is in memory (seen by new
   * subscribers) and queued for the next commit, instead of after the commit: aedes's publish (and
   * its next read of the connection) then need not wait for the commit; `retainedCommit` gives it.
   */
  deferRetainedCommit(payload: Buffer): void {
    this.#deferred.set(payload, null);
  }

  /** The commit of the retained message of a payload `deferRetainedCommit` named, once stored. */
  retainedCommit(payload: Buffer): Promise<void> | undefined {
    const committed = this.#deferred.get(payload);
    this.#deferred.delete(payload);
    return committed ?? undefined;
  }

  createRetainedStream(pattern: string): Readable {
    return this.createRetainedStreamCombi([pattern]);
  }

  /** The retained messages matching any of `patterns` (one per pattern it matches), from memory. */
  createRetainedStreamCombi(patterns: string[]): Readable {
    return new RetainedReader(retainedMatching(this.#retainedAll.map, patterns.map(filterTest)));
  }

  // --- subscriptions --------------------------------------------------------------------------

  async addSubscriptions(client: ClientRef, subs: Sub[]): Promise<void> {
    await this.#mem.addSubscriptions(client, subs);
    const id = client.id;
    const rows = subs.map((s) => ({ client_id: id, topic: s.topic, sub: JSON.stringify(s) }));
    await this.#write((trx) => this.#repo.putSubscriptions(trx, rows));
  }

  async removeSubscriptions(client: ClientRef, topics: string[]): Promise<void> {
    await this.#mem.removeSubscriptions(client, topics);
    const id = client.id;
    if (topics.length === 0) return;
    await this.#write((trx) => this.#repo.deleteSubscriptions(trx, id, topics));
  }

  subscriptionsByClient(client: ClientRef): Promise<Sub[]> {
    return this.#mem.subscriptionsByClient(client);
  }

  countOffline(): Promise<{ subsCount: number; clientsCount: number }> {
    return this.#mem.countOffline();
  }

  async subscriptionsByTopic(topic: string): Promise<unknown[]> {
    // Only persistent sessions' subscriptions are kept here (aedes adds no clean session's): with
    // none, as with clean sessions only, every QoS 1/2 publish's look-up (aedes's enqueueOffline)
    // skips splitting its topic and walking the trie (issue 34: 4% of a retained publish's CPU).
    if ((await this.#mem.countOffline()).subsCount === 0) return [];
    return this.#mem.subscriptionsByTopic(topic);
  }

  async cleanSubscriptions(client: ClientRef): Promise<void> {
    await this.#mem.cleanSubscriptions(client);
    const id = client.id;
    await this.#write((trx) => this.#repo.deleteSubscriptions(trx, id));
  }

  // --- outgoing -------------------------------------------------------------------------------

  async outgoingEnqueue(sub: { clientId: string }, packet: Packet): Promise<void> {
    const ops: Op[] = [];
    if (!this.#admit(sub.clientId, packet, ops, true)) {
      if (ops.length > 0) {
        await this.#write(async (trx) => {
          for (const op of ops) await op(trx);
        });
      }
      return;
    }
    await this.#mem.outgoingEnqueue(sub, packet);
    ops.push(this.#enqueueOp(sub.clientId, packet));
    await this.#write(async (trx) => {
      for (const op of ops) await op(trx);
    });
  }

  async outgoingEnqueueCombi(subs: { clientId: string }[], packet: Packet): Promise<void> {
    if (subs.length === 0) return; // every QoS 1/2 publish without a persistent session's subscriber
    const ops: Op[] = [];
    const admitted = subs.filter((s) => this.#admit(s.clientId, packet, ops));
    await this.#mem.outgoingEnqueueCombi(admitted, packet);
    for (const s of admitted) ops.push(this.#enqueueOp(s.clientId, packet));
    if (ops.length === 0) return;
    await this.#write(async (trx) => {
      for (const op of ops) await op(trx);
    });
  }

  #queueOf(clientId: string): SessionQueue {
    let q = this.#queues.get(clientId);
    if (!q) this.#queues.set(clientId, (q = { entries: [], bytes: 0, dropped: new Set() }));
    return q;
  }

  /**
   * Whether `packet` joins `clientId`'s queue, after making room by the overflow policy (the
   * deletions of what is dropped are added to `ops`).
   */
  #admit(clientId: string, packet: Packet, ops: Op[], online = false): boolean {
    const { maxMessages, maxBytes, overflow } = this.#limits;
    const q = this.#queueOf(clientId);
    const size = queuedBytes(packet);
    const fits = () => q.entries.length + 1 <= maxMessages && q.bytes + size <= maxBytes;
    if (!fits() && overflow === 'drop-oldest' && size <= maxBytes) {
      let dropped = 0;
      for (let i = 0; i < q.entries.length && !fits();) {
        const e = q.entries[i]!;
        if (e.messageId !== undefined) {
          i++;
          continue;
        }
        q.entries.splice(i, 1);
        q.bytes -= e.bytes;
        dropped++;
        // The in-memory queue drops its first unsent message the same way (by messageId undefined).
        void this.#mem.outgoingClearMessageId(
          { id: clientId },
          { topic: '', payload: '', messageId: undefined },
        );
        const brokerId = String(e.brokerId ?? '');
        const counter = Number(e.brokerCounter ?? 0);
        ops.push((trx) => this.#repo.deleteUnsentOutgoing(trx, clientId, brokerId, counter));
      }
      if (dropped > 0)
        this.#limits.onDrop?.(clientId, dropped, 'oldest unsent messages dropped for a new one');
    }
    if (!fits()) {
      // A connected session's aedes goes on to send it (and to mark it sent): let that pass.
      if (online) {
        if (q.dropped.size >= 10_000) q.dropped.clear();
        q.dropped.add(droppedKey(packet));
      }
      this.#limits.onDrop?.(clientId, 1, 'new message dropped');
      return false;
    }
    q.entries.push({
      brokerId: packet.brokerId,
      brokerCounter: packet.brokerCounter,
      messageId: undefined,
      bytes: size,
    });
    q.bytes += size;
    return true;
  }

  /** The in-memory queue's `outgoingUpdate`, on the accounting mirror. */
  #mirrorUpdate(clientId: string, packet: Packet): void {
    const q = this.#queues.get(clientId);
    if (!q) return;
    for (let i = 0; i < q.entries.length; i++) {
      const e = q.entries[i]!;
      if (e.brokerId === packet.brokerId) {
        if (e.brokerCounter === packet.brokerCounter) {
          e.messageId = packet.messageId;
          return;
        }
      } else if (e.messageId === packet.messageId) {
        const size = queuedBytes(packet);
        q.bytes += size - e.bytes;
        q.entries[i] = {
          brokerId: packet.brokerId,
          brokerCounter: packet.brokerCounter,
          messageId: packet.messageId,
          bytes: size,
        };
        return;
      }
    }
  }

  /** The in-memory queue's `outgoingClearMessageId`, on the accounting mirror. */
  #mirrorClear(clientId: string, messageId: number | undefined): void {
    const q = this.#queues.get(clientId);
    if (!q) return;
    const i = q.entries.findIndex((e) => e.messageId === messageId);
    if (i < 0) return;
    q.bytes -= q.entries[i]!.bytes;
    q.entries.splice(i, 1);
    if (q.entries.length === 0 && q.dropped.size === 0) this.#queues.delete(clientId);
  }

  /** Queued messages and bytes of every session together, and how many sessions hold some. */
  queuedTotal(): { messages: number; bytes: number; sessions: number } {
    let messages = 0;
    let bytes = 0;
    for (const q of this.#queues.values()) {
      messages += q.entries.length;
      bytes += q.bytes;
    }
    return { messages, bytes, sessions: this.#queues.size };
  }

  /** Queued messages and bytes of a session, as counted against the limits. */
  queued(clientId: string): { messages: number; bytes: number } {
    const q = this.#queues.get(clientId);
    return { messages: q?.entries.length ?? 0, bytes: q?.bytes ?? 0 };
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
    return (trx) => this.#repo.insertOutgoing(trx, row);
  }

  async outgoingUpdate(client: ClientRef, packet: Packet): Promise<unknown> {
    let result: unknown;
    try {
      result = await this.#mem.outgoingUpdate(client, packet);
    } catch (err) {
      // A message the queue limit dropped is delivered to the connected session, not kept.
      const q = this.#queues.get(client.id);
      if (q?.dropped.delete(droppedKey(packet))) return undefined;
      throw err;
    }
    this.#mirrorUpdate(client.id, packet);
    const id = client.id;
    const brokerId = String(packet.brokerId);
    const counter = Number(packet.brokerCounter);
    const messageId = packet.messageId ?? null;
    const text = encode({ ...packet, messageId: undefined });
    // A PUBREL carries no broker id or counter of its own.
    const identified = packet.brokerId !== undefined && Number.isFinite(counter);
    await this.#write(async (trx) => {
      const found = identified && (await this.#repo.markOutgoingSent(trx, id, brokerId, counter, messageId));
      if (!found && messageId !== null) {
        // The packet in flight with this message id is replaced (as in memory): a PUBREL, or a
        // packet of another broker.
        await this.#repo.replaceOutgoingPacket(trx, id, messageId, text);
      }
    });
    return result;
  }

  async outgoingClearMessageId(client: ClientRef, packet: Packet): Promise<Packet | undefined> {
    const removed = await this.#mem.outgoingClearMessageId(client, packet);
    if (removed) {
      this.#mirrorClear(client.id, packet.messageId);
      const id = client.id;
      const messageId = Number(packet.messageId);
      await this.#write((trx) => this.#repo.deleteOutgoing(trx, id, messageId));
    }
    return removed;
  }

  outgoingStream(client: ClientRef): Readable {
    return this.#mem.outgoingStream(client);
  }

  // --- incoming (QoS 2 awaiting PUBREL) ---------------------------------------------------------

  // A clean session (aedes's `client.clean`: session expiry 0) ends with its connection, so its
  // QoS 2 messages awaiting PUBREL are kept in memory only: after a restart nobody could resume them.
  async incomingStorePacket(client: ClientRef & { clean?: boolean }, packet: Packet): Promise<void> {
    this.#storeIncoming(client.id, packet);
    if (client.clean === true) return;
    const row = { client_id: client.id, message_id: Number(packet.messageId), packet: encode(packet) };
    await this.#write((trx) => this.#repo.putIncoming(trx, row));
  }

  /**
   * QoS 2 messages awaiting PUBREL, by client and message id: kept here, not in the memory
   * persistence. aedes looks every new QoS 2 PUBLISH up first (is it a duplicate?), and the memory
   * persistence answered each miss with a new `Error` (its stack captured): a fifth to a third of the
   * UNS's CPU per QoS 2 message 1→1 (docs/performance.md, issue 34). A miss here is one shared error.
   */
  readonly #incoming = new Map<string, Map<number, Packet>>();

  #storeIncoming(clientId: string, packet: Packet): void {
    let store = this.#incoming.get(clientId);
    if (store === undefined) this.#incoming.set(clientId, (store = new Map()));
    const kept = new AedesPacket(packet);
    kept.messageId = packet.messageId;
    store.set(Number(packet.messageId), kept);
  }

  incomingGetPacket(client: ClientRef, packet: Packet): Promise<Packet> {
    const kept = this.#incoming.get(client.id)?.get(Number(packet.messageId));
    return kept === undefined ? Promise.reject(NO_SUCH_PACKET) : Promise.resolve(kept);
  }

  async incomingDelPacket(client: ClientRef & { clean?: boolean }, packet: Packet): Promise<void> {
    const store = this.#incoming.get(client.id);
    if (store === undefined || !store.delete(Number(packet.messageId))) throw NO_SUCH_PACKET;
    if (store.size === 0) this.#incoming.delete(client.id);
    if (client.clean === true) return;
    const id = client.id;
    const messageId = Number(packet.messageId);
    await this.#write((trx) => this.#repo.deleteIncoming(trx, id, messageId));
  }

  async cleanIncoming(client: ClientRef): Promise<void> {
    this.#incoming.delete(client.id);
    const id = client.id;
    await this.#write((trx) => this.#repo.deleteIncoming(trx, id));
  }

  // --- wills (kept here, not in memory persistence, so that a restored will keeps the id of the
  // broker that stored it and is published by the next broker as the will of a dead one) -------

  async putWill(client: ClientRef, packet: Packet): Promise<void> {
    packet.brokerId = this.#broker?.id;
    packet.clientId = client.id;
    this.#wills.set(client.id, packet);
    const text = encode(packet);
    const id = client.id;
    await this.#write((trx) => this.#repo.putWill(trx, id, text));
  }

  async getWill(client: ClientRef): Promise<Packet | undefined> {
    return this.#wills.get(client.id);
  }

  async delWill(client: ClientRef): Promise<Packet | undefined> {
    const will = this.#wills.get(client.id);
    this.#wills.delete(client.id);
    const id = client.id;
    await this.#write((trx) => this.#repo.deleteWill(trx, id));
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
