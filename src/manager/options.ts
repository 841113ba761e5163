/** The edge manager's options: flags, `MILLWRIGHT_MANAGER_*` variables and config-file keys. */
import {
  COMMON_OPTIONS,
  configWith,
  defaultDataDir,
  toConfigObject,
  type ConfigValues,
  type HttpConfig,
  type OptionSpec,
} from '../kernel/config.js';

export const MANAGER_OPTIONS: readonly OptionSpec[] = [
  {
    name: 'port',
    type: 'int',
    min: 0,
    max: 65535,
    default: 8444,
    description: 'HTTPS port of the main API (/api/v1, /mpcs) and of the edge link (443 in the product)',
  },
  {
    name: 'admin-port',
    type: 'int',
    min: 0,
    max: 65535,
    default: 8446,
    description: 'HTTPS port of the admin console API (/admin/v1)',
  },
  { name: 'host', type: 'string', default: '0.0.0.0', description: 'address to listen on' },
  {
    name: 'data-dir',
    type: 'path',
    default: defaultDataDir('manager'),
    description: 'directory of the database, logs and certificate',
  },
  {
    name: 'http',
    type: 'bool',
    default: false,
    description:
      'serve plain HTTP (only behind a TLS-terminating proxy; edges then cannot pin a certificate)',
  },
  { name: 'tls-cert', type: 'path', description: 'PEM certificate to serve instead of the self-signed one' },
  { name: 'tls-key', type: 'path', description: 'PEM private key of --tls-cert' },
  {
    name: 'database-url',
    type: 'url',
    secret: true,
    description: 'postgres://... to keep the fleet in PostgreSQL instead of SQLite',
  },
  {
    name: 'heartbeat-interval',
    type: 'int',
    min: 200,
    max: 600_000,
    default: 10_000,
    description: 'milliseconds between heartbeats of a linked edge; 3 missed mark it offline',
  },
  {
    name: 'bridge-timeout',
    type: 'int',
    min: 100,
    max: 600_000,
    default: 30_000,
    description: 'milliseconds a bridged request may wait for the edge to answer before a 504',
  },
  {
    name: 'bridge-max-pending',
    type: 'int',
    min: 1,
    max: 100_000,
    default: 64,
    description: 'bridged requests in flight per device at most (more answer 503)',
  },
  {
    name: 'max-links',
    type: 'int',
    min: 1,
    max: 1_000_000,
    default: 20_000,
    description: 'edge links connected at once at most',
  },
  {
    name: 'activation-ttl',
    type: 'int',
    min: 60,
    max: 30 * 24 * 3600,
    default: 24 * 3600,
    description: 'default lifetime of an activation code, seconds',
  },
  {
    name: 'activation-rate-limit',
    type: 'int',
    min: 1,
    max: 1_000_000,
    default: 600,
    description: 'activation attempts (POST /dm/activate) per minute per client address',
  },
  {
    name: 'peer-url',
    type: 'url',
    description:
      'address at which other manager processes on the same database reach this one (default: the listening address)',
  },
  {
    name: 'task-concurrency',
    type: 'int',
    min: 1,
    max: 10_000,
    default: 64,
    description: 'subtasks (e.g. one template apply on one edge) this process runs at once',
  },
  {
    name: 'task-lease',
    type: 'int',
    min: 1000,
    max: 3_600_000,
    default: 15_000,
    description:
      "milliseconds a claimed subtask stays claimed without renewal; a stopped manager's claims are taken over after it",
  },
  ...COMMON_OPTIONS,
];

export interface ManagerConfig extends HttpConfig {
  port: number;
  adminPort: number;
  host: string;
  dataDir: string;
  http: boolean;
  tlsCert?: string | undefined;
  tlsKey?: string | undefined;
  databaseUrl?: string | undefined;
  heartbeatInterval: number;
  bridgeTimeout: number;
  bridgeMaxPending: number;
  maxLinks: number;
  activationTtl: number;
  activationRateLimit: number;
  peerUrl?: string | undefined;
  taskConcurrency: number;
  taskLease: number;
  logLevel: string;
  logFormat: string;
  logRetentionEntries: number;
  logRetentionDays: number;
  shutdownTimeout: number;
}

export function toManagerConfig(v: ConfigValues): ManagerConfig {
  return toConfigObject<ManagerConfig>(v);
}

/** The defaults, with `overrides` on top: for tests and for composing services in one process. */
export function managerConfigWith(overrides: Partial<ManagerConfig>): ManagerConfig {
  return configWith<ManagerConfig>(MANAGER_OPTIONS, overrides);
}
