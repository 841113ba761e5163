/**
 * The MQTT transport (mqtt.js), shared by the generic MQTT provider (3.1.1 and 5), its first
 * generation, the cloud message service and the AWS IoT Core and Azure IoT Hub styles. The
 * runner owns reconnects: each `connect` makes one client with mqtt.js's own reconnect off, so
 * that nothing is resent behind the queue's back.
 */
import { createHmac } from 'node:crypto';
import { isIP } from 'node:net';
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import { QoS0Writer } from './mqtt-direct.js';
import type { Connector, ConnectorContext, OutMessage, RemoteSubscription } from './types.js';
import { reasonOf } from './types.js';

/** Whether an MQTT topic matches a filter (`+` one level, `#` the rest). */
export function mqttMatch(filter: string, topic: string): boolean {
  const f = filter.split('/');
  const t = topic.split('/');
  for (let i = 0; i < f.length; i++) {
    const part = f[i]!;
    if (part === '#') return !(i === 0 && topic.startsWith('$'));
    if (i >= t.length) return false;
    if (part === '+') {
      if (i === 0 && t[0]!.startsWith('$')) return false;
      continue;
    }
    if (part !== t[i]) return false;
  }
  return f.length === t.length;
}

/**
 * An Azure IoT Hub SAS token for `<hostName>/devices/<deviceId>`. It expires at a multiple of
 * `ttl` seconds, between one and two `ttl` after `now` (so that the same token is made for a
 * whole period: a broker's password file can hold it).
 */
export function azureSasToken(
  hostName: string,
  deviceId: string,
  sharedAccessKey: string,
  ttl: number,
  now = Date.now(),
): string {
  const expiry = (Math.floor(now / 1000 / ttl) + 2) * ttl;
  const resource = encodeURIComponent(`${hostName}/devices/${deviceId}`);
  const sig = createHmac('sha256', Buffer.from(sharedAccessKey, 'base64'))
    .update(`${resource}\n${expiry}`)
    .digest('base64');
  return `SharedAccessSignature sr=${resource}&sig=${encodeURIComponent(sig)}&se=${expiry}`;
}

export const AZURE_API_VERSION = '2021-04-12';

/** QoS 0 goes straight to the socket while it holds less than this much unsent data. */
export const DIRECT_BUFFER_BYTES = 1024 * 1024;

/** The provider's properties this connector reads (checked against the catalogue before). */
interface MqttConfig {
  host?: string;
  port?: number;
  tls?: boolean;
  caCert?: string;
  clientCert?: string;
  clientKey?: string;
  rejectUnauthorized?: boolean;
  clientId?: string;
  username?: string;
  password?: string;
  connectTimeout?: number;
  keepalive?: number;
  pingTimeout?: number;
  protocolVersion?: number;
  qos?: 0 | 1 | 2;
  retain?: boolean;
  publishWaitTimeout?: number;
  willTopic?: string;
  willPayload?: string;
  willQoS?: 0 | 1 | 2;
  // AWS IoT Core and Azure IoT Hub
  thingName?: string;
  hostName?: string;
  deviceId?: string;
  connectionType?: string;
  sharedAccessKey?: string;
  sasTokenTtl?: number;
}

/** The mqtt.js options and the broker URL of a provider's config. */
export function mqttOptions(
  ctx: Pick<ConnectorContext, 'provider' | 'config' | 'instanceId' | 'trustedCa'>,
): {
  url: string;
  options: IClientOptions;
} {
  const c = ctx.config as MqttConfig;
  const flavour = ctx.provider.flavour ?? 'generic';
  const options: IClientOptions = {
    reconnectPeriod: 0,
    connectTimeout: c.connectTimeout ?? 10_000,
    keepalive: c.keepalive ?? 60,
    clean: true,
    protocolVersion: (c.protocolVersion ?? 4) as 4 | 5,
    clientId: c.clientId ?? `millwright-${ctx.instanceId.slice(0, 8)}`,
    queueQoSZero: false,
    resubscribe: false,
  };
  let tls = c.tls === true;
  let host = c.host ?? '';
  if (flavour === 'gen1') {
    options.keepalive = Math.max(1, Math.round((c.pingTimeout ?? 10_000) / 1000) * 3);
  }
  if (flavour === 'aws') {
    tls = true;
    options.clientId = c.thingName;
    options.protocolVersion = 4;
  }
  if (flavour === 'azure') {
    tls = true;
    host = c.hostName ?? '';
    options.clientId = c.deviceId;
    options.protocolVersion = 4;
    options.username = `${c.hostName}/${c.deviceId}/?api-version=${AZURE_API_VERSION}`;
    if (c.connectionType !== 'x509') {
      options.password = azureSasToken(
        c.hostName ?? '',
        c.deviceId ?? '',
        c.sharedAccessKey ?? '',
        c.sasTokenTtl ?? 3600,
      );
    }
  } else {
    if (c.username !== undefined) options.username = c.username;
    if (c.password !== undefined) options.password = c.password;
  }
  if (tls) {
    if (c.caCert) options.ca = c.caCert;
    else {
      const trusted = ctx.trustedCa?.();
      if (trusted) options.ca = trusted;
    }
    if (c.clientCert) options.cert = c.clientCert;
    if (c.clientKey) options.key = c.clientKey;
    options.rejectUnauthorized = c.rejectUnauthorized !== false;
    // SNI and the certificate check use the host name, not the address.
    if (!isIP(host)) options.servername = host;
  }
  if (c.willTopic) {
    options.will = {
      topic: c.willTopic,
      payload: Buffer.from(c.willPayload ?? 'offline'),
      qos: c.willQoS ?? 0,
      retain: false,
    };
  }
  const url = `${tls ? 'mqtts' : 'mqtt'}://${host.includes(':') ? `[${host}]` : host}:${c.port ?? (tls ? 8883 : 1883)}`;
  return { url, options };
}

export class MqttConnector implements Connector {
  readonly separator = '/' as const;
  readonly pipelined = true;
  readonly #ctx: ConnectorContext;
  #client: MqttClient | undefined;
  /** QoS 0 packets written by the connector itself, batched per turn (see mqtt-direct.ts). */
  #direct: QoS0Writer | undefined;
  #failures = new Set<(err: Error) => void>();
  #closed = false;

  constructor(ctx: ConnectorContext) {
    this.#ctx = ctx;
  }

  async connect(subscriptions: RemoteSubscription[]): Promise<void> {
    const { url, options } = mqttOptions(this.#ctx);
    const qos = (this.#ctx.config.qos ?? 1) as 0 | 1 | 2;
    const client = mqtt.connect(url, options);
    this.#client = client;
    let lastError: string | undefined;
    /** The largest packet an MQTT 5 broker said it takes (CONNACK's Maximum Packet Size). */
    let maxPacketBytes: number | undefined;
    await new Promise<void>((resolve, reject) => {
      const fail = (err: Error) => {
        lastError = reasonOf(err);
        cleanup();
        client.end(true);
        reject(new Error(lastError));
      };
      const closed = () => fail(new Error(lastError ?? 'connection closed before CONNACK'));
      const ok = (connack?: { properties?: { maximumPacketSize?: number } }) => {
        maxPacketBytes = connack?.properties?.maximumPacketSize;
        cleanup();
        resolve();
      };
      const cleanup = () => {
        client.off('error', fail);
        client.off('close', closed);
        client.off('connect', ok);
      };
      client.once('error', fail);
      client.once('close', closed);
      client.once('connect', ok);
    });
    client.on('error', (err) => {
      lastError = reasonOf(err);
    });
    client.on('close', () => {
      this.#direct?.discard();
      this.#direct = undefined;
      const reason = lastError ?? 'connection closed by the broker';
      const failures = [...this.#failures];
      this.#failures.clear();
      for (const f of failures) f(new Error(reason));
      if (!this.#closed) this.#ctx.hooks.down(reason);
    });
    if (subscriptions.length > 0) {
      client.on('message', (topic, payload) => {
        for (const s of subscriptions) {
          if (mqttMatch(s.remote, topic)) this.#ctx.hooks.message(s.id, topic, payload);
        }
      });
      const granted = await client.subscribeAsync(
        subscriptions.map((s) => s.remote),
        { qos },
      );
      const refused = granted.filter((g) => g.qos === 128);
      if (refused.length > 0) {
        throw new Error(`the broker refused the subscription to ${refused.map((g) => g.topic).join(', ')}`);
      }
    }
    if (qos === 0 && client.connected) {
      this.#direct = new QoS0Writer(client.stream, {
        retain: this.#ctx.config.retain === true,
        protocolVersion: options.protocolVersion ?? 4,
        maxPacketBytes,
      });
    }
  }

  trySend(topic: string, payload: Buffer): boolean {
    const direct = this.#direct;
    // A slow link: past this much unsent data, messages wait in the disk queue.
    if (direct === undefined || !this.#client?.connected || direct.buffered > DIRECT_BUFFER_BYTES) {
      direct?.flush();
      return false;
    }
    // A packet above the broker's maximum goes the queue's way: mqtt.js refuses it there, named.
    return direct.write(topic, payload);
  }

  send(batch: OutMessage[]): Promise<void> {
    const client = this.#client;
    if (!client || !client.connected) return Promise.reject(new Error('not connected'));
    // What went straight out goes before the queue's messages.
    this.#direct?.flush();
    const c = this.#ctx.config as MqttConfig;
    const qos = c.qos ?? 1;
    const retain = c.retain === true;
    const waitMs = c.publishWaitTimeout;
    return new Promise<void>((resolve, reject) => {
      let left = batch.length;
      let done = false;
      let timer: NodeJS.Timeout | undefined;
      const finish = (err?: Error) => {
        if (done) return;
        done = true;
        if (timer) clearTimeout(timer);
        this.#failures.delete(finish);
        if (err) reject(err);
        else resolve();
      };
      this.#failures.add(finish);
      if (waitMs !== undefined) {
        timer = setTimeout(() => {
          finish(new Error(`no acknowledgement within publishWaitTimeout (${waitMs} ms)`));
          client.end(true);
        }, waitMs);
      }
      const acked = (err?: Error) => {
        if (err) finish(err);
        else if (--left === 0) finish();
      };
      for (const m of batch) client.publish(m.topic, m.payload, { qos, retain }, acked);
      if (batch.length === 0) finish();
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    const client = this.#client;
    this.#client = undefined;
    this.#direct?.flush();
    this.#direct = undefined;
    if (client) await client.endAsync(true).catch(() => undefined);
  }
}
