/** Device management: enrolment with an edge manager and the link to it. */
export { DmService, type DmStatus } from './service.js';
export { LinkClient, MAX_BRIDGED_IN_FLIGHT } from './link-client.js';
export { dmMigrations } from './migrations/index.js';
export { dmModule } from './module.js';
