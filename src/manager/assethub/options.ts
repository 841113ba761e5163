/** The asset hub client's settings: timeouts, how much it keeps, telemetry delivery. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const assetHubOptions = Type.Object({
  assetHubTimeout: Option.int({
    minimum: 500,
    maximum: 300_000,
    default: 15_000,
    description: 'milliseconds one call to the asset hub (another manager) may take',
  }),
  assetHubMaxImports: Option.int({
    minimum: 1,
    maximum: 1_000_000,
    default: 10_000,
    description: 'items imported from the asset hub this manager keeps at most (all companies)',
  }),
  assetHubTelemetryMax: Option.int({
    minimum: 10,
    maximum: 1_000_000,
    default: 10_000,
    description:
      'usage events waiting for (or parked from) delivery to the asset hub at most; the oldest are dropped beyond',
  }),
  assetHubTelemetryAttempts: Option.int({
    minimum: 1,
    maximum: 100,
    default: 5,
    description:
      'failed deliveries of a usage event before it is parked (POST /admin/v1/asset-hub/telemetry/unpark)',
  }),
  assetHubTelemetryInterval: Option.int({
    minimum: 100,
    maximum: 3_600_000,
    default: 30_000,
    description: 'milliseconds between attempts to deliver waiting usage events to the asset hub',
  }),
});
