import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createOpcua } from './0001-create-opcua.js';

export const opcuaMigrations: ModuleMigrations = {
  module: 'edge.opcua',
  migrations: [createOpcua],
};
