import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createCaCertificate } from './0001-create-ca-certificate.js';

export const certificateMigrations: ModuleMigrations = {
  module: 'manager.certificates',
  migrations: [createCaCertificate],
};
