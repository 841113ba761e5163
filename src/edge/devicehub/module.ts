/** The DeviceHub on the edge's seam: the driver catalogue, devices and tags at `/devicehub/v2`. */
import type { EdgeModule } from '../modules.js';
import { devicehubOptions } from './options.js';
import { createDevicehub, devicehubMigrations, mountDevicehub, type Devicehub } from './index.js';

declare module '../modules.js' {
  interface EdgeModules {
    devicehub: Devicehub;
  }
}

export const devicehubModule: EdgeModule<'devicehub', typeof devicehubOptions> = {
  name: 'devicehub',
  options: devicehubOptions,
  migrations: devicehubMigrations,
  start: (ctx) => createDevicehub(ctx.database),
  mount: (ctx, devicehub) =>
    mountDevicehub(ctx.app, devicehub, { csvMaxBytes: ctx.config.devicehubCsvMaxBytes }),
  configSection: (devicehub) => devicehub.configSection,
};
