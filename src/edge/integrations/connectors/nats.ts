/**
 * The NATS transport (nats.js). Without JetStream a batch counts as acknowledged once a flush
 * (PING/PONG) after it came back: the server has every message of the batch. With `jetstream`,
 * each message is published through JetStream and the stream's publish ack is awaited.
 */
import { connect, type ConnectionOptions, type JetStreamClient, type NatsConnection } from 'nats';
import type { Connector, ConnectorContext, OutMessage, RemoteSubscription } from './types.js';
import { reasonOf } from './types.js';

/** The provider's properties this connector reads (checked against the catalogue before). */
interface NatsConfig {
  servers?: string;
  username?: string;
  password?: string;
  token?: string;
  tls?: boolean;
  caCert?: string;
  jetstream?: boolean;
}

export class NatsConnector implements Connector {
  readonly separator = '.' as const;
  readonly pipelined = true;
  readonly #ctx: ConnectorContext;
  #nc: NatsConnection | undefined;
  #js: JetStreamClient | undefined;
  #closed = false;

  constructor(ctx: ConnectorContext) {
    this.#ctx = ctx;
  }

  async connect(subscriptions: RemoteSubscription[]): Promise<void> {
    const c = this.#ctx.config as NatsConfig;
    const options: ConnectionOptions = {
      servers: String(c.servers)
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
      reconnect: false,
      timeout: 10_000,
      name: `millwright-${this.#ctx.instanceId.slice(0, 8)}`,
    };
    if (c.username) options.user = c.username;
    if (c.password) options.pass = c.password;
    if (c.token) options.token = c.token;
    if (c.tls) {
      const ca = c.caCert ?? this.#ctx.trustedCa?.()?.join('\n');
      options.tls = ca ? { ca } : {};
    }
    const nc = await connect(options);
    this.#nc = nc;
    if (c.jetstream) this.#js = nc.jetstream();
    void nc.closed().then((err) => {
      if (!this.#closed) this.#ctx.hooks.down(err ? reasonOf(err) : 'connection closed by the server');
    });
    for (const s of subscriptions) {
      nc.subscribe(s.remote, {
        callback: (err, msg) => {
          if (!err) this.#ctx.hooks.message(s.id, msg.subject, Buffer.from(msg.data));
        },
      });
    }
    await nc.flush();
  }

  async send(batch: OutMessage[]): Promise<void> {
    const nc = this.#nc;
    if (!nc || nc.isClosed()) throw new Error('not connected');
    const js = this.#js;
    if (js) {
      await Promise.all(
        batch.map((m) => js.publish(m.topic, m.payload, { msgID: `${this.#ctx.instanceId}:${m.seq}` })),
      );
      return;
    }
    for (const m of batch) nc.publish(m.topic, m.payload);
    await nc.flush();
  }

  async close(): Promise<void> {
    this.#closed = true;
    const nc = this.#nc;
    this.#nc = undefined;
    if (nc && !nc.isClosed()) await nc.close().catch(() => undefined);
  }
}
