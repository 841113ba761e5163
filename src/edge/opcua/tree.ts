/**
 * The node tree in memory: nodes by reference, children by parent, paths. The service keeps it
 * and the `opcua_node` table in step; the OPC UA address space is built from it.
 */
import type { NodeKind, OpcuaNode } from './types.js';

const ROOT = '';

/** The key of a node's ID under its parent in `#byId`. */
const idKey = (parentRef: string | null, id: string) => `${parentRef ?? ROOT}\u0000${id}`;

export class NodeTree {
  readonly #nodes = new Map<string, OpcuaNode>();
  readonly #children = new Map<string, Set<string>>();
  /**
   * The refs of the nodes with an ID under a parent: `child` in constant time instead of a scan
   * of the parent's children (the DeviceHub sync looks up every tag under its device, which made
   * a sync of 10,000 tags under one device quadratic).
   */
  readonly #byId = new Map<string, Set<string>>();

  constructor(nodes: Iterable<OpcuaNode> = []) {
    for (const n of nodes) this.put(n);
  }

  get size(): number {
    return this.#nodes.size;
  }

  get(ref: string): OpcuaNode | undefined {
    return this.#nodes.get(ref);
  }

  all(): IterableIterator<OpcuaNode> {
    return this.#nodes.values();
  }

  /** Adds or replaces a node (moving it when its parent changed). */
  put(node: OpcuaNode): void {
    const old = this.#nodes.get(node.ref);
    if (old && old.parentRef !== node.parentRef) this.#children.get(old.parentRef ?? ROOT)?.delete(node.ref);
    if (old) this.#unindex(old);
    this.#nodes.set(node.ref, node);
    const k = idKey(node.parentRef, node.id);
    let refs = this.#byId.get(k);
    if (!refs) this.#byId.set(k, (refs = new Set()));
    refs.add(node.ref);
    const key = node.parentRef ?? ROOT;
    let set = this.#children.get(key);
    if (!set) this.#children.set(key, (set = new Set()));
    set.add(node.ref);
  }

  /** Removes a node and its subtree; answers the removed nodes, children before parents. */
  removeSubtree(ref: string): OpcuaNode[] {
    const out: OpcuaNode[] = [];
    const walk = (r: string) => {
      for (const c of [...(this.#children.get(r) ?? [])]) walk(c);
      const n = this.#nodes.get(r);
      if (!n) return;
      this.#nodes.delete(r);
      this.#unindex(n);
      this.#children.delete(r);
      this.#children.get(n.parentRef ?? ROOT)?.delete(r);
      out.push(n);
    };
    walk(ref);
    return out;
  }

  /** Children of `parentRef` (null: the top level), by position then ID. */
  children(parentRef: string | null, kinds?: readonly NodeKind[]): OpcuaNode[] {
    const refs = this.#children.get(parentRef ?? ROOT);
    if (!refs) return [];
    const out: OpcuaNode[] = [];
    for (const r of refs) {
      const n = this.#nodes.get(r)!;
      if (!kinds || kinds.includes(n.kind)) out.push(n);
    }
    return out.sort((a, b) => a.position - b.position || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  hasChildren(ref: string): boolean {
    return (this.#children.get(ref)?.size ?? 0) > 0;
  }

  /** How many children `parentRef` has (null: the top level), without listing them. */
  childCount(parentRef: string | null): number {
    return this.#children.get(parentRef ?? ROOT)?.size ?? 0;
  }

  /** The child of `parentRef` with that ID; of several, the first added (as a scan would find). */
  child(parentRef: string | null, id: string): OpcuaNode | undefined {
    const refs = this.#byId.get(idKey(parentRef, id));
    if (!refs || refs.size === 0) return undefined;
    if (refs.size === 1) return this.#nodes.get(refs.values().next().value!);
    for (const r of this.#children.get(parentRef ?? ROOT) ?? []) {
      if (refs.has(r)) return this.#nodes.get(r);
    }
    return undefined;
  }

  #unindex(node: OpcuaNode): void {
    const k = idKey(node.parentRef, node.id);
    const refs = this.#byId.get(k);
    refs?.delete(node.ref);
    if (refs?.size === 0) this.#byId.delete(k);
  }

  /** The IDs from the top level down to the node. */
  pathIds(ref: string): string[] {
    const ids: string[] = [];
    for (let n = this.#nodes.get(ref); n; n = n.parentRef ? this.#nodes.get(n.parentRef) : undefined) {
      ids.push(n.id);
    }
    return ids.reverse();
  }

  path(ref: string): string {
    return this.pathIds(ref).join('/');
  }

  /** Every node, parents before children. */
  ordered(): OpcuaNode[] {
    const out: OpcuaNode[] = [];
    const walk = (parent: string | null) => {
      for (const n of this.children(parent)) {
        out.push(n);
        walk(n.ref);
      }
    };
    walk(null);
    return out;
  }

  depth(ref: string): number {
    return this.pathIds(ref).length - 1;
  }
}

/** The OPC UA NodeId (namespace 1, string) of a node at `path`. */
export function uaNodeId(path: string): string {
  return `ns=1;s=${path}`;
}
