/**
 * Acquisition: the polling engine and the drivers that talk to machines (Generator, Modbus TCP,
 * RTU over TCP, UDP, RTU, ASCII, OPC UA client, MQTT), and `/devicehub/metrics`.
 */
export {
  AcquisitionEngine,
  type AcquisitionOptions,
  type ConnectionState,
  type DeviceStatus,
} from './engine.js';
export { acquisitionMetrics } from './metrics.js';
export { acquisitionRoutes } from './routes.js';
export { ACQUISITION_DRIVERS } from './drivers/index.js';
export { acquisitionModule } from './module.js';
export { compileFormula, FormulaError, type Formula } from './formula.js';
export * from './types.js';
