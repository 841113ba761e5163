/** Every driver this build can poll. */
import type { DriverFactory } from '../types.js';
import { bacnetDriver } from './bacnet.js';
import { generatorDriver } from './generator.js';
import { logixDrivers } from './logix.js';
import { modbusDrivers } from './modbus.js';
import { mqttDriver } from './mqtt.js';
import { opcuaDriver } from './opcua.js';
import { s7Driver } from './s7.js';
import { snmpDriver } from './snmp.js';

export const ACQUISITION_DRIVERS: DriverFactory[] = [
  generatorDriver,
  ...modbusDrivers,
  mqttDriver,
  opcuaDriver,
  s7Driver,
  snmpDriver,
  ...logixDrivers,
  bacnetDriver,
];
