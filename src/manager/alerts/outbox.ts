/**
 * The notification outbox's sender. Notifications are rows written with the incident change they
 * describe; this loop claims due rows under a lease (one statement; `FOR UPDATE SKIP LOCKED` on
 * PostgreSQL, so two managers never claim one row), sends each, and marks it SENT, or RETRY with
 * exponential backoff and jitter, or FAILED after the last attempt (or at once on an answer
 * another attempt will not change). A manager stopped while sending leaves its claims to expire;
 * another process (or itself, started again) takes them over. Each channel (one destination set's
 * e-mail, one webhook, one MQTT topic) sends at most `rateLimitPerMinute` notifications a minute,
 * counted in the database over every manager; one over waits its turn.
 *
 * Delivery is at least once with the repeat window made as small as it can be: the row is marked
 * SENT right after the peer accepted it; a process killed between the two sends it again after the
 * lease, with the same delivery id (the receiver's idempotency key).
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { SecretBox } from '../../kernel/secret-box.js';
import { MqttPublisher, PermanentFailure, sendEmail, sendWebhook, type Notice } from './channels.js';
import type { AlertRepository, NotificationRow } from './repository.js';
import type { InstanceSettings } from './settings.js';

export interface OutboxOptions {
  logger: Logger;
  leaseMs: number;
  maxAttempts: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  pollMs: number;
  /** Rows claimed at once. */
  batch: number;
  settings: () => Promise<InstanceSettings>;
}

export class NotificationOutbox {
  readonly #repo: AlertRepository;
  readonly #box: SecretBox;
  readonly #o: OutboxOptions;
  readonly #mqtt = new MqttPublisher();
  /** This process, in claims. */
  readonly instance = randomUUID();
  #timer: NodeJS.Timeout | null = null;
  #renew: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;
  #again = false;
  #stopped = true;

  constructor(repo: AlertRepository, box: SecretBox, options: OutboxOptions) {
    this.#repo = repo;
    this.#box = box;
    this.#o = options;
  }

  start(): void {
    this.#stopped = false;
    this.#renew = setInterval(
      () => void this.#repo.renew(this.instance, this.#o.leaseMs).catch(() => undefined),
      Math.max(500, Math.floor(this.#o.leaseMs / 3)),
    );
    this.#renew.unref();
    this.kick();
  }

  /** Sends what is due now (after a change wrote notifications), else at the next poll. */
  kick(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#running = this.#drain()
      .catch((err: unknown) => this.#o.logger.warn({ err }, 'sending notifications failed'))
      .finally(() => {
        this.#running = null;
        if (this.#stopped) return;
        if (this.#again) {
          this.#again = false;
          this.kick();
        } else this.#timer = setTimeout(() => this.kick(), this.#o.pollMs);
      });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    if (this.#renew) clearInterval(this.#renew);
    await this.#running;
    this.#mqtt.close();
  }

  async #drain(): Promise<void> {
    for (let round = 0; round < 100 && !this.#stopped; round++) {
      const rows = await this.#repo.claim(this.instance, this.#o.batch, this.#o.leaseMs);
      if (rows.length === 0) return;
      const settings = await this.#o.settings();
      // One channel's rows in order, one after another (the rate limit counts each); channels at once.
      const byChannel = new Map<string, NotificationRow[]>();
      for (const r of rows) byChannel.set(r.channel_key, [...(byChannel.get(r.channel_key) ?? []), r]);
      await Promise.all(
        [...byChannel.values()].map(async (list) => {
          for (const r of list) await this.#one(r, settings);
        }),
      );
    }
  }

  async #one(row: NotificationRow, settings: InstanceSettings): Promise<void> {
    const now = Date.now();
    const limit = settings.rateLimitPerMinute;
    if ((await this.#repo.sentSince(row.channel_key, now - 60_000)) >= limit) {
      await this.#repo.release(row.id, this.instance, now + Math.ceil(60_000 / limit), 'rate limited', false);
      return;
    }
    try {
      await this.#send(row, settings);
    } catch (err) {
      const message = (err as Error).message || String(err);
      const attempts = row.attempts + 1;
      if (err instanceof PermanentFailure || attempts >= this.#o.maxAttempts) {
        await this.#repo.finish(row.id, this.instance, 'FAILED', message);
        this.#o.logger.warn({ id: row.id, channel: row.channel, err: message }, 'notification failed');
        return;
      }
      const wait = Math.min(this.#o.backoffMaxMs, this.#o.backoffBaseMs * 2 ** (attempts - 1));
      await this.#repo.release(
        row.id,
        this.instance,
        Date.now() + Math.round(wait * (0.5 + Math.random() / 2)),
        message,
        true,
      );
      this.#o.logger.info(
        { id: row.id, channel: row.channel, attempts, err: message },
        'notification will be retried',
      );
      return;
    }
    if (!(await this.#repo.finish(row.id, this.instance, 'SENT', null)))
      this.#o.logger.warn({ id: row.id }, 'a notification was sent after its claim expired');
  }

  async #send(row: NotificationRow, settings: InstanceSettings): Promise<void> {
    const p = JSON.parse(row.payload) as { subject: string; text: string; body: Record<string, unknown> };
    const notice: Notice = {
      id: row.id,
      event: String(p.body.event),
      subject: p.subject,
      text: p.text,
      body: p.body,
    };
    const target = JSON.parse(row.target) as {
      to?: string[];
      url?: string;
      secret?: string | null;
      topic?: string;
    };
    switch (row.channel) {
      case 'email':
        if (!settings.smtp)
          throw new Error('no SMTP server is configured (/admin/v1/config/incident-settings)');
        return sendEmail(settings.smtp, this.#box, target.to ?? [], notice);
      case 'webhook':
        return sendWebhook(target.url!, target.secret ? this.#box.open(target.secret) : null, notice);
      case 'mqtt':
        if (!settings.mqtt)
          throw new Error('no MQTT broker is configured (/admin/v1/config/incident-settings)');
        return this.#mqtt.publish(settings.mqtt, this.#box, target.topic!, notice);
      default:
        throw new PermanentFailure(`unknown channel "${row.channel}"`);
    }
  }
}
