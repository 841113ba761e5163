/**
 * The nodes of a company's asset hierarchy: create, read with a depth, roots, the full tree,
 * update, move, delete (with `force` for a subtree). A node may place one edge of the fleet
 * (`deviceId`). Each node stores its materialized path (see the migration), so a subtree is one
 * index range whatever its size.
 */
import { badRequest, conflict } from '../../kernel/errors.js';
import { uuidv7 } from '../../kernel/ids.js';
import { grantedTops, levelAt, requireCompany, requireNode, type CompanyAccess } from './access.js';
import { viewRow, type HierarchyRepository, type NodeRow } from './repository.js';
import { SubtreeRows, treeJson, treesJson } from './tree-json.js';
import { hasControl, validateLabel, type HierarchyService } from './service.js';

export interface NodeView {
  id: string;
  key: string;
  name: string;
  level: string | null;
  description: string;
  parentId: string | null;
  depth: number;
  deviceId: string | null;
  attributes: Record<string, string>;
  createdAt: string;
  updatedAt: string;
  children?: NodeView[];
}

export interface NodeInput {
  name?: string | undefined;
  key?: string | undefined;
  level?: string | null | undefined;
  description?: string | undefined;
  deviceId?: string | null | undefined;
  attributes?: Record<string, string> | undefined;
}

/** Attributes of a node: at most this many. */
export const MAX_ATTRIBUTES = 100;

/** The path segment of a node: its ID's 32 hex digits. */
export const segment = (id: string) => id.replace(/-/g, '');

export function nodeView(r: NodeRow): NodeView {
  return {
    id: r.id,
    key: r.key,
    name: r.name,
    level: r.level,
    description: r.description,
    parentId: r.parent_id,
    depth: r.depth,
    deviceId: r.device_id,
    attributes: JSON.parse(r.attributes) as Record<string, string>,
    createdAt: new Date(r.created_at).toISOString(),
    updatedAt: new Date(r.updated_at).toISOString(),
  };
}

export function validateKey(key: string): string {
  if (key === '' || key.length > 200 || hasControl(key)) {
    throw badRequest('key must have 1 to 200 characters and no control characters');
  }
  return key;
}

export function validateAttributes(attributes: unknown): Record<string, string> {
  if (attributes === null || typeof attributes !== 'object' || Array.isArray(attributes)) {
    throw badRequest('attributes must be an object of strings');
  }
  const entries = Object.entries(attributes as Record<string, unknown>);
  if (entries.length > MAX_ATTRIBUTES) throw badRequest(`a node has at most ${MAX_ATTRIBUTES} attributes`);
  for (const [k, v] of entries) {
    if (typeof v !== 'string') throw badRequest(`attribute "${k}" must be a string`);
  }
  return attributes as Record<string, string>;
}

export class NodeService {
  readonly #h: HierarchyService;
  readonly #repo: HierarchyRepository;

  constructor(h: HierarchyService) {
    this.#h = h;
    this.#repo = h.repo;
  }

  async create(a: CompanyAccess, parentId: string | null, input: NodeInput): Promise<NodeView> {
    const parent =
      parentId === null
        ? null
        : requireNode(a, await this.#repo.node(a.companyId, parentId), 'edit', parentId);
    if (!parent) requireCompany(a, 'edit', 'creating a root node');
    const depth = parent ? parent.depth + 1 : 1;
    if (depth > this.#h.limits.maxDepth) {
      throw badRequest(`a hierarchy has at most ${this.#h.limits.maxDepth} levels (--hierarchy-max-depth)`);
    }
    const id = uuidv7();
    const now = Date.now();
    const row: NodeRow = {
      id,
      company_id: a.companyId,
      key: validateKey(input.key ?? id),
      parent_id: parent?.id ?? null,
      path: (parent?.path ?? '') + segment(id),
      depth,
      name: validateLabel(input.name ?? '', 'name'),
      level: await this.#level(a, input.level ?? null),
      description: input.description ?? '',
      device_id: input.deviceId ? await this.#device(a, input.deviceId) : null,
      attributes: JSON.stringify(validateAttributes(input.attributes ?? {})),
      created_at: now,
      updated_at: now,
    };
    await this.#repo.transaction(async (repo) => {
      if ((await repo.countNodes(a.companyId)) >= this.#h.limits.maxNodes) {
        throw conflict(
          `a company has at most ${this.#h.limits.maxNodes} hierarchy nodes (--hierarchy-max-nodes)`,
        );
      }
      await this.#unique(repo, a, row.key, row.device_id, null);
      await repo.insertNodes([row]);
    });
    return nodeView(row);
  }

  /**
   * The node with its children down to `depth` levels below it (0: the node alone), as the JSON
   * text of its `NodeView`, as UTF-8 bytes (see `tree-json.ts`).
   */
  async read(a: CompanyAccess, id: string, depth: number): Promise<Buffer> {
    const node = requireNode(a, await this.#repo.node(a.companyId, id), 'read', id);
    const depths = Array.from({ length: depth + 1 }, (_, i) => node.depth + i);
    const rows = new SubtreeRows(depth > 0);
    if (depth === 0) rows.add(viewRow(node));
    else await this.#repo.eachSubtreeView(a.companyId, node.path, depths, (row) => rows.add(row));
    return treeJson(rows, node.id);
  }

  /** The roots the caller sees: the company's roots, or the top-most nodes granted to it. */
  async roots(a: CompanyAccess): Promise<NodeView[]> {
    if (a.companyLevel !== null) return (await this.#repo.roots(a.companyId)).map(nodeView);
    const tops = grantedTops(a);
    const rows = await Promise.all(tops.map((g) => this.#repo.node(a.companyId, g.node_id)));
    return rows.filter((r): r is NodeRow => r !== undefined).map(nodeView);
  }

  /**
   * Every node the caller sees, nested: the JSON text of `{"items": [NodeView, ...]}`, as UTF-8
   * bytes.
   */
  async tree(a: CompanyAccess): Promise<Buffer> {
    const parts: SubtreeRows[] = [];
    for (const path of a.companyLevel !== null ? [''] : grantedTops(a).map((g) => g.path)) {
      const rows = new SubtreeRows();
      await this.#repo.eachSubtreeView(a.companyId, path, undefined, (row) => rows.add(row));
      parts.push(rows);
    }
    return treesJson(parts, '{"items":', '}');
  }

  async update(a: CompanyAccess, id: string, input: NodeInput): Promise<NodeView> {
    const node = requireNode(a, await this.#repo.node(a.companyId, id), 'edit', id);
    const set = {
      key: input.key !== undefined ? validateKey(input.key) : node.key,
      name: input.name !== undefined ? validateLabel(input.name, 'name') : node.name,
      level: input.level !== undefined ? await this.#level(a, input.level) : node.level,
      description: input.description ?? node.description,
      device_id:
        input.deviceId === undefined
          ? node.device_id
          : input.deviceId
            ? await this.#device(a, input.deviceId)
            : null,
      attributes:
        input.attributes !== undefined
          ? JSON.stringify(validateAttributes(input.attributes))
          : node.attributes,
      updated_at: Date.now(),
    };
    await this.#repo.transaction(async (repo) => {
      await this.#unique(
        repo,
        a,
        set.key === node.key ? null : set.key,
        set.device_id === node.device_id ? null : set.device_id,
        id,
      );
      await repo.updateNode({ ...node, ...set });
    });
    return nodeView({ ...node, ...set });
  }

  /** The node (and its subtree) under `parentId`, or a root when null. */
  async move(a: CompanyAccess, id: string, parentId: string | null): Promise<NodeView> {
    const node = requireNode(a, await this.#repo.node(a.companyId, id), 'edit', id);
    const parent =
      parentId === null
        ? null
        : requireNode(a, await this.#repo.node(a.companyId, parentId), 'edit', parentId);
    if (!parent) requireCompany(a, 'edit', 'moving a node to the top');
    if (parent && parent.path.startsWith(node.path)) {
      throw badRequest(`node "${node.name}" cannot move under itself or one of its descendants`);
    }
    const to = (parent?.path ?? '') + segment(node.id);
    await this.#repo.transaction(async (repo) => {
      const below = (await repo.maxDepthUnder(a.companyId, node.path)) - node.depth;
      if ((parent?.depth ?? 0) + 1 + below > this.#h.limits.maxDepth) {
        throw badRequest(`the move would make the hierarchy deeper than ${this.#h.limits.maxDepth} levels`);
      }
      await repo.movePaths(a.companyId, node.path, to, Date.now());
      await repo.setParent(id, parent?.id ?? null);
    });
    return nodeView((await this.#repo.node(a.companyId, id))!);
  }

  /** Deletes the node; one with children only with `force` (then its whole subtree goes). */
  async remove(a: CompanyAccess, id: string, force: boolean): Promise<{ deleted: number }> {
    const node = requireNode(a, await this.#repo.node(a.companyId, id), 'edit', id);
    return this.#repo.transaction(async (repo) => {
      const children = await repo.countChildren(id);
      if (children > 0 && !force) {
        throw conflict(
          `node "${node.name}" has ${children} children: delete with force=true to delete its subtree`,
        );
      }
      return { deleted: await repo.deleteSubtree(a.companyId, node.path) };
    });
  }

  /** The edges placed on the node and under it (the caller needs edit access to the branch). */
  async devicesUnder(a: CompanyAccess, id: string): Promise<string[]> {
    const node = requireNode(a, await this.#repo.node(a.companyId, id), 'edit', id);
    const rows = await this.#repo.subtree(a.companyId, node.path);
    return rows.flatMap((r) => (r.device_id ? [r.device_id] : []));
  }

  /** The level name, checked against the active template when there is one. */
  async #level(a: CompanyAccess, level: string | null): Promise<string | null> {
    if (level === null || level === '') return null;
    const active = await this.#h.activeTemplate(a);
    if (active && !active.levels.some((l) => l.name === level)) {
      throw badRequest(
        `level "${level}" is not a level of the active template "${active.name}" (${active.levels.map((l) => l.name).join(', ')})`,
      );
    }
    return level;
  }

  /** A device of the company's fleet that the caller may see. */
  async #device(a: CompanyAccess, deviceId: string): Promise<string> {
    const d = await this.#h.fleet.device(a.principal, deviceId);
    if (d.companyId !== a.companyId)
      throw badRequest(`device "${deviceId}" is not in company "${a.companyName}"`);
    return d.id;
  }

  async #unique(
    repo: HierarchyRepository,
    a: CompanyAccess,
    key: string | null,
    deviceId: string | null,
    self: string | null,
  ) {
    if (key !== null && (await repo.nodesByKey(a.companyId, [key])).some((n) => n.id !== self)) {
      throw conflict(`a node with key "${key}" exists in company "${a.companyName}"`);
    }
    if (deviceId !== null) {
      const placed = await repo.nodeByDevice(a.companyId, deviceId);
      if (placed && placed.id !== self) {
        const seen = levelAt(a, placed.path) !== null;
        throw conflict(`device "${deviceId}" is placed already${seen ? ` at node "${placed.name}"` : ''}`);
      }
    }
  }
}
