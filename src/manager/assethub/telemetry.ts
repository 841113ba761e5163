/**
 * Usage events for the asset hub (an item imported, updated, deleted), so that the hub's catalogue
 * counts its imports: queued in the module's table with the change, delivered in batches to
 * `POST /mpcs/v1/telemetry` right after and then every `--asset-hub-telemetry-interval`. A failed
 * delivery is retried with backoff; after `--asset-hub-telemetry-attempts` failures, or at once
 * when the hub refuses the batch (a 4xx: a wrong token, say), the events are parked until an admin
 * unparks them (`POST /admin/v1/asset-hub/telemetry/unpark`) once the cause is fixed.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { HubClient } from './client.js';
import type { AssetHubRepository, TelemetryRow } from './repository.js';

export interface TelemetryOptions {
  max: number;
  attempts: number;
  intervalMs: number;
  logger: Logger;
  /** The hub as configured now, or null (none, or telemetry off). */
  hub: () => Promise<HubClient | null>;
}

const BATCH = 100;

export class TelemetryOutbox {
  readonly #repo: AssetHubRepository;
  readonly #o: TelemetryOptions;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<unknown> | null = null;

  constructor(repo: AssetHubRepository, options: TelemetryOptions) {
    this.#repo = repo;
    this.#o = options;
  }

  async enqueue(e: { itemId: string; version: string; action: 'IMPORT' | 'UPDATE' | 'DELETE' }) {
    const now = Date.now();
    const row: TelemetryRow = {
      id: randomUUID(),
      item_id: e.itemId,
      version: e.version,
      action: e.action,
      status: 'PENDING',
      attempts: 0,
      last_error: null,
      next_at: now,
      created_at: now,
    };
    const dropped = await this.#repo.enqueueEvent(row, this.#o.max);
    if (dropped > 0) this.#o.logger.warn({ dropped }, 'asset hub usage events dropped: the queue is full');
    this.kick();
  }

  start(): void {
    this.#timer = setInterval(() => this.kick(), this.#o.intervalMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#running;
  }

  /** Delivers what is due, once at a time (a call while one runs waits for it). */
  kick(): Promise<unknown> {
    if (!this.#running)
      this.#running = this.flush()
        .catch((err: unknown) => this.#o.logger.warn({ err }, 'delivering asset hub usage events failed'))
        .finally(() => (this.#running = null));
    return this.#running;
  }

  /** Answers how many events were delivered. */
  async flush(): Promise<number> {
    const hub = await this.#o.hub();
    if (!hub) return 0;
    let delivered = 0;
    for (;;) {
      const due = await this.#repo.dueEvents(Date.now(), BATCH);
      if (due.length === 0) return delivered;
      const events = due.map((r) => ({
        eventId: r.id,
        itemId: r.item_id,
        version: r.version,
        action: r.action,
      }));
      let status = 0;
      let error = '';
      try {
        const r = await hub.call('POST', '/mpcs/v1/telemetry', { events });
        status = r.status;
        error = `the hub answered ${r.status}${typeof r.body?.message === 'string' ? `: ${r.body.message}` : ''}`;
      } catch (err) {
        error = (err as Error).message;
      }
      if (status >= 200 && status < 300) {
        await this.#repo.deleteEvents(due.map((r) => r.id));
        delivered += due.length;
        continue;
      }
      const refused = status >= 400 && status < 500 && status !== 408 && status !== 429;
      const backoff = Math.min(3_600_000, this.#o.intervalMs * 2 ** Math.min(10, due[0]!.attempts));
      await this.#repo.failEvents(
        due,
        error,
        (r) => refused || r.attempts + 1 >= this.#o.attempts,
        Date.now() + backoff,
      );
      this.#o.logger.warn(
        { events: due.length, error, parked: refused },
        'asset hub usage events not delivered',
      );
      return delivered;
    }
  }

  /** Parked events back to waiting, then one delivery. */
  async unpark() {
    const unparked = await this.#repo.unpark(Date.now());
    await this.#running;
    const delivered = await this.flush();
    return { unparked, delivered, ...(await this.status()) };
  }

  async status() {
    const counts = await this.#repo.eventCounts();
    const parked = await this.#repo.parkedEvents(20);
    return {
      pending: counts.PENDING ?? 0,
      parked: counts.PARKED ?? 0,
      oldestParked: parked.map((r) => ({
        eventId: r.id,
        itemId: r.item_id,
        version: r.version,
        action: r.action,
        attempts: r.attempts,
        lastError: r.last_error,
        createdAt: new Date(Number(r.created_at)).toISOString(),
      })),
    };
  }
}
