/**
 * The edge's OPC UA server: the DeviceHub's tags as a live OPC UA address space (node-opcua),
 * managed over GraphQL at `/opcua/v2` (with subscriptions on the same path), plus
 * `/opcua/service_conf`. The module's public surface.
 */
export { opcuaMigrations } from './migrations/index.js';
export { OpcuaService, DEVICEHUB_FOLDER } from './service.js';
export { OpcuaRepository } from './repository.js';
export { UaServer, uaDataType, type UaServerState } from './server.js';
export type * from './types.js';

export {
  opcuaModule,
  opcuaSchema,
  mountOpcua,
  OPCUA_PATH,
  OPCUA_MAX_COST,
  type OpcuaModuleApi,
} from './module.js';
