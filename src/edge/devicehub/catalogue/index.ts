/**
 * The driver catalogue: every driver this build can poll (Generator, the Modbus family, OPC UA
 * client, MQTT) and every driver contract part 2.4 names a rule for. The contract's 4.4.x
 * catalogue has 207 drivers; this one holds only drivers it can describe faithfully (see
 * docs/devicehub.md), and each says whether this build can poll it.
 */
import { bacnetDrivers } from './bacnet.js';
import { generatorDrivers } from './generator.js';
import { finsDrivers } from './fins.js';
import { instrumentDrivers } from './instruments.js';
import { logixDrivers } from './logix.js';
import { miscDrivers } from './misc.js';
import { modbusDrivers } from './modbus.js';
import { mqttDrivers } from './mqtt.js';
import { opcuaDrivers } from './opcua.js';
import { serialPlcDrivers } from './serial-plc.js';
import { siemensDrivers } from './siemens.js';
import { snmpDrivers } from './snmp.js';
import { badRequest } from '../../../kernel/errors.js';
import type { DriverDef, PropertyDef } from './types.js';

export * from './types.js';
export { BIT_PLC_RANGES, CMP_LINK_AREAS } from './serial-plc.js';

export const DRIVERS: readonly DriverDef[] = Object.freeze(
  [
    ...generatorDrivers,
    ...modbusDrivers,
    ...opcuaDrivers,
    ...mqttDrivers,
    ...logixDrivers,
    ...siemensDrivers,
    ...snmpDrivers,
    ...finsDrivers,
    ...serialPlcDrivers,
    ...instrumentDrivers,
    ...miscDrivers,
    ...bacnetDrivers,
  ].sort((a, b) => a.name.localeCompare(b.name)),
);

const byId = new Map(DRIVERS.map((d) => [d.id, d]));
const byName = new Map(DRIVERS.map((d) => [d.name.toLowerCase(), d]));
if (byId.size !== DRIVERS.length || byName.size !== DRIVERS.length) {
  throw new Error('driver catalogue: duplicate driver id or name');
}

export function findDriver(id: string): DriverDef | undefined {
  return byId.get(id);
}

/** By ID, or by name (case-insensitive), for callers that know drivers by name (`Generator`). */
export function findDriverByIdOrName(idOrName: string): DriverDef | undefined {
  return byId.get(idOrName) ?? byName.get(idOrName.toLowerCase());
}

/** The property `name` of a driver, or of one of its registers; a 400 that lists the names otherwise. */
export function findProperty(driver: DriverDef, name: string, register?: string | null): PropertyDef {
  let defs = driver.properties;
  let owner = `driver "${driver.name}"`;
  if (register) {
    const reg = driver.registers.find((r) => r.name === register);
    if (!reg) {
      throw badRequest(
        `driver "${driver.name}" has no register ${JSON.stringify(register)}; registers: ${driver.registers.map((r) => r.name).join(', ')}`,
      );
    }
    defs = reg.properties;
    owner = `register "${reg.name}" of driver "${driver.name}"`;
  }
  const def = defs.find((p) => p.name === name);
  if (!def)
    throw badRequest(
      `${owner} has no property ${JSON.stringify(name)}; properties: ${defs.map((p) => p.name).join(', ')}`,
    );
  return def;
}
