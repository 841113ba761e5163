/** Configuration templates and snapshots of the edge (contract parts 2.9, 4.2). */
export {
  ConfigService,
  CONFIG_LIMITS,
  type ApplyResult,
  type PreviewResult,
  type TemplateView,
  type SnapshotView,
} from './service.js';
export { TEMPLATE_FORMAT, TEMPLATE_VERSION, type TemplateDocument } from './document.js';
export { configMigrations } from './migrations/index.js';
export { configModule } from './module.js';
