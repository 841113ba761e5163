import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createNamespaces } from './0001-create-namespaces.js';

export const namespaceMigrations: ModuleMigrations = {
  module: 'uns.namespace',
  migrations: [createNamespaces],
};
