/** The cloud storage module's public surface. */
export { cloudstorageModule } from './module.js';
export { CloudstorageService, type SyncFile, type SyncStatus, type Target } from './service.js';
