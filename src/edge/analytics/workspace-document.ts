/**
 * A workspace as a portable document: its export, the check of a document and its import (new IDs,
 * references inside the document follow). Composed from the service's own operations.
 */
import { badRequest } from '../../kernel/errors.js';
import { uuidv7 } from '../../kernel/ids.js';
import { checkParameters, type InputSpec } from './catalogue.js';
import { compileExpression, loadExpressions } from './processors.js';
import type { Position, Workspace } from './repository.js';
import type { AnalyticsService } from './service.js';

/** A workspace as a portable document (ExportWorkspace, ImportWorkspace, the config section). */
export interface WorkspaceDocument {
  version: 1;
  workspace: { name: string; description: string };
  groups: Array<{ key: string; name: string; description: string }>;
  processors: Array<{
    key: string;
    name: string;
    kind: string;
    group: string | null;
    enabled: boolean;
    position: Position;
    /** Inputs that read another processor of the document name it by its `key`. */
    parameters: Record<string, unknown>;
  }>;
}

export function exportWorkspace(svc: AnalyticsService, id: string): WorkspaceDocument {
  const w = svc.workspace(id);
  const groups = svc.workspaceGroups(id);
  const instances = svc.workspaceInstances(id);
  const gkey = new Map(groups.map((g, k) => [g.id, `g${k + 1}`]));
  const pkey = new Map(instances.map((p, k) => [p.id, `p${k + 1}`]));
  return {
    version: 1,
    workspace: { name: w.name, description: w.description },
    groups: groups.map((g) => ({ key: gkey.get(g.id)!, name: g.name, description: g.description })),
    processors: instances.map((p) => ({
      key: pkey.get(p.id)!,
      name: p.name,
      kind: p.kind,
      group: p.groupId ? (gkey.get(p.groupId) ?? null) : null,
      enabled: p.enabled,
      position: p.position,
      parameters: {
        ...p.parameters,
        inputs: p.parameters.inputs.map((i) => {
          if (!i.processor) return i;
          const k = pkey.get(i.processor);
          // A processor of another workspace stays an output subject.
          if (!k) {
            const { processor, ...rest } = i;
            return { ...rest, subject: `analytics.publish.${processor}` };
          }
          return { ...i, processor: k };
        }),
      },
    })),
  };
}

/** Problems of a workspace document (empty when it can be imported). */
export async function documentIssues(doc: unknown): Promise<string[]> {
  const d = doc as WorkspaceDocument;
  if (
    !d ||
    typeof d !== 'object' ||
    d.version !== 1 ||
    !d.workspace ||
    !Array.isArray(d.groups) ||
    !Array.isArray(d.processors)
  )
    return ['not a workspace export (version 1 with workspace, groups, processors)'];
  const issues: string[] = [];
  if (typeof d.workspace.name !== 'string' || d.workspace.name.trim() === '')
    issues.push('workspace.name is required');
  const keys = new Set<string>();
  for (const p of d.processors) {
    if (typeof p?.key !== 'string' || keys.has(p.key)) issues.push('processor keys must be unique strings');
    else keys.add(p.key);
  }
  const groups = new Set(d.groups.map((g) => g?.key));
  for (const [n, p] of d.processors.entries()) {
    if (!p || typeof p !== 'object') continue;
    if (p.group != null && !groups.has(p.group))
      issues.push(`processors[${n}].group "${p.group}" is not a group key`);
    try {
      const params = checkParameters(p.kind, p.parameters);
      for (const i of params.inputs)
        if (i.processor && !keys.has(i.processor))
          issues.push(`processors[${n}] reads unknown key "${i.processor}"`);
      if (p.kind === 'expression') {
        await loadExpressions();
        compileExpression(params.expression as string);
      }
    } catch (err) {
      issues.push(`processors[${n}]: ${(err as Error).message}`);
    }
  }
  return issues;
}

/** Creates a new workspace from a document (new IDs; references inside it follow). */
export async function importWorkspace(
  svc: AnalyticsService,
  doc: unknown,
  name?: string | null,
): Promise<Workspace> {
  const issues = await documentIssues(doc);
  if (issues.length) throw badRequest(`Document: ${issues.join('; ')}`);
  const d = doc as WorkspaceDocument;
  const ws = await svc.createWorkspace({
    name: name ?? d.workspace.name,
    description: d.workspace.description ?? '',
  });
  try {
    await svc.importInto(ws.id, d);
  } catch (err) {
    await svc.deleteWorkspace(ws.id).catch(() => undefined);
    throw err;
  }
  return ws;
}

/** Creates the groups and processors of `d` in workspace `wsId`. */
export async function importInto(svc: AnalyticsService, wsId: string, d: WorkspaceDocument): Promise<void> {
  const gid = new Map<string, string>();
  for (const g of d.groups)
    gid.set(
      g.key,
      (await svc.createGroup({ workspaceId: wsId, name: g.name, description: g.description })).id,
    );
  const pid = new Map(d.processors.map((p) => [p.key, uuidv7()]));
  const created = new Set<string>();
  const byKey = new Map(d.processors.map((p) => [p.key, p]));
  const visiting = new Set<string>();
  const make = async (key: string): Promise<void> => {
    if (created.has(key)) return;
    if (visiting.has(key)) throw badRequest('Document: the processors form a cycle');
    visiting.add(key);
    const p = byKey.get(key)!;
    const params = (p.parameters ?? {}) as { inputs?: InputSpec[] };
    const inputs = (params.inputs ?? []).map((i) => {
      if (!i.processor) return i;
      if (!pid.has(i.processor))
        throw badRequest(`Document: processor "${key}" reads unknown key "${i.processor}"`);
      return { ...i, processor: pid.get(i.processor)! };
    });
    for (const i of params.inputs ?? []) if (i.processor) await make(i.processor);
    await svc.createInstance(
      {
        workspaceId: wsId,
        groupId: p.group ? (gid.get(p.group) ?? null) : null,
        name: p.name,
        kind: p.kind,
        enabled: p.enabled ?? true,
        position: p.position ?? { x: 0, y: 0 },
        parameters: { ...params, inputs },
      },
      pid.get(key),
    );
    created.add(key);
  };
  for (const p of d.processors) await make(p.key);
}
