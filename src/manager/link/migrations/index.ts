import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createLinkPeers } from './0001-create-link-peers.js';

export const linkMigrations: ModuleMigrations = { module: 'manager.link', migrations: [createLinkPeers] };
