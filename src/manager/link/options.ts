/** The edge link's settings: heartbeats, the bridge and the peers of a shared database. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const linkOptions = Type.Object({
  heartbeatInterval: Option.int({
    minimum: 200,
    maximum: 600_000,
    default: 10_000,
    description: 'milliseconds between heartbeats of a linked edge; 3 missed mark it offline',
  }),
  bridgeTimeout: Option.int({
    minimum: 100,
    maximum: 600_000,
    default: 30_000,
    description: 'milliseconds a bridged request may wait for the edge to answer before a 504',
  }),
  bridgeMaxPending: Option.int({
    minimum: 1,
    maximum: 100_000,
    default: 64,
    description: 'bridged requests in flight per device at most (more answer 503)',
  }),
  bridgeMaxSockets: Option.int({
    minimum: 1,
    maximum: 10_000,
    default: 32,
    description:
      "bridged WebSockets (GraphQL subscriptions of an edge's console) open per device at most (more close 1013)",
  }),
  bridgeMaxSocketsPerUser: Option.int({
    minimum: 1,
    maximum: 10_000,
    default: 16,
    description:
      'bridged WebSockets open per manager user or API token at most, all devices together (more close 1013)',
  }),
  maxLinks: Option.int({
    minimum: 1,
    maximum: 1_000_000,
    default: 20_000,
    description: 'edge links connected at once at most',
  }),
  peerUrl: Option.optional.url({
    description:
      'address at which other manager processes on the same database reach this one (default: the listening address)',
  }),
});
