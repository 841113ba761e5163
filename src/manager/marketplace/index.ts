/** The marketplace (`/mpcs/`): a catalogue of items with versions, and installs on edges as tasks. */
export { marketplaceModule, MARKETPLACE_MAX_EVENTS, type Marketplace } from './module.js';
export { MarketplaceService, type ItemView } from './service.js';
export { ITEM_KINDS, INSTALLABLE, type ItemKind } from './content.js';
