/** The edge service's options: flags, `MILLWRIGHT_EDGE_*` variables and config-file keys. */
import {
  COMMON_OPTIONS,
  configWith,
  defaultDataDir,
  toConfigObject,
  type ConfigValues,
  type HttpConfig,
  type OptionSpec,
} from '../kernel/config.js';

export const EDGE_OPTIONS: readonly OptionSpec[] = [
  {
    name: 'port',
    type: 'int',
    min: 0,
    max: 65535,
    default: 8443,
    description: 'HTTPS port of the REST and GraphQL APIs',
  },
  { name: 'host', type: 'string', default: '0.0.0.0', description: 'address to listen on' },
  {
    name: 'data-dir',
    type: 'path',
    default: defaultDataDir('edge'),
    description: 'directory of the database, logs and certificate',
  },
  {
    name: 'http',
    type: 'bool',
    default: false,
    description: 'serve plain HTTP (only behind a TLS-terminating proxy)',
  },
  { name: 'tls-cert', type: 'path', description: 'PEM certificate to serve instead of the self-signed one' },
  { name: 'tls-key', type: 'path', description: 'PEM private key of --tls-cert' },
  {
    name: 'database-url',
    type: 'url',
    secret: true,
    description: 'postgres://... to keep the edge database in PostgreSQL instead of SQLite',
  },
  {
    name: 'admin-password',
    type: 'string',
    secret: true,
    description: 'first-run password of the local admin (else generated and printed once)',
  },
  {
    name: 'token-ttl',
    type: 'int',
    min: 60,
    max: 86400,
    default: 3600,
    description: 'lifetime of access and session tokens, seconds',
  },
  {
    name: 'auth-rate-limit',
    type: 'int',
    min: 1,
    max: 1_000_000,
    default: 30,
    description: 'token and login attempts per minute per client address',
  },
  {
    name: 'datahub-port',
    type: 'int',
    min: 0,
    max: 65535,
    default: 4222,
    description: 'port of the DataHub NATS gateway',
  },
  {
    name: 'datahub-host',
    type: 'string',
    default: '0.0.0.0',
    description: 'address the DataHub NATS gateway listens on',
  },
  {
    name: 'datahub-gateway',
    type: 'bool',
    default: true,
    description: 'serve the DataHub NATS gateway (optional with --nats-url)',
  },
  {
    name: 'datahub-trust-local',
    type: 'bool',
    default: true,
    description: 'NATS clients on this host need neither TLS nor an access key',
  },
  {
    name: 'datahub-max-payload',
    type: 'int',
    min: 1024,
    max: 64 * 1024 * 1024,
    default: 1024 * 1024,
    description: 'largest DataHub message payload, bytes',
  },
  {
    name: 'datahub-max-pending',
    type: 'int',
    min: 64 * 1024,
    max: 4 * 1024 * 1024 * 1024,
    default: 64 * 1024 * 1024,
    description: 'bytes a NATS client may fall behind before it is cut as a slow consumer',
  },
  {
    name: 'datahub-max-prefixes',
    type: 'int',
    min: 1,
    max: 1_000_000,
    default: 1000,
    description: 'subject prefixes with DataHub counters of their own; the rest are counted as "_other"',
  },
  {
    name: 'nats-url',
    type: 'url',
    secret: true,
    description: 'nats://[user:pass@]host:port of a NATS cluster the DataHub joins (external mode)',
  },
  {
    name: 'acquisition-backoff-max',
    type: 'int',
    min: 500,
    max: 3_600_000,
    default: 30_000,
    description: 'longest wait between reconnect attempts to a device, milliseconds',
  },
  {
    name: 'uns-mqtt-url',
    type: 'url',
    secret: true,
    description: 'mqtt[s]://host:port of the UNS broker that digital twin UNS attributes read from',
  },
  { name: 'uns-username', type: 'string', description: 'UNS broker account of the edge (--uns-mqtt-url)' },
  {
    name: 'uns-password',
    type: 'string',
    secret: true,
    description: 'password of --uns-username',
  },
  {
    name: 'uns-feed',
    type: 'bool',
    default: true,
    description: '`millwright up`: feed every tag to the local UNS through an MQTT integration (made once)',
  },
  {
    name: 'uns-feed-prefix',
    type: 'string',
    default: '',
    description:
      'topic prefix of the UNS feed (default edge/<host name>); tags go to <prefix>/<device>/<tag>',
  },
  {
    name: 'opcua-enabled',
    type: 'bool',
    default: true,
    description: 'run the OPC UA server (the DeviceHub tags as an address space; its start takes seconds)',
  },
  {
    name: 'opcua-port',
    type: 'int',
    min: 0,
    max: 65535,
    default: 4840,
    description: 'port of the OPC UA server (opc.tcp)',
  },
  {
    name: 'opcua-host',
    type: 'string',
    default: '0.0.0.0',
    description: 'address the OPC UA server listens on',
  },
  {
    name: 'analytics-persist-interval',
    type: 'int',
    min: 1000,
    max: 3_600_000,
    default: 30_000,
    description: 'how often analytics windows longer than a minute save their state, milliseconds',
  },
  {
    name: 'devicehub-csv-max-bytes',
    type: 'int',
    min: 1024,
    max: 1024 * 1024 * 1024,
    default: 64 * 1024 * 1024,
    description: 'largest CSV file UploadCsv accepts, bytes (a larger one is refused whole)',
  },
  ...COMMON_OPTIONS,
];

export interface EdgeConfig extends HttpConfig {
  port: number;
  host: string;
  dataDir: string;
  http: boolean;
  tlsCert?: string | undefined;
  tlsKey?: string | undefined;
  databaseUrl?: string | undefined;
  adminPassword?: string | undefined;
  tokenTtl: number;
  authRateLimit: number;
  logLevel: string;
  logFormat: string;
  logRetentionEntries: number;
  logRetentionDays: number;
  shutdownTimeout: number;
  datahubPort: number;
  datahubHost: string;
  datahubGateway: boolean;
  datahubTrustLocal: boolean;
  datahubMaxPayload: number;
  datahubMaxPending: number;
  datahubMaxPrefixes: number;
  natsUrl?: string | undefined;
  acquisitionBackoffMax: number;
  unsMqttUrl?: string | undefined;
  unsUsername?: string | undefined;
  unsPassword?: string | undefined;
  opcuaEnabled: boolean;
  opcuaPort: number;
  opcuaHost: string;
  analyticsPersistInterval: number;
  devicehubCsvMaxBytes: number;
  graphqlMaxQueryBytes: number;
  graphqlMaxAliases: number;
  graphqlMaxFields: number;
  graphqlCacheBytes: number;
  unsFeed: boolean;
  unsFeedPrefix: string;
}

export function toEdgeConfig(v: ConfigValues): EdgeConfig {
  return toConfigObject<EdgeConfig>(v);
}

/** The defaults, with `overrides` on top: for tests and for composing services in one process. */
export function edgeConfigWith(overrides: Partial<EdgeConfig>): EdgeConfig {
  return configWith<EdgeConfig>(EDGE_OPTIONS, overrides);
}
