/**
 * Fleet twins (DT2) on the manager's seam: twin models per company, deployed to the edges under a
 * branch of the asset hierarchy through a configuration template task.
 */
import type { ManagerModule } from '../modules.js';
import { dt2Options } from './options.js';
import { dt2Migrations } from './migrations/index.js';
import { Dt2Repository } from './repository.js';
import { dt2Routes } from './routes.js';
import { Dt2Service } from './service.js';

declare module '../modules.js' {
  interface ManagerModules {
    twins: Dt2Service;
  }
}

export const twinsModule: ManagerModule<'twins', typeof dt2Options> = {
  name: 'twins',
  options: dt2Options,
  migrations: dt2Migrations,
  requires: ['fleet', 'hierarchy', 'templates'],
  start(ctx) {
    const fleet = ctx.module('fleet');
    const hierarchy = ctx.module('hierarchy');
    const templates = ctx.module('templates');
    return new Dt2Service(
      new Dt2Repository(ctx.database),
      {
        company: (principal, ref) => fleet.company(principal, ref),
        async devicesUnder(principal, companyName, nodeId) {
          return hierarchy.nodes.devicesUnder(
            await hierarchy.hierarchy.access(principal, companyName),
            nodeId,
          );
        },
        async deploy(principal, companyId, friendlyName, document, deviceIds) {
          const t = await templates.createFromDocument(principal, { friendlyName, companyId }, document);
          const task = await templates.apply(principal, { templateId: t.id, deviceIds });
          return { templateId: t.id, task };
        },
      },
      ctx.config.dt2MaxModels,
      ctx.logger,
    );
  },
  mount: (ctx, dt2) => ctx.app.register(dt2Routes, { dt2 }),
};
