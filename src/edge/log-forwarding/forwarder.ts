/**
 * The forwarding runtime: a collector that tails the edge's log store into a bounded disk queue,
 * and a sender that drains the queue, in order, to the target, reconnecting with backoff.
 *
 * - Collecting: every `COLLECT_MS` the entries after the position reached (`cursor`, kept in the
 *   module's table) that pass the filters are appended to the queue (`DiskQueue` of the
 *   integrations, an SQLite file of its own: `<data-dir>/log-forwarding/queue.db`), and the
 *   position is saved after the queue committed. A restart resumes from the saved position, so the
 *   entries logged while the edge stopped and started are forwarded too.
 * - Bounded: the queue keeps at most `--log-forwarding-queue-messages` entries and
 *   `--log-forwarding-queue-bytes`; past them new entries are dropped and counted (`dropped`).
 * - Sending: batches in queue order. HTTP deletes a batch from the queue once the receiver
 *   answered 2xx; UDP once sent. Syslog over TCP and TLS has no acknowledgement, so a batch stays
 *   in the queue for `--log-forwarding-confirm-ms` after it was written on a connection that stays
 *   up; when the connection drops, everything of that window is sent again after reconnecting
 *   (at least once: a receiver may see a copy, with the same `sequenceId`).
 * - Reconnecting: 250 ms after a failure, doubling up to 30 s, back to 250 ms after a success.
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { LogStore } from '../../kernel/logging/log-store.js';
import { DiskQueue } from '../integrations/index.js';
import { describeTarget, passes, type ForwardingConfig } from './config.js';
import type { QueuedEntry } from './format.js';
import type { LogForwardingRepository } from './repository.js';
import { openTransport, type Outgoing, type Transport } from './transports.js';

export const COLLECT_MS = 250;
const PAGE = 1000;
const BATCH = 500;
const BACKOFF_MIN_MS = 250;
const BACKOFF_MAX_MS = 30_000;

export type ForwardingState = 'unconfigured' | 'stopped' | 'connecting' | 'running' | 'retrying';

export interface ForwardingStatus {
  state: ForwardingState;
  target: string | null;
  /** Entries delivered (acknowledged, or past the resend window) since the edge started. */
  sent: number;
  /** Entries dropped since the edge started because the queue was full. */
  dropped: number;
  /** Entries waiting in the queue (on disk). */
  queued: number;
  lastError: string | null;
  /** RFC 3339 time of `lastError`. */
  lastErrorAt: string | null;
  /** RFC 3339 time of the last delivery. */
  lastSentAt: string | null;
}

export interface ForwarderOptions {
  dataDir: string;
  maxMessages: number;
  maxBytes: number;
  confirmMs: number;
  /** The edge's trust store, for a TLS target that names no CA of its own. */
  trustedCa?: () => string[] | undefined;
}

export class Forwarder {
  readonly #queue: DiskQueue;
  #config: ForwardingConfig;
  #cursor: number | undefined;
  #run = 0;
  #collecting: Promise<void> = Promise.resolve();
  #timer: NodeJS.Timeout | null = null;
  #wake: (() => void) | null = null;
  #transport: Transport | null = null;
  #state: ForwardingState = 'stopped';
  #sent = 0;
  #lastError: { message: string; at: number } | null = null;
  #lastSentAt: number | null = null;
  /** Highest seq handed to the transport, and the writes still in the resend window. */
  #sentSeq = 0;
  #window: Array<{ seq: number; n: number; at: number }> = [];
  #loop: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: Pick<LogStore, 'query'>,
    private readonly repo: LogForwardingRepository,
    private readonly logger: Logger,
    private readonly options: ForwarderOptions,
    config: ForwardingConfig,
    cursor: number | undefined,
  ) {
    this.#queue = new DiskQueue(join(options.dataDir, 'log-forwarding', 'queue.db'), {
      maxMessages: options.maxMessages,
      maxBytes: options.maxBytes,
      policy: 'drop-newest',
    });
    this.#config = config;
    this.#cursor = cursor;
  }

  get config(): ForwardingConfig {
    return this.#config;
  }

  status(): ForwardingStatus {
    const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
    return {
      state: this.#config.target ? this.#state : 'unconfigured',
      target: describeTarget(this.#config.target),
      sent: this.#sent,
      dropped: this.#queue.dropped,
      queued: this.#queue.depth,
      lastError: this.#lastError?.message ?? null,
      lastErrorAt: iso(this.#lastError?.at ?? null),
      lastSentAt: iso(this.#lastSentAt),
    };
  }

  /**
   * Takes `config` (valid) and runs or stops as it says. `fresh`: forwarding was just switched on,
   * so it starts from the newest entry of the log store instead of a position saved earlier.
   */
  async reconfigure(config: ForwardingConfig, fresh: boolean): Promise<void> {
    await this.#halt();
    this.#config = config;
    if (!config.enabled || !config.target) {
      this.#state = 'stopped';
      return;
    }
    if (fresh || this.#cursor === undefined) {
      const newest = await this.store.query({ limit: 1 });
      this.#cursor = newest.entries[0]?.timestamp ?? 0;
      await this.repo.putCursor(this.#cursor);
    }
    const run = ++this.#run;
    this.#state = 'connecting';
    this.#timer = setInterval(() => this.#collectInBackground(run), COLLECT_MS);
    this.#timer.unref();
    this.#loop = this.#send(run);
  }

  /** Stops and closes the queue (the edge stops). */
  async close(): Promise<void> {
    await this.#halt();
    this.#queue.close();
  }

  /** Collects once now and waits for it (tests, and before a status a caller wants current). */
  async collectNow(): Promise<void> {
    this.#collectInBackground(this.#run);
    await this.#collecting;
  }

  async #halt(): Promise<void> {
    this.#run++;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    this.#transport?.close();
    this.#transport = null;
    this.#wake?.();
    await this.#loop;
    await this.#collecting;
    this.#rewind();
  }

  #collectInBackground(run: number): void {
    this.#collecting = this.#collecting.then(() =>
      this.#collect(run).catch((err: unknown) =>
        this.#fail(`collecting log entries: ${(err as Error).message}`),
      ),
    );
  }

  async #collect(run: number): Promise<void> {
    let moved = false;
    while (run === this.#run && this.#cursor !== undefined) {
      const { level } = this.#config.filters;
      const page = await this.store.query({ start: this.#cursor, limit: PAGE, level });
      for (const e of page.entries) {
        if (!passes(this.#config.filters, e.component)) continue;
        const entry: QueuedEntry = {
          timestamp: e.timestamp,
          level: e.level,
          component: e.component,
          message: e.message,
          fields: e.fields,
        };
        this.#queue.push(
          e.component,
          e.level,
          Buffer.from(JSON.stringify(entry)),
          Math.floor(e.timestamp / 1000),
        );
      }
      if (page.entries.length === 0) break;
      this.#cursor = page.cursor ?? this.#cursor;
      moved = true;
      if (page.entries.length < PAGE) break;
    }
    if (!moved) return;
    this.#queue.flush();
    await this.repo.putCursor(this.#cursor!);
    this.#wake?.();
  }

  #fail(message: string): void {
    if (this.#lastError?.message !== message)
      this.logger.warn({ target: describeTarget(this.#config.target) }, `log forwarding: ${message}`);
    this.#lastError = { message, at: Date.now() };
  }

  /** Unconfirmed writes are sent again: back to the last confirmed entry. */
  #rewind(): void {
    this.#window = [];
    this.#sentSeq = 0;
  }

  /** Entries of the resend window older than `confirmMs` on a live connection are delivered. */
  #confirm(): void {
    const until = Date.now() - this.options.confirmMs;
    let last = 0;
    let n = 0;
    while (this.#window.length > 0 && this.#window[0]!.at <= until) {
      const w = this.#window.shift()!;
      last = w.seq;
      n += w.n;
    }
    if (n > 0) this.#delivered(last, n);
  }

  #delivered(seq: number, n: number): void {
    this.#queue.ack(seq);
    this.#sent += n;
    this.#lastSentAt = Date.now();
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined = undefined;
      const done = () => {
        clearTimeout(timer);
        if (this.#wake === done) this.#wake = null;
        resolve();
      };
      timer = setTimeout(done, ms);
      timer.unref();
      this.#wake = done;
    });
  }

  async #send(run: number): Promise<void> {
    let backoff = BACKOFF_MIN_MS;
    while (run === this.#run) {
      try {
        if (!this.#transport) await this.#connect(run);
        if (run !== this.#run) break;
        const transport = this.#transport!;
        if (!transport.acknowledged) this.#confirm();
        const target = this.#config.target;
        const size = target?.type === 'http' ? (target.batchSize ?? BATCH) : BATCH;
        const rows = this.#queue.read(this.#sentSeq, size);
        if (rows.length === 0) {
          await this.#sleep(
            transport.acknowledged ? 1000 : Math.max(50, Math.min(1000, this.options.confirmMs / 2)),
          );
          continue;
        }
        const batch: Outgoing[] = rows.map((r) => ({
          seq: r.seq,
          entry: JSON.parse(r.payload.toString('utf8')) as QueuedEntry,
        }));
        await transport.send(batch);
        const last = batch[batch.length - 1]!.seq;
        this.#sentSeq = last;
        if (transport.acknowledged) this.#delivered(last, batch.length);
        else this.#window.push({ seq: last, n: batch.length, at: Date.now() });
        backoff = BACKOFF_MIN_MS;
        this.#state = 'running';
      } catch (err) {
        if (run !== this.#run) break;
        this.#transport?.close();
        this.#transport = null;
        this.#rewind();
        this.#state = 'retrying';
        this.#fail((err as Error).message);
        await this.#sleep(backoff);
        backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
      }
    }
  }

  async #connect(run: number): Promise<void> {
    const target = this.#config.target!;
    const transport = await openTransport(target, this.options.trustedCa?.());
    if (run !== this.#run) {
      transport.close();
      return;
    }
    transport.onClose = (err) => {
      if (this.#transport !== transport) return;
      this.#transport = null;
      this.#rewind();
      this.#state = 'retrying';
      this.#fail(err.message);
      this.#wake?.();
    };
    this.#transport = transport;
    this.#state = 'running';
  }
}
