/** The connector of each transport. */
import type { Transport } from '../catalogue.js';
import { MqttConnector } from './mqtt.js';
import type { ConnectorFactory } from './types.js';

export const CONNECTORS: Partial<Record<Transport, ConnectorFactory>> = {
  mqtt: (ctx) => new MqttConnector(ctx),
};
