/** High availability of edges: pairs, the lease of the active role with its epoch, the routes. */
export { haModule } from './module.js';
export { HaService, type HaView, type HaConfigureRequest } from './service.js';
export { haMigrations } from './migrations/index.js';
