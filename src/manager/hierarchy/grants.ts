/**
 * Branch permissions: a company admin grants a user `edit` or `read` access to a node and
 * everything under it, revokes it, and lists the operators of a node (the grants on it and on its
 * ancestors). The admin console lists and deletes every grant.
 */
import { badRequest, conflict, notFound } from '../../kernel/errors.js';
import { uuidv7 } from '../../kernel/ids.js';
import { requireCompany, requireNode, type CompanyAccess } from './access.js';
import type { Access, GrantWithPath } from './repository.js';
import type { HierarchyService } from './service.js';

export interface GrantView {
  grantId: string;
  companyId: string;
  nodeId: string;
  nodeKey: string;
  nodeName: string;
  username: string;
  access: Access;
  createdBy: string;
  createdAt: string;
}

export function grantView(g: GrantWithPath): GrantView {
  return {
    grantId: g.id,
    companyId: g.company_id,
    nodeId: g.node_id,
    nodeKey: g.node_key,
    nodeName: g.node_name,
    username: g.username,
    access: g.access,
    createdBy: g.created_by,
    createdAt: new Date(g.created_at).toISOString(),
  };
}

export class GrantService {
  readonly #h: HierarchyService;
  readonly #userExists: (username: string) => Promise<boolean>;

  constructor(h: HierarchyService, userExists: (username: string) => Promise<boolean>) {
    this.#h = h;
    this.#userExists = userExists;
  }

  /** Grants (or changes) `username`'s access to the branch at `nodeId`. */
  async grant(a: CompanyAccess, nodeId: string, username: string, access: Access): Promise<GrantView> {
    requireCompany(a, 'admin', 'granting access to a branch');
    const repo = this.#h.repo;
    requireNode(a, await repo.node(a.companyId, nodeId), 'admin', nodeId);
    if (access !== 'edit' && access !== 'read') throw badRequest('access must be "edit" or "read"');
    if (!(await this.#userExists(username))) throw notFound(`user "${username}" not found`);
    return repo.transaction(async (r) => {
      if ((await r.countGrants({ companyId: a.companyId })) >= this.#h.limits.maxGrants) {
        throw conflict(
          `a company has at most ${this.#h.limits.maxGrants} branch grants (--hierarchy-max-grants)`,
        );
      }
      await r.putGrant({
        id: uuidv7(),
        company_id: a.companyId,
        node_id: nodeId,
        username,
        access,
        created_by: a.principal.username ?? a.principal.tokenName,
        created_at: Date.now(),
      });
      const g = (await r.grantsOf(a.companyId, username)).find((x) => x.node_id === nodeId);
      return grantView(g!);
    });
  }

  async revoke(a: CompanyAccess, nodeId: string, username: string): Promise<void> {
    requireCompany(a, 'admin', 'revoking access to a branch');
    requireNode(a, await this.#h.repo.node(a.companyId, nodeId), 'admin', nodeId);
    if (!(await this.#h.repo.deleteGrantOf(nodeId, username))) {
      throw notFound(`user "${username}" holds no grant on node "${nodeId}"`);
    }
  }

  /** The grants that cover the node: on it and on its ancestors, top first. */
  async operators(a: CompanyAccess, nodeId: string): Promise<GrantView[]> {
    const node = requireNode(a, await this.#h.repo.node(a.companyId, nodeId), 'read', nodeId);
    return (await this.#h.repo.grantsCovering(a.companyId, node.path)).map(grantView);
  }

  // --- admin console ---------------------------------------------------------------------------

  async list(filter: { username?: string; companyId?: string }, limit: number, offset: number) {
    const [rows, total] = await Promise.all([
      this.#h.repo.allGrants(filter, limit, offset),
      this.#h.repo.countGrants(filter),
    ]);
    return { items: rows.map(grantView), total };
  }

  async get(grantId: string): Promise<GrantView> {
    const g = await this.#h.repo.grant(grantId);
    if (!g) throw notFound(`branch grant "${grantId}" not found`);
    return grantView(g);
  }

  async delete(grantId: string): Promise<void> {
    if (!(await this.#h.repo.deleteGrant(grantId))) throw notFound(`branch grant "${grantId}" not found`);
  }
}
