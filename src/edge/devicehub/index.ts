/**
 * The DeviceHub's configuration side: the driver catalogue, devices and tags, served as GraphQL
 * at `/devicehub/v2` (with GraphQL multipart uploads for `UploadCsv`).
 */
export { devicehubMigrations } from './migrations/index.js';
export { DeviceHubService } from './service.js';
export { DevicehubConfigSection, type DevicehubSection } from './config-section.js';
export type {
  Device,
  DeviceConfig,
  DevicehubChange,
  DevicehubReadModel,
  Register,
  TagConfig,
  TagRuntimeState,
  TagState,
  TagStatusSource,
} from './types.js';
export { BrowseService, type Browser, type BrowseNode } from './browse.js';
export { DRIVERS, findDriver, findDriverByIdOrName, type DriverDef } from './catalogue/index.js';

export {
  devicehubModule,
  createDevicehub,
  devicehubSchema,
  mountDevicehub,
  DEVICEHUB_PATH,
  DEVICEHUB_MAX_COST,
  type Devicehub,
} from './module.js';
export { writeTag, WRITE_TIMEOUT_MS, MAX_WRITE_TIMEOUT_MS, type WriteTagResponse } from './write.js';
