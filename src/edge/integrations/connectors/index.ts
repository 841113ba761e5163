/**
 * The connector of each transport. Each transport's client library (mqtt, protobufjs, undici,
 * amqplib, pg, mysql2, ioredis) is loaded when a connector of it first connects, not by every
 * edge start: together they were a fifth of the edge's module loading.
 */
import type { Transport } from '../catalogue.js';
import type {
  Connector,
  ConnectorContext,
  ConnectorFactory,
  OutMessage,
  RemoteSubscription,
} from './types.js';

type Load = () => Promise<(ctx: ConnectorContext) => Connector>;

/** A connector whose implementation is loaded on `connect`; until then it queues (no `trySend`). */
class LazyConnector implements Connector {
  readonly #ctx: ConnectorContext;
  readonly #load: Load;
  #inner: Connector | undefined;
  #closed = false;

  constructor(
    ctx: ConnectorContext,
    load: Load,
    readonly separator: '/' | '.',
    readonly pipelined: boolean,
  ) {
    this.#ctx = ctx;
    this.#load = load;
  }

  async connect(remoteSubscriptions: RemoteSubscription[]): Promise<void> {
    if (!this.#inner) {
      const make = await this.#load();
      if (this.#closed) throw new Error('connector closed');
      this.#inner = make(this.#ctx);
    }
    await this.#inner.connect(remoteSubscriptions);
  }

  send(batch: OutMessage[]): Promise<void> {
    if (!this.#inner) return Promise.reject(new Error('not connected'));
    return this.#inner.send(batch);
  }

  trySend(topic: string, payload: Buffer): boolean {
    return this.#inner?.trySend?.(topic, payload) ?? false;
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#inner?.close();
  }
}

const lazy =
  (load: Load, separator: '/' | '.', pipelined: boolean): ConnectorFactory =>
  (ctx) =>
    new LazyConnector(ctx, load, separator, pipelined);

export const CONNECTORS: Record<Transport, ConnectorFactory> = {
  mqtt: lazy(
    async () => {
      const { MqttConnector } = await import('./mqtt.js');
      return (ctx) => new MqttConnector(ctx);
    },
    '/',
    true,
  ),
  sparkplug: lazy(
    async () => {
      const { SparkplugConnector } = await import('./sparkplug.js');
      return (ctx) => new SparkplugConnector(ctx);
    },
    '/',
    true,
  ),
  nats: lazy(
    async () => {
      const { NatsConnector } = await import('./nats.js');
      return (ctx) => new NatsConnector(ctx);
    },
    '.',
    true,
  ),
  amqp: lazy(
    async () => {
      const { AmqpConnector } = await import('./amqp.js');
      return (ctx) => new AmqpConnector(ctx);
    },
    '.',
    true,
  ),
  http: lazy(
    async () => {
      const { HttpConnector } = await import('./http.js');
      return (ctx) => new HttpConnector(ctx);
    },
    '.',
    false,
  ),
  postgres: lazy(
    async () => {
      const { PostgresConnector } = await import('./sql.js');
      return (ctx) => new PostgresConnector(ctx);
    },
    '.',
    false,
  ),
  mysql: lazy(
    async () => {
      const { MysqlConnector } = await import('./sql.js');
      return (ctx) => new MysqlConnector(ctx);
    },
    '.',
    false,
  ),
  redis: lazy(
    async () => {
      const { RedisConnector } = await import('./redis.js');
      return (ctx) => new RedisConnector(ctx);
    },
    '.',
    true,
  ),
};
