/**
 * The request log's buffer (`/admin/v1/logs/v2/api-activity`, while its setting is on): rows are
 * written in batches once a second, at most `MAX_PENDING` waiting (more are counted and dropped).
 */
import type { Logger } from 'pino';
import { uuidv7 } from '../../kernel/ids.js';
import type { ActivityRow } from './repository.js';

export const MAX_PENDING_ACTIVITY = 10_000;

export class ActivityBuffer {
  #rows: ActivityRow[] = [];
  #dropped = 0;
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly write: (rows: ActivityRow[]) => Promise<void>,
    private readonly log: Logger,
  ) {}

  add(row: Omit<ActivityRow, 'id'>): void {
    if (this.#rows.length >= MAX_PENDING_ACTIVITY) {
      this.#dropped++;
      return;
    }
    this.#rows.push({ id: uuidv7(row.at), ...row });
    this.#timer ??= setTimeout(() => void this.flush(), 1000).unref();
  }

  /** Writes what waits (also on close). */
  flush(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    const rows = this.#rows;
    this.#rows = [];
    if (this.#dropped > 0) {
      this.log.warn({ dropped: this.#dropped }, 'request log rows dropped (the buffer was full)');
      this.#dropped = 0;
    }
    this.#flushing = this.#flushing
      .then(() => this.write(rows))
      .catch((err: unknown) => this.log.warn({ err }, 'writing the request log failed'));
    return this.#flushing;
  }
}
