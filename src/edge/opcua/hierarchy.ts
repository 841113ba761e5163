/**
 * The node hierarchy of the OPC UA server as uploaded: the checks of node IDs, the plan of an upload
 * (the tree it makes and what it changes against the current one) and a tree as a hierarchy again.
 */
import { badRequest } from '../../kernel/errors.js';
import { uuidv7 } from '../../kernel/ids.js';
import type { TagConfig } from '../devicehub/index.js';
import { NodeTree } from './tree.js';
import type { HierarchyInput, OpcuaNode } from './types.js';

/** Longest node ID, name and description accepted. */
const MAX_ID = 256;
export const MAX_DESCRIPTION = 4096;

// eslint-disable-next-line no-control-regex -- control characters are what it refuses
const ID_PATTERN = /^[^/\u0000-\u001f]+$/;

export function checkId(id: unknown, what = 'ID'): string {
  if (typeof id !== 'string' || id.length === 0 || id.length > MAX_ID || !ID_PATTERN.test(id)) {
    throw badRequest(
      `${what} ${JSON.stringify(id)} is not valid: 1 to ${MAX_ID} characters, no "/" and no control characters`,
    );
  }
  return id;
}

/** The tree an upload makes, and what it changes against `old` (the current tree). */
export function planUpload(
  input: HierarchyInput[],
  origins: { devices: Set<string>; tags: Map<string, TagConfig> },
  old: NodeTree,
) {
  const oldByPath = new Map<string, OpcuaNode>();
  for (const n of old.all()) oldByPath.set(old.path(n.ref), n);
  const tree = new NodeTree();
  const added: string[] = [];
  const modified: string[] = [];
  const upserts: OpcuaNode[] = [];
  const now = Date.now();
  const walk = (list: HierarchyInput[], parent: OpcuaNode | null, parentPath: string) => {
    const seen = new Set<string>();
    list.forEach((h, position) => {
      const id = checkId(h.ID);
      if (seen.has(id)) {
        throw badRequest(`two nodes under ${parentPath || 'the top level'} have ID ${JSON.stringify(id)}`);
      }
      seen.add(id);
      if (!['Folder', 'Device', 'Tag'].includes(h.Kind))
        throw badRequest(`Kind ${String(h.Kind)} is not valid`);
      if (parent?.kind === 'Tag') throw badRequest(`tag ${parentPath} cannot have children`);
      const path = parentPath ? `${parentPath}/${id}` : id;
      const description = h.Description ?? '';
      if (description.length > MAX_DESCRIPTION)
        throw badRequest(`Description of ${path} is longer than ${MAX_DESCRIPTION} characters`);
      let syncState: OpcuaNode['syncState'] = 'Local';
      let reason: string | null = null;
      let dataType: string | null = null;
      const originId = h.OriginID ?? null;
      if (originId) {
        if (h.Kind === 'Folder') throw badRequest(`folder ${path} cannot have an OriginID`);
        const tag = h.Kind === 'Tag' ? origins.tags.get(originId) : undefined;
        const exists = h.Kind === 'Tag' ? tag !== undefined : origins.devices.has(originId);
        syncState = exists ? 'Synced' : 'Failed';
        if (!exists) reason = `DeviceHub ${h.Kind === 'Tag' ? 'tag' : 'device'} ${originId} does not exist`;
        dataType = tag?.valueType ?? null;
      }
      const fresh: OpcuaNode = {
        ref: uuidv7(),
        parentRef: parent?.ref ?? null,
        kind: h.Kind,
        id,
        name: h.Name ? checkId(h.Name, 'Name') : id,
        description,
        originId,
        dataType,
        accessControl: h.Kind === 'Tag' ? (h.AccessControl ?? 'ReadOnly') : 'ReadOnly',
        version: 1,
        syncState,
        syncFailureReason: reason,
        position,
        updatedAt: now,
      };
      const before = oldByPath.get(path);
      let node = fresh;
      if (before && before.kind === fresh.kind) {
        oldByPath.delete(path);
        node = { ...fresh, ref: before.ref, version: before.version, updatedAt: before.updatedAt };
        const same =
          before.name === node.name &&
          before.description === node.description &&
          before.originId === node.originId &&
          before.accessControl === node.accessControl &&
          before.dataType === node.dataType &&
          before.syncState === node.syncState &&
          before.position === node.position;
        if (!same) {
          node.version = before.version + 1;
          node.updatedAt = now;
          modified.push(node.ref);
          upserts.push(node);
        } else if (before.parentRef !== node.parentRef) {
          upserts.push(node);
        }
      } else {
        added.push(node.ref);
        upserts.push(node);
      }
      tree.put(node);
      if (h.Children && h.Children.length > 0) walk(h.Children, node, path);
    });
  };
  walk(input, null, '');
  // What is left of the old tree is removed (paths that no longer exist or changed kind).
  const removed = [...oldByPath.values()];
  return {
    tree,
    upserts,
    removed,
    added,
    modified,
    // Every change is applied to the running address space at once (node-opcua adds and
    // removes nodes live): nothing waits for a restart.
    result: { added: added.length, removed: removed.length, modified: modified.length, restartRequired: 0 },
  };
}

/** A tree as an uploadable hierarchy (what UploadHierarchy takes). */
export function hierarchyOf(tree: NodeTree): HierarchyInput[] {
  const walk = (parent: string | null): HierarchyInput[] =>
    tree.children(parent).map((n) => {
      const children = walk(n.ref);
      return {
        ID: n.id,
        Kind: n.kind,
        ...(n.name !== n.id ? { Name: n.name } : {}),
        ...(n.description ? { Description: n.description } : {}),
        ...(n.originId ? { OriginID: n.originId } : {}),
        ...(n.kind === 'Tag' ? { AccessControl: n.accessControl } : {}),
        ...(children.length ? { Children: children } : {}),
      };
    });
  return walk(null);
}
