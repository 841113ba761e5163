import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createTrustSetting } from './0001-create-trust-setting.js';

export const trustMigrations: ModuleMigrations = { module: 'edge.trust', migrations: [createTrustSetting] };
