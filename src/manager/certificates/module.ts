/**
 * CA certificates on the manager's seam: their table, the admin console and main API routes, and
 * the `CA_CERTIFICATES_SYNC` task type (registered with the tasks module) that pushes them to the
 * edges of a project over their links.
 */
import type { ManagerModule } from '../modules.js';
import { certificateMigrations } from './migrations/index.js';
import { CertificateRepository } from './repository.js';
import { adminCertificateRoutes, certificateRoutes } from './routes.js';
import { CertificateService } from './service.js';

declare module '../modules.js' {
  interface ManagerModules {
    certificates: CertificateService;
  }
}

export const certificatesModule: ManagerModule<'certificates'> = {
  name: 'certificates',
  migrations: certificateMigrations,
  requires: ['admin', 'fleet', 'bridge', 'tasks'],
  start: (ctx) =>
    new CertificateService(
      new CertificateRepository(ctx.database),
      ctx.module('fleet'),
      ctx.module('bridge'),
      ctx.module('tasks'),
    ),
  async mount(ctx, certificates) {
    await ctx.app.register(certificateRoutes, { certificates });
    await ctx.module('admin').app.register(adminCertificateRoutes, { certificates });
  },
};
