/** The applications module's public surface. */
export { appsModule, type AppsApi } from './module.js';
export { AppsService, type Application } from './service.js';
export { RegistryService, REGISTRY_SCHEMAS, type Registry } from './registries.js';
