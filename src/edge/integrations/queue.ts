/**
 * The store-and-forward queue of one integration instance: an SQLite file of its own in the data
 * directory (`integrations/queue-<instance>.db`), WAL journal with `synchronous = FULL`, so that a
 * committed message survives SIGKILL and power loss. Every outgoing message is appended here
 * before it is sent, and deleted only once the remote acknowledged it; a reconnect, a config
 * change or a restart never empties the file (deleting the instance does).
 *
 * Appends are grouped: messages pushed in one turn of the event loop are committed together on
 * the next (`setImmediate`), or at once when `FLUSH_AT` of them wait. Acknowledgements are applied
 * in the same commits. The queue is bounded by messages and by bytes (topic + payload); when a
 * commit would pass a bound, `drop-oldest` deletes the oldest queued messages and `drop-newest`
 * refuses the new ones; both count in `dropped`.
 */
import { mkdirSync, rmSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';

export type QueueFullPolicy = 'drop-oldest' | 'drop-newest';

export interface QueueLimits {
  maxBytes: number;
  maxMessages: number;
  policy: QueueFullPolicy;
  /** `normal` (default): survives SIGKILL and crashes; `full`: also power loss (fsync per commit). */
  sync?: 'normal' | 'full';
}

export interface QueuedMessage {
  seq: number;
  /** Enqueue time, epoch ms. */
  ts: number;
  /** The remote topic / queue / table / stream, resolved. */
  topic: string;
  /** The DataHub subject it came from. */
  subject: string;
  payload: Buffer;
}

export interface QueueStats {
  depth: number;
  bytes: number;
  /** Size of the file and its WAL on disk. */
  fileBytes: number;
  /** Enqueue time of the oldest message, or null when empty. */
  oldestTs: number | null;
}

/** Pending appends past which a commit happens at once instead of on the next turn. */
export const FLUSH_AT = 10_000;

/**
 * The committed messages kept in memory as well (the tail), so that the sender reads what was just
 * committed without a query: at most this many messages and `TAIL_MAX_BYTES` (topic + payload).
 * Past either bound the tail is dropped and reads go to the file until the queue is empty again.
 */
export const TAIL_MAX_MESSAGES = 20_000;
export const TAIL_MAX_BYTES = 8 * 1024 * 1024;

type Pending = { ts: number; topic: string; subject: string; payload: Buffer };

/** A message's bytes as the bounds count them (topic + payload). */
const tailSize = (m: { topic: string; payload: Buffer }) => Buffer.byteLength(m.topic) + m.payload.length;

export class DiskQueue {
  readonly path: string;
  readonly #db: SQLite.Database;
  readonly #limits: QueueLimits;
  readonly #insert: SQLite.Statement;
  readonly #read: SQLite.Statement;
  readonly #countUpTo: SQLite.Statement;
  readonly #deleteUpTo: SQLite.Statement;
  readonly #oldest: SQLite.Statement;
  readonly #oldestN: SQLite.Statement;
  #pending: Pending[] = [];
  /**
   * Every committed row of the file, oldest first from `#tailHead`, while `#tailComplete` (the
   * file was empty at open, or became empty since); their bytes in `#tailBytes`.
   */
  #tail: QueuedMessage[] = [];
  #tailHead = 0;
  #tailBytes = 0;
  #tailComplete = false;
  #ackUpTo = 0;
  #scheduled = false;
  #depth = 0;
  #bytes = 0;
  #closed = false;
  readonly #full: boolean;
  /** Messages dropped by the full policy since open. */
  dropped = 0;
  /** Messages appended since open. */
  enqueued = 0;
  /** Called after each commit that added messages. */
  onCommit: (() => void) | undefined;

  constructor(path: string, limits: QueueLimits) {
    this.path = path;
    this.#limits = limits;
    mkdirSync(dirname(path), { recursive: true });
    const db = new SQLite(path);
    db.pragma('auto_vacuum = INCREMENTAL');
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    this.#full = limits.sync === 'full';
    db.exec(
      `create table if not exists q (seq integer primary key autoincrement, ts integer not null,
        topic text not null, subject text not null, payload blob not null)`,
    );
    this.#db = db;
    this.#insert = db.prepare('insert into q (ts, topic, subject, payload) values (?, ?, ?, ?)');
    this.#read = db.prepare(
      'select seq, ts, topic, subject, payload from q where seq > ? order by seq limit ?',
    );
    this.#countUpTo = db.prepare(
      'select count(*) as n, coalesce(sum(length(topic) + length(payload)), 0) as b from q where seq <= ?',
    );
    this.#deleteUpTo = db.prepare('delete from q where seq <= ?');
    this.#oldest = db.prepare('select ts from q order by seq limit 1');
    this.#oldestN = db.prepare(
      'select max(seq) as seq, count(*) as n, coalesce(sum(length(topic) + length(payload)), 0) as b from (select seq, topic, payload from q order by seq limit ?)',
    );
    const totals = db
      .prepare('select count(*) as n, coalesce(sum(length(topic) + length(payload)), 0) as b from q')
      .get() as { n: number; b: number };
    this.#depth = totals.n;
    this.#bytes = totals.b;
    this.#tailComplete = totals.n === 0;
  }

  get depth(): number {
    return this.#depth + this.#pending.length;
  }

  /** Appends a message (committed on the next turn of the event loop). */
  push(topic: string, subject: string, payload: Buffer, ts = Date.now()): void {
    if (this.#closed) return;
    this.#pending.push({ ts, topic, subject, payload });
    this.enqueued++;
    if (this.#pending.length >= FLUSH_AT) this.flush();
    else this.#schedule();
  }

  /** Deletes every message up to `seq` (acknowledged by the remote), on the next commit. */
  ack(seq: number): void {
    if (seq > this.#ackUpTo) {
      this.#ackUpTo = seq;
      this.#schedule();
    }
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    const run = () => {
      this.#scheduled = false;
      this.flush();
    };
    if (this.#full) setTimeout(run, 5);
    else setImmediate(run);
  }

  /** Commits pending appends and acknowledgements now. */
  flush(): void {
    if (this.#closed) return;
    const pending = this.#pending;
    const ackUpTo = this.#ackUpTo;
    if (pending.length === 0 && ackUpTo === 0) return;
    this.#pending = [];
    this.#ackUpTo = 0;
    this.#commit(pending, ackUpTo);
    if (pending.length > 0) this.onCommit?.();
  }

  #commit = (pending: Pending[], ackUpTo: number): void => {
    const fsync = this.#full && pending.length > 0;
    if (fsync) this.#db.pragma('synchronous = FULL');
    try {
      this.#transaction(pending, ackUpTo);
    } finally {
      if (fsync) this.#db.pragma('synchronous = NORMAL');
    }
    if (this.#depth === 0 && ackUpTo > 0) this.#db.pragma('incremental_vacuum');
  };

  #transaction(pending: Pending[], ackUpTo: number): void {
    /** What the commit deleted (every row up to this seq) and added, for the tail once committed. */
    let deletedUpTo = ackUpTo;
    const added: QueuedMessage[] = [];
    this.#db.transaction(() => {
      if (ackUpTo > 0) {
        const c = this.#tailCount(ackUpTo) ?? (this.#countUpTo.get(ackUpTo) as { n: number; b: number });
        if (c.n > 0) {
          this.#deleteUpTo.run(ackUpTo);
          this.#depth -= c.n;
          this.#bytes -= c.b;
        }
      }
      if (pending.length === 0) return;
      let incoming = pending;
      const { maxBytes, maxMessages, policy } = this.#limits;
      const size = (m: Pending) => Buffer.byteLength(m.topic) + m.payload.length;
      let addBytes = 0;
      for (const m of incoming) addBytes += size(m);
      if (this.#depth + incoming.length > maxMessages || this.#bytes + addBytes > maxBytes) {
        if (policy === 'drop-newest') {
          const kept: Pending[] = [];
          let n = this.#depth;
          let b = this.#bytes;
          for (const m of incoming) {
            const s = size(m);
            if (n + 1 <= maxMessages && b + s <= maxBytes) {
              kept.push(m);
              n++;
              b += s;
            } else this.dropped++;
          }
          incoming = kept;
        } else {
          // Drop the oldest queued rows (and, past those, the oldest of the incoming ones).
          let overCount = this.#depth + incoming.length - maxMessages;
          let overBytes = this.#bytes + addBytes - maxBytes;
          while ((overCount > 0 || overBytes > 0) && this.#depth > 0) {
            const batch = Math.max(overCount, 1, Math.min(this.#depth, 1000));
            const o = this.#oldestN.get(Math.min(batch, this.#depth)) as {
              seq: number;
              n: number;
              b: number;
            };
            this.#deleteUpTo.run(o.seq);
            deletedUpTo = Math.max(deletedUpTo, o.seq);
            this.#depth -= o.n;
            this.#bytes -= o.b;
            this.dropped += o.n;
            overCount -= o.n;
            overBytes -= o.b;
          }
          let start = 0;
          while ((overCount > 0 || overBytes > 0) && start < incoming.length) {
            overCount--;
            overBytes -= size(incoming[start]!);
            start++;
            this.dropped++;
          }
          incoming = incoming.slice(start);
        }
      }
      for (const m of incoming) {
        const seq = Number(this.#insert.run(m.ts, m.topic, m.subject, m.payload).lastInsertRowid);
        added.push({ seq, ts: m.ts, topic: m.topic, subject: m.subject, payload: m.payload });
        this.#bytes += size(m);
      }
      this.#depth += incoming.length;
    })();
    this.#updateTail(deletedUpTo, added);
  }

  /** Count and bytes of the rows up to `seq`, from the tail (undefined when it is not complete). */
  #tailCount(seq: number): { n: number; b: number } | undefined {
    if (!this.#tailComplete) return undefined;
    const tail = this.#tail;
    let n = 0;
    let b = 0;
    for (let i = this.#tailHead; i < tail.length && tail[i]!.seq <= seq; i++) {
      n++;
      b += tailSize(tail[i]!);
    }
    return { n, b };
  }

  /** The tail after a commit that deleted every row up to `deletedUpTo` and added `added`. */
  #updateTail(deletedUpTo: number, added: QueuedMessage[]): void {
    if (this.#depth === 0) {
      // Empty: the tail is complete again (nothing in the file it lacks).
      this.#tail = [];
      this.#tailHead = 0;
      this.#tailBytes = 0;
      this.#tailComplete = true;
      return;
    }
    if (!this.#tailComplete) return;
    const tail = this.#tail;
    let head = this.#tailHead;
    while (head < tail.length && tail[head]!.seq <= deletedUpTo) this.#tailBytes -= tailSize(tail[head++]!);
    for (const m of added) {
      tail.push(m);
      this.#tailBytes += tailSize(m);
    }
    if (tail.length - head > TAIL_MAX_MESSAGES || this.#tailBytes > TAIL_MAX_BYTES) {
      this.#tail = [];
      this.#tailHead = 0;
      this.#tailBytes = 0;
      this.#tailComplete = false;
      return;
    }
    if (head > 1024 && head * 2 > tail.length) {
      this.#tail = tail.slice(head);
      head = 0;
    }
    this.#tailHead = head;
  }

  /** Up to `limit` committed messages after `afterSeq`, oldest first. */
  read(afterSeq: number, limit: number): QueuedMessage[] {
    if (this.#closed) return [];
    if (this.#tailComplete) {
      // The first tail entry after `afterSeq` (seqs ascend), then up to `limit` of them.
      const tail = this.#tail;
      let lo = this.#tailHead;
      let hi = tail.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (tail[mid]!.seq <= afterSeq) lo = mid + 1;
        else hi = mid;
      }
      return tail.slice(lo, lo + limit);
    }
    return this.#read.all(afterSeq, limit) as QueuedMessage[];
  }

  stats(): QueueStats {
    let fileBytes = 0;
    for (const suffix of ['', '-wal']) {
      try {
        fileBytes += statSync(this.path + suffix).size;
      } catch {
        // absent
      }
    }
    const oldest = this.#closed ? undefined : (this.#oldest.get() as { ts: number } | undefined);
    const pendingTs = this.#pending[0]?.ts ?? null;
    return {
      depth: this.depth,
      bytes: this.#bytes,
      fileBytes,
      oldestTs: oldest?.ts ?? pendingTs,
    };
  }

  /** Commits what waits and closes the file. */
  close(): void {
    if (this.#closed) return;
    this.flush();
    this.#closed = true;
    this.#db.close();
  }

  /** Closes and deletes the file (the instance was deleted). */
  destroy(): void {
    this.close();
    for (const suffix of ['', '-wal', '-shm']) rmSync(this.path + suffix, { force: true });
  }
}
