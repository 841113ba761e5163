/** The connector of each transport. */
import type { Transport } from '../catalogue.js';
import { AmqpConnector } from './amqp.js';
import { HttpConnector } from './http.js';
import { MqttConnector } from './mqtt.js';
import { NatsConnector } from './nats.js';
import { RedisConnector } from './redis.js';
import { SparkplugConnector } from './sparkplug.js';
import { MysqlConnector, PostgresConnector } from './sql.js';
import type { ConnectorFactory } from './types.js';

export const CONNECTORS: Record<Transport, ConnectorFactory> = {
  mqtt: (ctx) => new MqttConnector(ctx),
  sparkplug: (ctx) => new SparkplugConnector(ctx),
  nats: (ctx) => new NatsConnector(ctx),
  amqp: (ctx) => new AmqpConnector(ctx),
  http: (ctx) => new HttpConnector(ctx),
  postgres: (ctx) => new PostgresConnector(ctx),
  mysql: (ctx) => new MysqlConnector(ctx),
  redis: (ctx) => new RedisConnector(ctx),
};
