/**
 * The provider catalogue of `/cc/v2`, as data (contract part 2.3). Every provider here either runs
 * on this machine (its transport has a connector, tested against a real peer) or carries a rule
 * the contract names; `docs/integrations.md` says which is which.
 *
 * `ProviderID` is a name-based UUID (version 5, SHA-1) of the provider's stable key under the
 * Millwright namespace below: the same on every install and release, never a readable slug.
 */
import { createHash } from 'node:crypto';
import { propertyLabel } from '../../kernel/labels.js';

/** Namespace of provider IDs (a fixed random UUID; never change it). */
export const PROVIDER_NAMESPACE = '6f1d2c9e-4b7a-4e55-9a0c-3d8f1b2e7c41';

/** RFC 4122 version-5 UUID of `name` in `namespace`. */
export function uuidv5(name: string, namespace = PROVIDER_NAMESPACE): string {
  const ns = Buffer.from(namespace.replace(/-/g, ''), 'hex');
  const hash = createHash('sha1').update(ns).update(name, 'utf8').digest();
  const b = Buffer.from(hash.subarray(0, 16));
  b[6] = (b[6]! & 0x0f) | 0x50;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

export type PropertyType = 'String' | 'Integer' | 'Boolean' | 'Password' | 'Pem' | 'Json';

/** A condition on another property of the same config. */
export interface When {
  property: string;
  /** The condition holds when the property's value (after defaults) is one of these. */
  in: readonly (string | number | boolean)[];
}

export interface PropertyDef {
  name: string;
  label: string;
  description: string;
  type: PropertyType;
  /** Required whatever else the config says (within `appliesWhen`). */
  required?: boolean;
  /** Required when this holds (a rule of part 2.3: `proxyValue`, `caCert`...). */
  requiredWhen?: When;
  /** The property only means something when this holds; otherwise it is neither required nor checked. */
  appliesWhen?: When;
  default?: string | number | boolean;
  /** The only values allowed. */
  enum?: readonly (string | number)[];
  min?: number;
  max?: number;
  /** Never returned by reads (passwords, keys). */
  secret?: boolean;
}

/** The transport a provider's connector speaks. */
export type Transport = 'mqtt' | 'sparkplug' | 'nats' | 'amqp' | 'http' | 'postgres' | 'mysql' | 'redis';

/** How an MQTT-family provider shapes the connection. */
export type MqttFlavour = 'generic' | 'gen1' | 'aws' | 'azure' | 'cloud';

export interface ProviderDef {
  /** Stable key the UUID is made from; never shown as an ID. */
  key: string;
  id: string;
  name: string;
  group: string;
  description: string;
  transport: Transport;
  flavour?: MqttFlavour;
  experimental: boolean;
  hidden: boolean;
  properties: PropertyDef[];
  /** The provider's rules in words (returned by GetProviderSchema). */
  rules: string[];
}

// ---------------------------------------------------------------------------------------------
// Property sets

const p = (
  name: string,
  type: PropertyType,
  description: string,
  extra: Partial<PropertyDef> = {},
): PropertyDef => ({
  name,
  label: extra.label ?? propertyLabel(name, description),
  description,
  type,
  ...extra,
});

/** Store-and-forward and reconnect settings, on every provider. */
const QUEUE_PROPERTIES: PropertyDef[] = [
  p('queueMaxBytes', 'Integer', 'largest size of the disk queue of outgoing messages, bytes', {
    default: 256 * 1024 * 1024,
    min: 1024 * 1024,
    max: 64 * 1024 * 1024 * 1024,
  }),
  p('queueMaxMessages', 'Integer', 'most messages in the disk queue', {
    default: 5_000_000,
    min: 1000,
    max: 1_000_000_000,
  }),
  p(
    'queueFullPolicy',
    'String',
    'what happens to a new message when the queue is full: drop-oldest deletes the oldest queued message, drop-newest refuses the new one; both count in Dropped',
    { default: 'drop-oldest', enum: ['drop-oldest', 'drop-newest'] },
  ),
  p(
    'queueSync',
    'String',
    'normal: a queued message survives SIGKILL and crashes of the edge; full: also power loss (an fsync per commit, a few ms each)',
    { default: 'normal', enum: ['normal', 'full'] },
  ),
  p('maxInflight', 'Integer', 'messages sent and not yet acknowledged, at most', {
    default: 1000,
    min: 1,
    max: 65535,
  }),
];

const RECONNECT: PropertyDef = p('reconnectInterval', 'Integer', 'wait before a new connection attempt, ms', {
  default: 2000,
  min: 100,
  max: 3_600_000,
});

const TLS_FILES: PropertyDef[] = [
  p('caCert', 'Pem', 'PEM certificate(s) of the authority that signed the server certificate'),
  p('clientCert', 'Pem', 'PEM client certificate, for mutual TLS'),
  p('clientKey', 'Pem', 'PEM private key of clientCert', { secret: true }),
  p('rejectUnauthorized', 'Boolean', 'verify the server certificate', { default: true }),
];

function mqttProperties(options: {
  qos: readonly number[];
  gen1?: boolean;
  port?: number;
  caCertForTls?: boolean;
}): PropertyDef[] {
  const tls = { property: 'tls', in: [true] } as const;
  const props: PropertyDef[] = [
    p('host', 'String', 'broker host name or address', { required: true }),
    p('port', 'Integer', 'broker port', { default: options.port ?? 1883, min: 1, max: 65535 }),
    p('protocolVersion', 'Integer', 'MQTT 3.1.1 (4) or 5', { default: 4, enum: [4, 5] }),
    p('clientId', 'String', 'client identifier (default: millwright-<instance>)'),
    p('username', 'String', 'user name'),
    p('password', 'Password', 'password', { secret: true }),
    p('tls', 'Boolean', 'connect with TLS (mqtts)', { default: false }),
    {
      ...TLS_FILES[0]!,
      ...(options.caCertForTls ? { requiredWhen: tls } : {}),
    },
    { ...TLS_FILES[1]!, appliesWhen: tls },
    { ...TLS_FILES[2]!, appliesWhen: tls },
    { ...TLS_FILES[3]!, appliesWhen: tls },
    p('qos', 'Integer', 'QoS of published messages and of subscriptions', {
      default: 1,
      enum: options.qos,
    }),
    p('retain', 'Boolean', 'publish with the retain flag', { default: false }),
    p('keepalive', 'Integer', 'keepalive, seconds', { default: 60, min: 0, max: 65535 }),
    p('willTopic', 'String', 'last-will topic'),
    p('willPayload', 'String', 'last-will payload', { default: 'offline' }),
    p('willQoS', 'Integer', 'QoS of the last will', { default: 0, enum: options.qos }),
  ];
  if (options.gen1) {
    props.push(
      p('connectTimeout', 'Integer', 'connection attempt timeout, ms', { default: 30_000, min: 100 }),
      p('pingTimeout', 'Integer', 'PINGRESP wait, ms (keepalive is derived from it)', {
        default: 10_000,
        min: 100,
      }),
      { ...RECONNECT, default: 5000 },
      p('publishWaitTimeout', 'Integer', 'wait for a PUBACK before the connection counts as broken, ms', {
        default: 10_000,
        min: 100,
      }),
    );
  } else {
    props.push(
      p('connectTimeout', 'Integer', 'connection attempt timeout, ms', { default: 10_000, min: 100 }),
      RECONNECT,
    );
  }
  return props;
}

// ---------------------------------------------------------------------------------------------
// Providers

type Draft = Omit<ProviderDef, 'id' | 'properties'> & { properties: PropertyDef[] };

const DRAFTS: Draft[] = [
  {
    key: 'mqtt',
    name: 'MQTT',
    group: 'Brokers',
    description: 'Any MQTT 3.1.1 or 5 broker (Mosquitto, EMQX, HiveMQ...), plain or TLS, QoS 0, 1 or 2.',
    transport: 'mqtt',
    flavour: 'generic',
    experimental: false,
    hidden: false,
    properties: mqttProperties({ qos: [0, 1, 2], caCertForTls: true }),
    rules: ['caCert is required when tls is true'],
  },
  {
    key: 'mqtt-gen1',
    name: 'MQTT (Gen 1)',
    group: 'Brokers',
    description:
      'The first-generation MQTT provider: MQTT 3.1.1 with the connectTimeout, pingTimeout, reconnectInterval and publishWaitTimeout defaults of its time.',
    transport: 'mqtt',
    flavour: 'gen1',
    experimental: false,
    hidden: true,
    properties: mqttProperties({ qos: [0, 1, 2], gen1: true }).filter((x) => x.name !== 'protocolVersion'),
    rules: [
      'connectTimeout 30000, pingTimeout 10000, reconnectInterval 5000, publishWaitTimeout 10000 by default',
    ],
  },
  {
    key: 'cloud-message-service',
    name: 'Cloud Message Service',
    group: 'Clouds',
    description: 'A cloud message service reached over MQTT; publishes and subscribes with QoS 0 or 1 only.',
    transport: 'mqtt',
    flavour: 'cloud',
    experimental: false,
    hidden: false,
    properties: mqttProperties({ qos: [0, 1], port: 8883 }).map((x) =>
      x.name === 'tls' ? { ...x, default: true } : x,
    ),
    rules: ['qos and willQoS are 0 or 1 (2 is invalid)'],
  },
  {
    key: 'aws-iot-core',
    name: 'AWS IoT Core',
    group: 'Clouds',
    description:
      'AWS IoT Core style: MQTT over mutual TLS on 8883, the client id is the thing name; publishes and subscribes with QoS 0 or 1.',
    transport: 'mqtt',
    flavour: 'aws',
    experimental: false,
    hidden: false,
    properties: [
      p('host', 'String', 'the account endpoint, <id>-ats.iot.<region>.amazonaws.com', { required: true }),
      p('port', 'Integer', 'port', { default: 8883, min: 1, max: 65535 }),
      p('thingName', 'String', 'the thing name, used as the MQTT client id', { required: true }),
      { ...TLS_FILES[0]!, required: true },
      { ...TLS_FILES[1]!, required: true },
      { ...TLS_FILES[2]!, required: true },
      TLS_FILES[3]!,
      p('qos', 'Integer', 'QoS', { default: 1, enum: [0, 1] }),
      p('keepalive', 'Integer', 'keepalive, seconds', { default: 60, min: 30, max: 1200 }),
      p('connectTimeout', 'Integer', 'connection attempt timeout, ms', { default: 10_000, min: 100 }),
      RECONNECT,
    ],
    rules: ['mutual TLS: caCert, clientCert and clientKey are required', 'client id = thingName'],
  },
  {
    key: 'azure-iot-hub',
    name: 'Azure IoT Hub',
    group: 'Clouds',
    description:
      'Azure IoT Hub style: MQTT 3.1.1 over TLS, user name <hub>/<device>/?api-version=2021-04-12, a SAS token (or an X.509 client certificate) and the devices/<id>/messages/events/ topics.',
    transport: 'mqtt',
    flavour: 'azure',
    experimental: false,
    hidden: false,
    properties: [
      p('hostName', 'String', 'the hub, <name>.azure-devices.net', { required: true }),
      p('port', 'Integer', 'port', { default: 8883, min: 1, max: 65535 }),
      p('deviceId', 'String', 'the device identity', { required: true }),
      p(
        'connectionType',
        'String',
        'sas: a SAS token from the shared access key; x509: a client certificate',
        {
          default: 'sas',
          enum: ['sas', 'x509'],
        },
      ),
      p('sharedAccessKey', 'Password', 'base64 shared access key of the device', {
        secret: true,
        required: true,
        appliesWhen: { property: 'connectionType', in: ['sas'] },
      }),
      p('sasTokenTtl', 'Integer', 'lifetime of a generated SAS token, seconds', {
        default: 3600,
        min: 60,
        max: 31_536_000,
        appliesWhen: { property: 'connectionType', in: ['sas'] },
      }),
      TLS_FILES[0]!,
      { ...TLS_FILES[1]!, required: true, appliesWhen: { property: 'connectionType', in: ['x509'] } },
      { ...TLS_FILES[2]!, required: true, appliesWhen: { property: 'connectionType', in: ['x509'] } },
      TLS_FILES[3]!,
      p('qos', 'Integer', 'QoS', { default: 1, enum: [0, 1] }),
      p('keepalive', 'Integer', 'keepalive, seconds', { default: 240, min: 0, max: 1740 }),
      p('connectTimeout', 'Integer', 'connection attempt timeout, ms', { default: 10_000, min: 100 }),
      RECONNECT,
    ],
    rules: [
      'connectionType sas: sharedAccessKey is required, clientCert and clientKey are not',
      'connectionType x509: clientCert and clientKey are required, sharedAccessKey is not',
    ],
  },
  {
    key: 'sparkplug-b',
    name: 'Sparkplug B',
    group: 'Brokers',
    description:
      'Sparkplug B over MQTT: the edge is an edge node (NBIRTH/NDEATH with bdSeq), each device a Sparkplug device (DBIRTH, DDATA), protobuf payloads, seq 0..255, rebirth on NCMD.',
    transport: 'sparkplug',
    experimental: true,
    hidden: false,
    properties: [
      p('groupId', 'String', 'Sparkplug group id', { required: true }),
      p('edgeNodeId', 'String', 'Sparkplug edge node id', { required: true }),
      ...mqttProperties({ qos: [0, 1], caCertForTls: true })
        .filter((x) => !['retain', 'willTopic', 'willPayload', 'willQoS'].includes(x.name))
        .map((x) =>
          x.name === 'qos' ? { ...x, default: 0, description: 'QoS of DBIRTH and DDATA (Sparkplug: 0)' } : x,
        ),
    ],
    rules: [
      'the MQTT will is the NDEATH; qos is 0 or 1',
      'caCert is required when tls is true',
      'a subscription remote name is the Sparkplug device id ({device} by default)',
    ],
  },
  {
    key: 'nats',
    name: 'NATS',
    group: 'Brokers',
    description: 'A NATS server or cluster; with jetstream, publishes wait for the stream acknowledgement.',
    transport: 'nats',
    experimental: false,
    hidden: false,
    properties: [
      p('servers', 'String', 'nats://host:port, comma-separated', { required: true }),
      p('username', 'String', 'user name'),
      p('password', 'Password', 'password', { secret: true }),
      p('token', 'Password', 'authentication token', { secret: true }),
      p('tls', 'Boolean', 'require TLS', { default: false }),
      { ...TLS_FILES[0]!, appliesWhen: { property: 'tls', in: [true] } },
      p('jetstream', 'Boolean', 'publish through JetStream and wait for its ack (the stream must exist)', {
        default: false,
      }),
      RECONNECT,
    ],
    rules: [],
  },
  {
    key: 'amqp-0-9-1',
    name: 'AMQP 0-9-1',
    group: 'Brokers',
    description:
      'RabbitMQ and other AMQP 0-9-1 brokers; publishes on an exchange with publisher confirms, consumes queues.',
    transport: 'amqp',
    experimental: false,
    hidden: false,
    properties: [
      p('url', 'String', 'amqp://host:5672/vhost or amqps://...', { required: true }),
      p('username', 'String', 'user name (overrides the URL)'),
      p('password', 'Password', 'password (overrides the URL)', { secret: true }),
      p('exchange', 'String', 'exchange that local-to-remote messages go to ("" = the default exchange)', {
        default: '',
      }),
      p('persistent', 'Boolean', 'publish persistent messages', { default: true }),
      ...TLS_FILES.slice(0, 1),
      RECONNECT,
    ],
    rules: [],
  },
  {
    key: 'http-webhook',
    name: 'HTTP Webhook',
    group: 'Web',
    description: 'POSTs batches of messages as a JSON array to a URL; a 2xx answer acknowledges the batch.',
    transport: 'http',
    experimental: false,
    hidden: false,
    properties: [
      p('url', 'String', 'http(s):// address', { required: true }),
      p('headers', 'Json', 'extra request headers, a JSON object'),
      p('batchSize', 'Integer', 'messages per request, at most', { default: 500, min: 1, max: 10_000 }),
      p('timeout', 'Integer', 'request timeout, ms', { default: 10_000, min: 100 }),
      ...TLS_FILES.slice(0, 1),
      TLS_FILES[3]!,
      RECONNECT,
    ],
    rules: [],
  },
  {
    key: 'data-ingest',
    name: 'Data Ingest',
    group: 'Clouds',
    description:
      'A cloud data-ingest endpoint over HTTPS (batches of JSON), optionally through an HTTP proxy.',
    transport: 'http',
    experimental: false,
    hidden: false,
    properties: [
      p('url', 'String', 'ingest endpoint', { required: true }),
      p('token', 'Password', 'bearer token', { secret: true }),
      p('proxy', 'String', 'none, or an HTTP proxy', { default: 'none', enum: ['none', 'http'] }),
      p('proxyValue', 'String', 'the proxy, http://host:port', {
        requiredWhen: { property: 'proxy', in: ['http'] },
      }),
      p('batchSize', 'Integer', 'messages per request, at most', { default: 500, min: 1, max: 10_000 }),
      p('timeout', 'Integer', 'request timeout, ms', { default: 10_000, min: 100 }),
      RECONNECT,
    ],
    rules: ['proxyValue is required when a proxy is configured'],
  },
  {
    key: 'postgresql',
    name: 'PostgreSQL',
    group: 'Databases',
    description: 'Rows in a PostgreSQL table (batched inserts; the table shape is in docs/integrations.md).',
    transport: 'postgres',
    experimental: false,
    hidden: false,
    properties: [
      p('url', 'String', 'postgres://user:pass@host:5432/db', { required: true, secret: true }),
      p('createTable', 'Boolean', 'create the subscription tables when absent', { default: true }),
      p('batchSize', 'Integer', 'rows per insert', { default: 1000, min: 1, max: 10_000 }),
      RECONNECT,
    ],
    rules: [],
  },
  {
    key: 'mysql',
    name: 'MySQL / MariaDB',
    group: 'Databases',
    description:
      'Rows in a MySQL or MariaDB table (batched inserts; the table shape is in docs/integrations.md).',
    transport: 'mysql',
    experimental: false,
    hidden: false,
    properties: [
      p('url', 'String', 'mysql://user:pass@host:3306/db', { required: true, secret: true }),
      p('createTable', 'Boolean', 'create the subscription tables when absent', { default: true }),
      p('batchSize', 'Integer', 'rows per insert', { default: 1000, min: 1, max: 10_000 }),
      RECONNECT,
    ],
    rules: [],
  },
  {
    key: 'redis-streams',
    name: 'Redis Streams',
    group: 'Databases',
    description:
      'XADD to Redis streams (remote name = stream key); remote-to-local reads streams with XREAD.',
    transport: 'redis',
    experimental: false,
    hidden: false,
    properties: [
      p('url', 'String', 'redis://[:password@]host:6379/db', { required: true, secret: true }),
      p('maxLen', 'Integer', 'approximate MAXLEN of each stream (0 = unbounded)', { default: 0, min: 0 }),
      RECONNECT,
    ],
    rules: [],
  },
];

/** The catalogue, in display order. */
export const PROVIDERS: readonly ProviderDef[] = DRAFTS.map((d) => ({
  ...d,
  id: uuidv5(`millwright.integration.provider/${d.key}`),
  properties: [...d.properties, ...QUEUE_PROPERTIES],
}));

const BY_ID = new Map(PROVIDERS.map((x) => [x.id, x]));

export function findProvider(id: string): ProviderDef | undefined {
  return BY_ID.get(id.toLowerCase());
}

/** The provider key of the local UNS feed (`millwright up`). */
export const MQTT_PROVIDER_ID = PROVIDERS.find((x) => x.key === 'mqtt')!.id;

/** The providers by group, in catalogue order; a group is experimental when all its providers are. */
export function groupedProviders(
  includeHidden: boolean,
): { group: string; experimental: boolean; providers: ProviderDef[] }[] {
  const groups = new Map<string, ProviderDef[]>();
  for (const p of PROVIDERS) {
    if (p.hidden && !includeHidden) continue;
    groups.set(p.group, [...(groups.get(p.group) ?? []), p]);
  }
  return [...groups].map(([group, providers]) => ({
    group,
    experimental: providers.every((p) => p.experimental),
    providers,
  }));
}
