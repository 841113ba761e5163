/**
 * Remote image pull on the manager's seam: `IMAGE_PULL` tasks, and the request route on the admin
 * console API (`POST /admin/v1/registry/image/upload-remote`).
 */
import { SecretBox } from '../fleet/index.js';
import type { ManagerModule } from '../modules.js';
import { registryRoutes } from './routes.js';
import { RegistryService } from './service.js';

declare module '../modules.js' {
  interface ManagerModules {
    registry: RegistryService;
  }
}

export const registryModule: ManagerModule<'registry'> = {
  name: 'registry',
  requires: ['admin', 'tasks'],
  start(ctx) {
    const tasks = ctx.module('tasks');
    const registry = new RegistryService(tasks, SecretBox.forDataDir(ctx.dataDir));
    tasks.register(registry.taskHandler());
    return registry;
  },
  mount: (ctx, registry) => ctx.module('admin').app.register(registryRoutes, { registry }),
};
