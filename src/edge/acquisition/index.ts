/**
 * Acquisition: the polling engine and the drivers that talk to machines (Generator, Modbus TCP,
 * RTU over TCP, UDP, RTU, ASCII, OPC UA client, MQTT), and `/devicehub/metrics`.
 */
import type { DriverFactory } from './types.js';
import { generatorDriver } from './drivers/generator.js';
import { modbusDrivers } from './drivers/modbus.js';
import { mqttDriver } from './drivers/mqtt.js';
import { opcuaDriver } from './drivers/opcua.js';

export {
  AcquisitionEngine,
  type AcquisitionOptions,
  type ConnectionState,
  type DeviceStatus,
} from './engine.js';
export { acquisitionRoutes, acquisitionMetrics } from './metrics.js';
export { compileFormula, FormulaError, type Formula } from './formula.js';
export * from './types.js';

/** Every driver this build can poll. */
export const ACQUISITION_DRIVERS: DriverFactory[] = [
  generatorDriver,
  ...modbusDrivers,
  mqttDriver,
  opcuaDriver,
];
