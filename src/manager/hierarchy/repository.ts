/** The asset hierarchy's tables: templates, nodes (with their materialized path) and branch grants. */
import { eachArray, selectArrays, sql, type Transaction } from '../../kernel/db/index.js';
import { BoundRepository } from '../../kernel/db/bound-repository.js';
import { nodeJson } from './tree-json.js';

export type TemplateStatus = 'DRAFT' | 'ACTIVE' | 'ARCHIVED';
export type Access = 'edit' | 'read';

export interface HierarchyTables {
  mgr_asset_template: {
    id: string;
    company_id: string;
    name: string;
    description: string;
    status: TemplateStatus;
    levels: string;
    created_by: string;
    created_at: number;
    updated_at: number;
  };
  mgr_asset_node: {
    id: string;
    company_id: string;
    key: string;
    parent_id: string | null;
    path: string;
    depth: number;
    name: string;
    level: string | null;
    description: string;
    device_id: string | null;
    attributes: string;
    created_at: number;
    updated_at: number;
    /** The node's JSON text before `parentId`, kept by every write of the row (`nodeJson`). */
    json_head: string;
    /** The node's JSON text from `deviceId` to `createdAt` (`nodeJson`). */
    json_tail: string;
  };
  mgr_asset_grant: {
    id: string;
    company_id: string;
    node_id: string;
    username: string;
    access: Access;
    created_by: string;
    created_at: number;
  };
}

export type TemplateRow = HierarchyTables['mgr_asset_template'];
/** A node as the service sees it: its stored JSON text (`json_head`, `json_tail`) is the repository's. */
export type NodeRow = Omit<StoredNodeRow, 'json_head' | 'json_tail'>;
/** A node's row as stored. */
export type StoredNodeRow = HierarchyTables['mgr_asset_node'];
export type GrantRow = HierarchyTables['mgr_asset_grant'];
export type GrantWithPath = GrantRow & { path: string; node_key: string; node_name: string };

/**
 * The columns of a node's view (not its company, nor its path), in the order of `ViewRow`: its
 * id, key and name (siblings sort by them), the fields a move rewrites, and its stored JSON text.
 */
const VIEW_COLUMNS = [
  'id',
  'key',
  'name',
  'parent_id',
  'depth',
  'updated_at',
  'json_head',
  'json_tail',
] as const;
/** A node's view as the values of `VIEW_COLUMNS` (an array: see `selectArrays`). */
export type ViewRow = [
  id: string,
  key: string,
  name: string,
  parentId: string | null,
  depth: number,
  updatedAt: number,
  head: string,
  tail: string,
];

/** `row` as a `ViewRow` (its JSON text written afresh: the same as stored). */
export const viewRow = (r: NodeRow): ViewRow => [
  r.id,
  r.key,
  r.name,
  r.parent_id,
  r.depth,
  r.updated_at,
  ...nodeJson(r),
];

/** A lone surrogate (UTF-16 that is not text): neither store keeps one as it is. */
const LONE_SURROGATE = /\p{Cs}/gu;
const wellFormed = (s: string) => s.replace(LONE_SURROGATE, '\ufffd');
const wellFormedOrNull = (s: string | null) => (s === null ? null : wellFormed(s));

/**
 * `row` as stored, with its JSON text. Its text columns are written well-formed (a lone surrogate
 * as U+FFFD): SQLite would keep its bytes and read them back as three U+FFFD, PostgreSQL as one,
 * and the stored JSON text must say what the columns read back.
 */
const stored = (r: NodeRow): StoredNodeRow => {
  const w: NodeRow = {
    ...r,
    key: wellFormed(r.key),
    name: wellFormed(r.name),
    level: wellFormedOrNull(r.level),
    description: wellFormed(r.description),
    device_id: wellFormedOrNull(r.device_id),
  };
  const [json_head, json_tail] = nodeJson(w);
  return { ...w, json_head, json_tail };
};

/** A node's columns but its stored JSON text (which only a subtree read needs). */
const NODE_COLUMNS = [
  'id',
  'company_id',
  'key',
  'parent_id',
  'path',
  'depth',
  'name',
  'level',
  'description',
  'device_id',
  'attributes',
  'created_at',
  'updated_at',
] as const;

/** The end of the path range of a subtree: hex digits sort before `g` in every collation. */
export const pathEnd = (path: string) => `${path}g`;

/** Rows per INSERT: 15 columns, well under SQLite's and PostgreSQL's bound on parameters. */
const BATCH = 500;

export class HierarchyRepository extends BoundRepository<HierarchyTables, HierarchyRepository> {
  protected bind(trx: Transaction<HierarchyTables>) {
    return new HierarchyRepository(this.database, trx);
  }

  // --- templates -------------------------------------------------------------------------------

  templates(companyId: string): Promise<TemplateRow[]> {
    return this.db
      .selectFrom('mgr_asset_template')
      .selectAll()
      .where('company_id', '=', companyId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
  }

  template(companyId: string, id: string): Promise<TemplateRow | undefined> {
    return this.db
      .selectFrom('mgr_asset_template')
      .selectAll()
      .where('company_id', '=', companyId)
      .where('id', '=', id)
      .executeTakeFirst();
  }

  async countTemplates(companyId: string): Promise<number> {
    const r = await this.db
      .selectFrom('mgr_asset_template')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('company_id', '=', companyId)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async insertTemplate(row: TemplateRow): Promise<void> {
    await this.db.insertInto('mgr_asset_template').values(row).execute();
  }

  async updateTemplate(
    id: string,
    set: Partial<Pick<TemplateRow, 'name' | 'description' | 'status' | 'levels' | 'updated_at'>>,
  ): Promise<void> {
    await this.db.updateTable('mgr_asset_template').set(set).where('id', '=', id).execute();
  }

  /** The company's active template becomes archived (before another is activated). */
  async archiveActive(companyId: string, now: number): Promise<void> {
    await this.db
      .updateTable('mgr_asset_template')
      .set({ status: 'ARCHIVED', updated_at: now })
      .where('company_id', '=', companyId)
      .where('status', '=', 'ACTIVE')
      .execute();
  }

  async deleteTemplate(id: string): Promise<void> {
    await this.db.deleteFrom('mgr_asset_template').where('id', '=', id).execute();
  }

  // --- nodes -----------------------------------------------------------------------------------

  node(companyId: string, id: string): Promise<NodeRow | undefined> {
    return this.db
      .selectFrom('mgr_asset_node')
      .select(NODE_COLUMNS)
      .where('company_id', '=', companyId)
      .where('id', '=', id)
      .executeTakeFirst();
  }

  nodesByKey(companyId: string, keys: string[]): Promise<NodeRow[]> {
    if (keys.length === 0) return Promise.resolve([]);
    return this.db
      .selectFrom('mgr_asset_node')
      .select(NODE_COLUMNS)
      .where('company_id', '=', companyId)
      .where('key', 'in', keys)
      .execute();
  }

  nodeByDevice(companyId: string, deviceId: string): Promise<NodeRow | undefined> {
    return this.db
      .selectFrom('mgr_asset_node')
      .select(NODE_COLUMNS)
      .where('company_id', '=', companyId)
      .where('device_id', '=', deviceId)
      .executeTakeFirst();
  }

  roots(companyId: string): Promise<NodeRow[]> {
    return this.db
      .selectFrom('mgr_asset_node')
      .select(NODE_COLUMNS)
      .where('company_id', '=', companyId)
      .where('depth', '=', 1)
      .orderBy('name')
      .orderBy('key')
      .execute();
  }

  /** The nodes of the subtree at `path` (itself included) down to `maxDepth`, in path order. */
  subtree(companyId: string, path: string, maxDepth?: number): Promise<NodeRow[]> {
    let q = this.db
      .selectFrom('mgr_asset_node')
      .select(NODE_COLUMNS)
      .where('company_id', '=', companyId)
      .where('path', '>=', path)
      .where('path', '<', pathEnd(path));
    if (maxDepth !== undefined) q = q.where('depth', '<=', maxDepth);
    return q.orderBy('path').execute();
  }

  /**
   * What a node's view needs (`nodes.ts`) of the subtree at `path` (itself included): every node,
   * or those at `depths` only. The whole subtree is one range of the `(company_id, path)` index;
   * with depths, one range of the `(company_id, depth, path)` index per depth, so a shallow read
   * of a big subtree touches only the rows it answers. Rows come parents before children.
   */
  subtreeView(companyId: string, path: string, depths?: number[]): Promise<ViewRow[]> {
    return selectArrays<ViewRow>(this.#subtreeQuery(companyId, path, depths));
  }

  /**
   * `subtreeView`'s rows handed to `each` one by one, each let go once handed (a caller that
   * writes a row at once keeps none of them alive: a site is some 5 MB of rows).
   */
  async eachSubtreeView(
    companyId: string,
    path: string,
    depths: number[] | undefined,
    each: (row: ViewRow) => void,
  ): Promise<void> {
    await eachArray<ViewRow>(this.#subtreeQuery(companyId, path, depths), each);
  }

  #subtreeQuery(companyId: string, path: string, depths?: number[]) {
    let q = this.db
      .selectFrom('mgr_asset_node')
      .select(VIEW_COLUMNS)
      .where('company_id', '=', companyId)
      .where('path', '>=', path)
      .where('path', '<', pathEnd(path));
    if (depths !== undefined) q = q.where('depth', 'in', depths);
    return q;
  }

  /** Every node of the company, parents before children (by depth, then key). */
  allNodes(companyId: string): Promise<NodeRow[]> {
    return this.db
      .selectFrom('mgr_asset_node')
      .select(NODE_COLUMNS)
      .where('company_id', '=', companyId)
      .orderBy('depth')
      .orderBy('key')
      .execute();
  }

  async countNodes(companyId: string): Promise<number> {
    const r = await this.db
      .selectFrom('mgr_asset_node')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('company_id', '=', companyId)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async maxDepthUnder(companyId: string, path: string): Promise<number> {
    const r = await this.db
      .selectFrom('mgr_asset_node')
      .select((eb) => eb.fn.max<number>('depth').as('d'))
      .where('company_id', '=', companyId)
      .where('path', '>=', path)
      .where('path', '<', pathEnd(path))
      .executeTakeFirst();
    return Number(r?.d ?? 0);
  }

  async insertNodes(rows: NodeRow[]): Promise<void> {
    for (let i = 0; i < rows.length; i += BATCH) {
      await this.db
        .insertInto('mgr_asset_node')
        .values(rows.slice(i, i + BATCH).map(stored))
        .execute();
    }
  }

  /** Writes the node's own fields (not its place: see `movePaths`, `setParent`) and its JSON text. */
  async updateNode(row: NodeRow): Promise<void> {
    const { key, name, level, description, device_id, attributes, updated_at, json_head, json_tail } =
      stored(row);
    await this.db
      .updateTable('mgr_asset_node')
      .set({ key, name, level, description, device_id, attributes, updated_at, json_head, json_tail })
      .where('id', '=', row.id)
      .execute();
  }

  /** Moves every node of the subtree at `from` under the new path prefix `to` (depths shift too). */
  async movePaths(companyId: string, from: string, to: string, now: number): Promise<void> {
    const shift = (to.length - from.length) / 32;
    await this.db
      .updateTable('mgr_asset_node')
      .set({
        path: sql<string>`${to} || substr(path, ${from.length + 1})`,
        depth: sql<number>`depth + ${shift}`,
        updated_at: now,
      })
      .where('company_id', '=', companyId)
      .where('path', '>=', from)
      .where('path', '<', pathEnd(from))
      .execute();
  }

  async setParent(id: string, parentId: string | null): Promise<void> {
    await this.db.updateTable('mgr_asset_node').set({ parent_id: parentId }).where('id', '=', id).execute();
  }

  async countChildren(id: string): Promise<number> {
    const r = await this.db
      .selectFrom('mgr_asset_node')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('parent_id', '=', id)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** Deletes the subtree at `path` and the grants on its nodes; answers how many nodes went. */
  async deleteSubtree(companyId: string, path: string): Promise<number> {
    const ids = this.db
      .selectFrom('mgr_asset_node')
      .select('id')
      .where('company_id', '=', companyId)
      .where('path', '>=', path)
      .where('path', '<', pathEnd(path));
    await this.db.deleteFrom('mgr_asset_grant').where('node_id', 'in', ids).execute();
    const r = await this.db
      .deleteFrom('mgr_asset_node')
      .where('company_id', '=', companyId)
      .where('path', '>=', path)
      .where('path', '<', pathEnd(path))
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }

  // --- grants ----------------------------------------------------------------------------------

  /** The grants of a user in a company, with the path of the granted node. */
  grantsOf(companyId: string, username: string): Promise<GrantWithPath[]> {
    return this.grantQuery()
      .where('g.company_id', '=', companyId)
      .where('g.username', '=', username)
      .execute();
  }

  /** The grants on `path` or on any of its ancestors (the operators of a node). */
  grantsCovering(companyId: string, path: string): Promise<GrantWithPath[]> {
    const prefixes: string[] = [];
    for (let i = 32; i <= path.length; i += 32) prefixes.push(path.slice(0, i));
    return this.grantQuery()
      .where('g.company_id', '=', companyId)
      .where('n.path', 'in', prefixes)
      .orderBy('n.depth')
      .orderBy('g.username')
      .execute();
  }

  grant(id: string): Promise<GrantWithPath | undefined> {
    return this.grantQuery().where('g.id', '=', id).executeTakeFirst();
  }

  /** Every grant, filtered by user and company when given (the admin console). */
  allGrants(filter: { username?: string; companyId?: string }, limit: number, offset: number) {
    let q = this.grantQuery();
    if (filter.username) q = q.where('g.username', '=', filter.username);
    if (filter.companyId) q = q.where('g.company_id', '=', filter.companyId);
    return q.orderBy('g.created_at').orderBy('g.id').limit(limit).offset(offset).execute();
  }

  async countGrants(filter: { username?: string; companyId?: string }): Promise<number> {
    let q = this.db.selectFrom('mgr_asset_grant').select((eb) => eb.fn.countAll<number>().as('n'));
    if (filter.username) q = q.where('username', '=', filter.username);
    if (filter.companyId) q = q.where('company_id', '=', filter.companyId);
    return Number((await q.executeTakeFirstOrThrow()).n);
  }

  /** Adds the grant, or changes the access of the user's grant on that node. */
  async putGrant(row: GrantRow): Promise<void> {
    await this.db
      .insertInto('mgr_asset_grant')
      .values(row)
      .onConflict((oc) =>
        oc.columns(['node_id', 'username']).doUpdateSet({ access: row.access, created_by: row.created_by }),
      )
      .execute();
  }

  async deleteGrant(id: string): Promise<boolean> {
    const r = await this.db.deleteFrom('mgr_asset_grant').where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  async deleteGrantOf(nodeId: string, username: string): Promise<boolean> {
    const r = await this.db
      .deleteFrom('mgr_asset_grant')
      .where('node_id', '=', nodeId)
      .where('username', '=', username)
      .executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  private grantQuery() {
    return this.db
      .selectFrom('mgr_asset_grant as g')
      .innerJoin('mgr_asset_node as n', 'n.id', 'g.node_id')
      .selectAll('g')
      .select(['n.path as path', 'n.key as node_key', 'n.name as node_name']);
  }
}
