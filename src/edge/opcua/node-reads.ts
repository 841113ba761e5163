/**
 * The reads of the OPC UA node tree (the service's queries): nodes by reference and by ID, the
 * children of a folder or device, the folder skeleton and the search, paged. `OpcuaService` holds
 * the tree and extends these.
 */
import { badRequest, notFound } from '../../kernel/errors.js';
import type { NodeTree } from './tree.js';
import type { NodeKind, OpcuaNode } from './types.js';

/** Most pages items. */
export const MAX_PAGE = 1000;

export abstract class NodeReads {
  abstract get tree(): NodeTree;

  node(ref: string): OpcuaNode {
    const n = this.tree.get(ref);
    if (!n) throw notFound(`no node with reference ${JSON.stringify(ref)}`);
    return n;
  }

  nodesByRef(refs: readonly string[]): OpcuaNode[] {
    return refs.map((r) => this.tree.get(r)).filter((n): n is OpcuaNode => n !== undefined);
  }

  /** Deprecated lookup by ID: every node with one of these IDs (several when IDs collide). */
  nodesById(ids: readonly string[] | null | undefined): OpcuaNode[] {
    const all = this.tree.ordered();
    if (!ids) return all;
    const set = new Set(ids);
    return all.filter((n) => set.has(n.id));
  }

  path(ref: string): string {
    return this.tree.path(ref);
  }

  hasChildren(ref: string): boolean {
    return this.tree.hasChildren(ref);
  }

  #parent(ref: string | null | undefined): string | null {
    if (ref === null || ref === undefined || ref === '') return null;
    const n = this.node(ref);
    if (n.kind === 'Tag') throw badRequest(`node ${ref} is a tag: tags have no children`);
    return ref;
  }

  /** Tag children of a folder or device. */
  folderItems(parentRef: string | null | undefined, limit?: number | null, offset?: number | null) {
    return page(this.tree.children(this.#parent(parentRef), ['Tag']), limit, offset);
  }

  /** Folder and device children of a folder or device (null: the top level). */
  childFolders(parentRef: string | null | undefined): OpcuaNode[] {
    return this.tree.children(this.#parent(parentRef), ['Folder', 'Device']);
  }

  childFoldersPage(parentRef: string | null | undefined, limit?: number | null, offset?: number | null) {
    return page(this.childFolders(parentRef), limit, offset);
  }

  /** Every folder and device under `rootRef` (or the whole tree), parents first, with depths. */
  folderSkeleton(rootRef?: string | null, maxDepth?: number | null) {
    const out: Array<{ node: OpcuaNode; depth: number; tagCount: number }> = [];
    const walk = (parent: string | null, depth: number) => {
      if (maxDepth !== null && maxDepth !== undefined && depth > maxDepth) return;
      for (const n of this.tree.children(parent, ['Folder', 'Device'])) {
        out.push({ node: n, depth, tagCount: this.tree.children(n.ref, ['Tag']).length });
        walk(n.ref, depth + 1);
      }
    };
    walk(this.#parent(rootRef), 0);
    return out;
  }

  search(
    input: { Text?: string | null; Kinds?: NodeKind[] | null; SyncStates?: string[] | null },
    limit?: number | null,
    offset?: number | null,
  ) {
    const text = (input.Text ?? '').toLowerCase();
    const kinds = input.Kinds && input.Kinds.length > 0 ? new Set(input.Kinds) : null;
    const states = input.SyncStates && input.SyncStates.length > 0 ? new Set(input.SyncStates) : null;
    const hits = this.tree
      .ordered()
      .filter(
        (n) =>
          (!kinds || kinds.has(n.kind)) &&
          (!states || states.has(n.syncState)) &&
          (text === '' ||
            n.id.toLowerCase().includes(text) ||
            n.name.toLowerCase().includes(text) ||
            n.description.toLowerCase().includes(text)),
      );
    return page(hits, limit, offset);
  }
}

export function page<T>(items: T[], limit?: number | null, offset?: number | null) {
  const l = Math.min(Math.max(limit ?? 100, 1), MAX_PAGE);
  const o = Math.max(offset ?? 0, 0);
  return { items: items.slice(o, o + l), total: items.length };
}
