/** Edge logs across the fleet (query, hits, statistics) and device log forwarding through the links. */
export { edgeLogsModule } from './module.js';
export { EdgeLogsService } from './service.js';
export { EDGE_LOGS_MAX_DEVICES, EDGE_LOGS_MAX_FETCH } from './schemas.js';
export { EDGE_LOGS_CONCURRENCY } from './fan-out.js';
