/**
 * Templates on the manager's seam: edge configuration templates kept by the manager, previewed
 * and applied to many edges as `TEMPLATE_APPLY` tasks (registered with the tasks module), over
 * the links through the bridge's call path. Main and admin console routes.
 */
import type { ManagerModule } from '../modules.js';
import { SecretBox } from '../fleet/index.js';
import { EdgeTemplates } from './edge-calls.js';
import { templateMigrations } from './migrations/index.js';
import { TemplateRepository } from './repository.js';
import { adminTemplateRoutes, templateRoutes } from './routes.js';
import { TemplateService } from './service.js';

declare module '../modules.js' {
  interface ManagerModules {
    templates: TemplateService;
  }
}

export const templatesModule: ManagerModule<'templates'> = {
  name: 'templates',
  migrations: templateMigrations,
  requires: ['admin', 'fleet', 'bridge', 'tasks'],
  start: (ctx) =>
    new TemplateService(
      new TemplateRepository(ctx.database),
      SecretBox.forDataDir(ctx.dataDir),
      ctx.module('fleet'),
      new EdgeTemplates(ctx.module('bridge')),
      ctx.module('tasks'),
      ctx.logger,
    ),
  async mount(ctx, templates) {
    await ctx.app.register(templateRoutes, { templates });
    await ctx.module('admin').app.register(adminTemplateRoutes, { templates });
  },
};
