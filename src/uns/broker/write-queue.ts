/**
 * The durable persistence's writes, grouped into transactions (`SqlPersistence`'s write queue):
 * the changes made while one transaction commits go into the next one, and each call resolves
 * only when its change is committed. A batch's retained messages go in one statement, first (the
 * last packet of a topic wins), encoded when the batch is written; one promise for all of them.
 *
 * With a `RetainedWriter` (a SQLite file), retained messages are committed by its thread instead,
 * in batches of their own: one in flight, the next one gathering meanwhile and sent as soon as the
 * one in flight is committed, while the main thread goes on with the next messages. If that thread
 * fails, the batches from then on are written on the main thread.
 */
import type { Packet } from './async-persistence.js';
import { encode } from './packet-json.js';
import type { BrokerRepository, BrokerTx } from './repository.js';
import type { RetainedWriter } from './retained-writer.js';

export type Op = (trx: BrokerTx) => Promise<unknown>;
const noop: Op = () => Promise.resolve();

/** A batch's retained messages, by topic (null: deleted). */
type Retained = Map<string, Packet | null>;

interface Item {
  op: Op;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** A batch's retained packets as the rows' text (null: deleted). */
function encodeRetained(packets: Retained): Map<string, string | null> {
  const out = new Map<string, string | null>();
  for (const [topic, packet] of packets) out.set(topic, packet === null ? null : encode(packet));
  return out;
}

export class WriteQueue {
  readonly #repo: BrokerRepository;
  #queue: Item[] = [];
  /** Retained messages of the next batch. */
  #retained: Retained = new Map();
  /** The commit of the next batch's retained messages: one promise for all of them. */
  #retainedCommit: Promise<void> | undefined;
  #flushing: Promise<void> | undefined;
  readonly #writer: RetainedWriter | undefined;
  /** The retained batch being committed by the writer's thread (or, once it failed, here). */
  #inflight: Promise<void> | undefined;

  constructor(repo: BrokerRepository, writer?: RetainedWriter) {
    this.#repo = repo;
    this.#writer = writer;
  }

  /** Runs `op` in the next transaction; resolves once that transaction commits. */
  write(op: Op): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ op, resolve, reject });
      this.#flushing ??= this.#flush();
    });
  }

  /**
   * Queues the retained message of `topic` (`packet`, a copy the caller keeps unchanged, or null:
   * deleted) for the next batch; the promise of that batch's commit, shared by its messages.
   */
  retain(topic: string, packet: Packet | null): Promise<void> {
    this.#retained.set(topic, packet);
    // One queued write (and one promise) per batch, shared by its retained messages.
    if (this.#writer) return (this.#retainedCommit ??= this.#commitRetained(this.#writer));
    return (this.#retainedCommit ??= this.write(noop));
  }

  /** Waits until every change made so far is committed (or has failed). */
  async flush(): Promise<void> {
    for (;;) {
      const pending = this.#flushing ?? this.#retainedCommit ?? this.#inflight;
      if (!pending) return;
      await pending.catch(() => {});
    }
  }

  /** The next retained batch, committed by `writer`'s thread once the batch before is committed. */
  async #commitRetained(writer: RetainedWriter): Promise<void> {
    // Let the calls of this tick join the batch, and the batch in flight end (more join meanwhile).
    await new Promise((r) => setImmediate(r));
    while (this.#inflight) await this.#inflight.catch(() => {});
    const rows = encodeRetained(this.#retained);
    this.#retained = new Map();
    this.#retainedCommit = undefined;
    const commit = writer.dead
      ? this.#repo.transaction((trx) => this.#repo.writeRetained(trx, rows))
      : writer.write(rows);
    this.#inflight = commit;
    try {
      await commit;
    } finally {
      if (this.#inflight === commit) this.#inflight = undefined;
    }
  }

  async #flush(): Promise<void> {
    // Let the calls of this tick join the batch.
    await new Promise((r) => setImmediate(r));
    while (this.#queue.length > 0) {
      const batch = this.#queue;
      this.#queue = [];
      // With a writer, its batches hold the retained messages (`#commitRetained`).
      let retained: Retained | undefined;
      if (!this.#writer) {
        retained = this.#retained;
        this.#retained = new Map();
        this.#retainedCommit = undefined;
      }
      try {
        await this.#repo.transaction(async (trx) => {
          if (retained && retained.size > 0) await this.#repo.writeRetained(trx, encodeRetained(retained));
          for (const item of batch) await item.op(trx);
        });
        for (const item of batch) item.resolve();
      } catch (err) {
        for (const item of batch) item.reject(err);
      }
    }
    this.#flushing = undefined;
  }
}
