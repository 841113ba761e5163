/**
 * The durable persistence's writes, grouped into transactions (`SqlPersistence`'s write queue):
 * the changes made while one transaction commits go into the next one, and each call resolves
 * only when its change is committed. A batch's retained messages go in one statement, first (the
 * last packet of a topic wins), encoded when the batch is written; one promise for all of them.
 */
import type { Packet } from './async-persistence.js';
import { encode } from './packet-json.js';
import type { BrokerRepository, BrokerTx } from './repository.js';

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
  /** Ends the wait of the next batch for the rest of its turn (`#flush`), while it waits. */
  #kick: (() => void) | undefined;
  /**
   * A batch holding this many retained messages is committed at once, not at the end of the turn
   * (`SqlPersistence.setup`: half the Receive Maximum; by default never).
   */
  commitAt = Number.POSITIVE_INFINITY;

  constructor(repo: BrokerRepository) {
    this.#repo = repo;
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
    const committed = (this.#retainedCommit ??= this.write(noop));
    if (this.#retained.size >= this.commitAt) this.#kick?.();
    return committed;
  }

  /** Waits until every change made so far is committed. */
  async flush(): Promise<void> {
    while (this.#flushing) await this.#flushing;
  }

  async #flush(): Promise<void> {
    // Let the calls of this turn join the batch, unless it is full enough before (`commitAt`).
    await new Promise<void>((r) => {
      this.#kick = r;
      setImmediate(r);
    });
    this.#kick = undefined;
    while (this.#queue.length > 0) {
      const batch = this.#queue;
      const retained = this.#retained;
      this.#queue = [];
      this.#retained = new Map();
      this.#retainedCommit = undefined;
      try {
        await this.#repo.transaction(async (trx) => {
          if (retained.size > 0) await this.#repo.writeRetained(trx, encodeRetained(retained));
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
