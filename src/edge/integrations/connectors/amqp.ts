/**
 * The AMQP 0-9-1 transport (amqplib), for RabbitMQ and its kind. Local-to-remote messages are
 * published on `exchange` with the remote name as routing key, on a confirm channel: a batch is
 * acknowledged once the broker confirmed every message (publisher confirms). Remote-to-local
 * subscriptions consume the queue named by the remote name (which must exist) and ack each
 * delivery once it is on the DataHub.
 */
import amqp, { type ChannelModel, type ConfirmChannel } from 'amqplib';
import type { Connector, ConnectorContext, OutMessage, RemoteSubscription } from './types.js';

/** The provider's properties this connector reads (checked against the catalogue before). */
interface AmqpConfig {
  url?: string;
  username?: string;
  password?: string;
  caCert?: string;
  exchange?: string;
  persistent?: boolean;
}

export class AmqpConnector implements Connector {
  readonly separator = '.' as const;
  readonly pipelined = true;
  readonly #ctx: ConnectorContext;
  #conn: ChannelModel | undefined;
  #ch: ConfirmChannel | undefined;
  #closed = false;
  #lastError: string | undefined;

  constructor(ctx: ConnectorContext) {
    this.#ctx = ctx;
  }

  async connect(subscriptions: RemoteSubscription[]): Promise<void> {
    const c = this.#ctx.config as AmqpConfig;
    const socket: Parameters<typeof amqp.connect>[1] = { timeout: 10_000 };
    if (c.username) socket.credentials = amqp.credentials.plain(c.username, c.password ?? '');
    if (c.caCert) socket.ca = [c.caCert];
    const conn = await amqp.connect(String(c.url), socket);
    this.#conn = conn;
    conn.on('error', (err: Error) => {
      this.#lastError = err.message;
    });
    conn.on('close', (err?: Error) => {
      if (!this.#closed)
        this.#ctx.hooks.down(err?.message ?? this.#lastError ?? 'connection closed by the broker');
    });
    const ch = await conn.createConfirmChannel();
    ch.on('error', (err: Error) => {
      this.#lastError = err.message;
    });
    this.#ch = ch;
    for (const s of subscriptions) {
      const consumer = await conn.createChannel();
      consumer.on('error', (err: Error) => {
        this.#lastError = err.message;
      });
      await consumer.prefetch(1000);
      await consumer.consume(s.remote, (msg) => {
        if (!msg) return;
        this.#ctx.hooks.message(s.id, msg.fields.routingKey || s.remote, msg.content);
        consumer.ack(msg);
      });
    }
  }

  async send(batch: OutMessage[]): Promise<void> {
    const ch = this.#ch;
    if (!ch) throw new Error('not connected');
    const c = this.#ctx.config as AmqpConfig;
    const exchange = String(c.exchange ?? '');
    const persistent = c.persistent !== false;
    for (const m of batch) {
      ch.publish(exchange, m.topic, m.payload, {
        persistent,
        contentType: 'application/json',
        timestamp: Math.floor(m.ts / 1000),
        messageId: `${this.#ctx.instanceId}:${m.seq}`,
        headers: { subject: m.subject },
      });
    }
    await ch.waitForConfirms();
  }

  async close(): Promise<void> {
    this.#closed = true;
    const conn = this.#conn;
    this.#conn = undefined;
    this.#ch = undefined;
    if (conn) await conn.close().catch(() => undefined);
  }
}
