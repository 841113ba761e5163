/** The version probes of the edge: the API release line served and the paths that report it. */
export { EDGE_API_VERSION, VERSION_PROBES, hostInfo, versionReply } from './service.js';
export { versionRoutes } from './routes.js';
export { versionsModule } from './module.js';
