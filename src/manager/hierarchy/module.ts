/**
 * The asset hierarchy on the manager's seam: hierarchy templates, nodes (fleet edges placed as
 * nodes), branch permissions and the CSV import and export; main and admin console routes.
 */
import type { ManagerModule } from '../modules.js';
import { hierarchyOptions } from './options.js';
import { hierarchyMigrations } from './migrations/index.js';
import { HierarchyRepository } from './repository.js';
import { adminBranchRoutes, hierarchyRoutes } from './routes.js';
import { HierarchyService } from './service.js';
import { NodeService } from './nodes.js';
import { GrantService } from './grants.js';

/** The module's API: the templates (and the caller's access), the nodes, the branch grants. */
export interface Hierarchy {
  hierarchy: HierarchyService;
  nodes: NodeService;
  grants: GrantService;
}

declare module '../modules.js' {
  interface ManagerModules {
    hierarchy: Hierarchy;
  }
}

export const hierarchyModule: ManagerModule<'hierarchy', typeof hierarchyOptions> = {
  name: 'hierarchy',
  options: hierarchyOptions,
  migrations: hierarchyMigrations,
  requires: ['admin', 'auth', 'fleet'],
  start(ctx) {
    const fleet = ctx.module('fleet');
    const auth = ctx.module('auth');
    const hierarchy = new HierarchyService(
      new HierarchyRepository(ctx.database),
      {
        company: (principal, ref) => fleet.company(principal, ref),
        device: (principal, deviceId) => fleet.device(principal, deviceId),
      },
      {
        maxNodes: ctx.config.hierarchyMaxNodes,
        maxDepth: ctx.config.hierarchyMaxDepth,
        maxTemplates: ctx.config.hierarchyMaxTemplates,
        maxGrants: ctx.config.hierarchyMaxGrants,
      },
      ctx.logger,
    );
    return {
      hierarchy,
      nodes: new NodeService(hierarchy),
      grants: new GrantService(hierarchy, (username) => auth.hasUser(username)),
    };
  },
  async mount(ctx, api) {
    await ctx.app.register(hierarchyRoutes, { ...api, csvMaxBytes: ctx.config.hierarchyCsvMaxBytes });
    const fleet = ctx.module('fleet');
    await ctx.module('admin').app.register(adminBranchRoutes, {
      grants: api.grants,
      company: (p, companyName) => fleet.company(p, { companyName }),
    });
  },
};
