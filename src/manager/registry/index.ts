/** Remote image pull: `IMAGE_PULL` tasks asking an external registry for an image's manifest. */
export { RegistryService, type PullParams } from './service.js';
export { RemotePullBody } from './schemas.js';
export { registryRoutes } from './routes.js';
export { registryModule } from './module.js';
