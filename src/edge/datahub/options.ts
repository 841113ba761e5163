/** The DataHub's settings: its NATS gateway, its limits and external mode. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const datahubOptions = Type.Object({
  datahubPort: Option.port({ default: 4222, description: 'port of the DataHub NATS gateway' }),
  datahubHost: Option.string({
    default: '0.0.0.0',
    description: 'address the DataHub NATS gateway listens on',
  }),
  datahubGateway: Option.bool({
    default: true,
    description: 'serve the DataHub NATS gateway (optional with --nats-url)',
  }),
  datahubTrustLocal: Option.bool({
    default: true,
    description: 'NATS clients on this host need neither TLS nor an access key',
  }),
  datahubMaxPayload: Option.int({
    minimum: 1024,
    maximum: 67_108_864,
    default: 1_048_576,
    description: 'largest DataHub message payload, bytes',
  }),
  datahubMaxPending: Option.int({
    minimum: 65_536,
    maximum: 4_294_967_296,
    default: 67_108_864,
    description: 'bytes a NATS client may fall behind before it is cut as a slow consumer',
  }),
  datahubMaxPrefixes: Option.int({
    minimum: 1,
    maximum: 1_000_000,
    default: 1000,
    description: 'subject prefixes with DataHub counters of their own; the rest are counted as "_other"',
  }),
  natsUrl: Option.optional.url({
    secret: true,
    description: 'nats://[user:pass@]host:port of a NATS cluster the DataHub joins (external mode)',
  }),
});
