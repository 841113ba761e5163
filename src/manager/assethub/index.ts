/** The asset hub: another manager's catalogue browsed, its items imported, updated, synced. */
export { assetHubModule, type AssetHub } from './module.js';
export { AssetHubService } from './service.js';
export type { AssetHubImportTarget, ImportedItem } from './targets.js';
