/**
 * The sync of the OPC UA node tree with the DeviceHub: the DeviceHub folder holds a node per device
 * and per tag; nodes that follow a device or tag follow its name and description, and those whose
 * origin is gone are removed with their subtrees. The service reads the DeviceHub and commits.
 */
import { uuidv7 } from '../../kernel/ids.js';
import type { DeviceConfig, TagConfig } from '../devicehub/index.js';
import type { NodeTree } from './tree.js';
import type { NodeKind, OpcuaNode } from './types.js';

/** The folder sync puts the DeviceHub's devices in (top level). */
export const DEVICEHUB_FOLDER = 'DeviceHub';

/** Builds or refreshes the DeviceHub part of `tree` (in place) from its devices and tags. */
export function syncDevicehubFolder(tree: NodeTree, devices: DeviceConfig[], tags: TagConfig[]) {
  const now = Date.now();
  const upserts: OpcuaNode[] = [];
  const added: string[] = [];
  const modified: string[] = [];
  const stateChanged: OpcuaNode[] = [];
  const make = (
    parentRef: string | null,
    kind: NodeKind,
    id: string,
    extra: Partial<OpcuaNode>,
  ): OpcuaNode => {
    const node: OpcuaNode = {
      ref: uuidv7(),
      parentRef,
      kind,
      id,
      name: id,
      description: '',
      originId: null,
      dataType: null,
      accessControl: 'ReadOnly',
      version: 1,
      syncState: 'Synced',
      syncFailureReason: null,
      position: tree.childCount(parentRef),
      updatedAt: now,
      ...extra,
    };
    tree.put(node);
    upserts.push(node);
    added.push(node.ref);
    return node;
  };
  const update = (node: OpcuaNode, changes: Partial<OpcuaNode>) => {
    const next = { ...node, ...changes, syncState: 'Synced' as const, syncFailureReason: null };
    const content =
      next.id !== node.id ||
      next.name !== node.name ||
      next.description !== node.description ||
      next.dataType !== node.dataType;
    if (!content && node.syncState === 'Synced') return;
    if (content) {
      next.version = node.version + 1;
      next.updatedAt = now;
      modified.push(next.ref);
    }
    if (node.syncState !== next.syncState) stateChanged.push(next);
    tree.put(next);
    upserts.push(next);
  };

  const byOrigin = nodesByOrigin(tree);
  let folder = tree.child(null, DEVICEHUB_FOLDER);
  if (!folder) {
    folder = make(null, 'Folder', DEVICEHUB_FOLDER, {
      description: 'the DeviceHub devices and tags, made by SyncNodes',
    });
  }
  const deviceNode = new Map<string, OpcuaNode>();
  for (const d of devices) {
    const nodes = byOrigin.get(`Device:${d.id}`) ?? [];
    for (const n of nodes) {
      update(n, n.parentRef === folder.ref ? { id: d.name, name: d.name, description: d.description } : {});
    }
    const home = nodes.find((n) => n.parentRef === folder.ref);
    deviceNode.set(
      d.id,
      home
        ? tree.get(home.ref)!
        : (tree.child(folder.ref, d.name) ??
            make(folder.ref, 'Device', d.name, { originId: d.id, description: d.description })),
    );
  }
  for (const t of tags) {
    const nodes = byOrigin.get(`Tag:${t.id}`) ?? [];
    const dev = deviceNode.get(t.deviceId)!;
    for (const n of nodes) {
      const home = n.parentRef === dev.ref;
      update(n, {
        ...(home ? { id: t.tagName, name: t.tagName } : {}),
        description: t.description,
        dataType: t.valueType,
      });
    }
    if (nodes.length === 0 && !tree.child(dev.ref, t.tagName)) {
      make(dev.ref, 'Tag', t.tagName, {
        originId: t.id,
        description: t.description,
        dataType: t.valueType,
      });
    }
  }
  const removed = removeOrphans(tree, byOrigin, devices, tags);
  return { upserts, removed, added, modified, stateChanged };
}

/** The device and tag nodes by origin (`Device:<id>`, `Tag:<id>`). */
function nodesByOrigin(tree: NodeTree): Map<string, OpcuaNode[]> {
  const byOrigin = new Map<string, OpcuaNode[]>();
  for (const n of tree.all()) {
    if (n.originId && n.kind !== 'Folder') {
      const key = `${n.kind}:${n.originId}`;
      const list = byOrigin.get(key);
      if (list) list.push(n);
      else byOrigin.set(key, [n]);
    }
  }
  return byOrigin;
}

/** Nodes whose origin is gone are removed with their subtrees; answers the nodes removed. */
function removeOrphans(
  tree: NodeTree,
  byOrigin: Map<string, OpcuaNode[]>,
  devices: DeviceConfig[],
  tags: TagConfig[],
): OpcuaNode[] {
  const deviceIds = new Set(devices.map((d) => d.id));
  const tagIds = new Set(tags.map((t) => t.id));
  const removed: OpcuaNode[] = [];
  for (const [key, nodes] of byOrigin) {
    const [kind, id] = [key.slice(0, key.indexOf(':')), key.slice(key.indexOf(':') + 1)];
    const exists = kind === 'Device' ? deviceIds.has(id) : tagIds.has(id);
    if (exists) continue;
    for (const n of nodes) if (tree.get(n.ref)) removed.push(...tree.removeSubtree(n.ref));
  }
  return removed;
}
