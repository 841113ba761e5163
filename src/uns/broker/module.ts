/**
 * The MQTT broker on the UNS's seam: MQTT over WebSocket at `/mqtt` on the HTTPS port, and MQTT
 * over TCP (`mqtt-port`) and TLS (`mqtts-port`) bound once the HTTP API listens.
 */
import websocket from '@fastify/websocket';
import { createWebSocketStream } from 'ws';
import { ensureCertificate } from '../../kernel/http/server.js';
import type { UnsModule } from '../modules.js';
import { UnsBroker } from './broker.js';
import { brokerMigrations } from './migrations/index.js';
import { brokerLimits, brokerOptions } from './options.js';

declare module '../modules.js' {
  interface UnsModules {
    broker: UnsBroker;
  }
}

export const brokerModule: UnsModule<'broker', typeof brokerOptions> = {
  name: 'broker',
  options: brokerOptions,
  migrations: brokerMigrations,
  requires: ['identity', 'accounts', 'namespace'],
  start(ctx) {
    const topics = ctx.module('namespace').topics;
    return UnsBroker.start({
      accounts: ctx.module('accounts'),
      database: ctx.database,
      logger: ctx.logger,
      redisUrl: ctx.config.redisUrl,
      onPublish: (packet) =>
        topics.record(
          packet.topic,
          packet.payload as Buffer,
          packet.retain,
          Date.now(),
          (packet as { properties?: Record<string, unknown> }).properties,
        ),
      limits: brokerLimits(ctx.config, ctx.module('identity').rateLimit),
    });
  },
  async mount(ctx, broker) {
    // MQTT over WebSocket (the `mqtt` subprotocol); the broker authenticates the connection.
    await ctx.app.register(websocket, { options: { maxPayload: ctx.config.maxPacketSize + 65_536 } });
    ctx.app.get('/mqtt', { websocket: true, config: { permission: 'public' } }, (socket, request) => {
      broker.handle(createWebSocketStream(socket), request.raw);
    });
  },
  async listening(ctx, broker) {
    const { config } = ctx;
    const tls = await ensureCertificate(config.dataDir, config.tlsCert, config.tlsKey);
    const same = (port: number) => port;
    await ctx.ports.bind('mqtt-port', config.mqttPort, (port) => broker.listen(config.host, port), same);
    await ctx.ports.bind(
      'mqtts-port',
      config.mqttsPort,
      (port) => broker.listen(config.host, port, tls),
      same,
    );
    ctx.logger.info(
      {
        mqttPort: ctx.ports.bound['mqtt-port'],
        mqttsPort: ctx.ports.bound['mqtts-port'],
        redis: config.redisUrl ? 'on' : 'off',
      },
      'mqtt listening',
    );
  },
  close: (broker) => broker.close(),
};
