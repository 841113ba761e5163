/**
 * The OPC UA module's part of a configuration template: the server settings and the node tree
 * (as an uploadable hierarchy). Users are not part of it (their passwords are only kept hashed);
 * certificates stay with the device.
 *
 *     { "settings": { "allowAnonymous"?, "securityPolicies"?, "securityModes"?, "maxSessions"?,
 *                     "autoSync"?, "autoAcceptUntrusted"? },
 *       "nodes": [ { "ID", "Kind", "Name"?, "Description"?, "OriginID"?, "AccessControl"?,
 *                    "Children"? } ] }
 *
 * Nodes are keyed by their path of IDs (`Plant/Line 1/level`), settings by name. `legacy`
 * creates or replaces the template's nodes (a node keeps the children the template does not
 * name) and sets the settings it gives; `use` makes the tree exactly the template's (nodes left
 * out is an empty tree) and the settings it leaves out take their defaults; `merge-apply` merges
 * the template's nodes field by field over the current ones. Nothing but `use` removes a node.
 *
 * `apply` writes through an `OpcuaRepository` over the apply's transaction
 * (`OpcuaRepository.inTransaction`), with the rules of UploadHierarchy and UpdateServerSettings
 * (`OpcuaService.planHierarchy`, `resolveSettings`); the live service reads the committed tree
 * and settings again in `afterCommit` (`OpcuaService.reload`), and the running address space
 * follows. Settings that need a restart stay pending (RestartRequired) until the server restarts.
 */
import type {
  ApplyMode,
  ConfigSection,
  SectionApplyContext,
  SectionDiff,
  SectionIssue,
} from '../../kernel/service/config-section.js';
import { attemptItem } from '../../kernel/service/keyed-section.js';
import { canonical } from '../../kernel/service/section-shape.js';
import { OpcuaRepository } from './repository.js';
import { hierarchyOf, resolveSettings, type OpcuaService } from './service.js';
import { NodeTree } from './tree.js';
import {
  DEFAULT_SETTINGS,
  RESTART_SETTINGS,
  SECURITY_MODES,
  SECURITY_POLICIES,
  type HierarchyInput,
  type ServerSettings,
} from './types.js';

export interface OpcuaSection {
  settings: ServerSettings;
  nodes: HierarchyInput[];
}

const SETTING_KEYS: Array<keyof ServerSettings> = [
  'allowAnonymous',
  'securityPolicies',
  'securityModes',
  'maxSessions',
  'autoSync',
  'autoAcceptUntrusted',
];

/** A node's own fields as an upload reads them (defaults filled in), for comparing. */
const own = (n: HierarchyInput): string =>
  canonical({
    ID: n.ID,
    Kind: n.Kind,
    Name: n.Name ?? n.ID,
    Description: n.Description ?? '',
    OriginID: n.OriginID ?? null,
    AccessControl: n.Kind === 'Tag' ? (n.AccessControl ?? 'ReadOnly') : null,
  });

/** Node paths of a hierarchy, with each node's own fields. */
function flatten(nodes: HierarchyInput[], prefix = '', out = new Map<string, string>()): Map<string, string> {
  for (const n of nodes) {
    const path = prefix ? `${prefix}/${n.ID}` : n.ID;
    out.set(path, own(n));
    if (n.Children) flatten(n.Children, path, out);
  }
  return out;
}

/**
 * `template` laid over `current` by path: the template's nodes win (field by field with
 * `fieldwise`, else as a whole), the children they do not name stay, and the rest of `current`
 * stays. A node whose Kind changes is the template's, children and all.
 */
function overlay(
  current: HierarchyInput[],
  template: HierarchyInput[],
  fieldwise: boolean,
): HierarchyInput[] {
  const out = [...current];
  const at = new Map(current.map((n, i) => [n.ID, i]));
  for (const n of template) {
    const i = at.get(n.ID);
    if (i === undefined) {
      at.set(n.ID, out.push(n) - 1);
      continue;
    }
    const was = out[i]!;
    if (was.Kind !== n.Kind) {
      out[i] = n;
      continue;
    }
    const { Children: wasChildren, ...wasOwn } = was;
    const { Children: children, ...mine } = n;
    const kids = overlay(wasChildren ?? [], children ?? [], fieldwise);
    out[i] = { ...(fieldwise ? { ...wasOwn, ...mine } : mine), ...(kids.length ? { Children: kids } : {}) };
  }
  return out;
}

/** The settings a template gives (left-out and null values are not given). */
const given = (s: Partial<ServerSettings> | undefined): Partial<ServerSettings> =>
  Object.fromEntries(Object.entries(s ?? {}).filter(([, v]) => v !== undefined && v !== null));

/** What the configuration becomes when `next` is applied over `current` with `mode`. */
function targetOf(current: OpcuaSection, next: OpcuaSection, mode: ApplyMode): OpcuaSection {
  if (mode === 'merge-apply') return mergeSections(current, next).merged;
  if (mode === 'use')
    return { settings: { ...DEFAULT_SETTINGS, ...given(next.settings) }, nodes: next.nodes ?? [] };
  return {
    settings: { ...current.settings, ...given(next.settings) },
    nodes: overlay(current.nodes, next.nodes ?? [], false),
  };
}

function mergeSections(
  current: OpcuaSection,
  template: OpcuaSection,
): { merged: OpcuaSection; overwrites: string[] } {
  const settings = { ...current.settings, ...given(template.settings) };
  const nodes = overlay(current.nodes, template.nodes ?? [], true);
  const overwrites: string[] = [];
  for (const k of SETTING_KEYS)
    if (canonical(current.settings[k]) !== canonical(settings[k])) overwrites.push(`settings.${k}`);
  const before = flatten(current.nodes);
  for (const [path, v] of flatten(nodes))
    if (before.has(path) && before.get(path) !== v) overwrites.push(`nodes/${path}`);
  return { merged: { settings, nodes }, overwrites };
}

export class OpcuaConfigSection implements ConfigSection<OpcuaSection> {
  readonly name = 'opcua';
  readonly #service: OpcuaService;

  constructor(service: OpcuaService) {
    this.#service = service;
  }

  export(): Promise<OpcuaSection> {
    return Promise.resolve({ settings: this.#service.settings, nodes: this.#service.exportHierarchy() });
  }

  async validate(doc: unknown): Promise<SectionIssue[]> {
    const issues: SectionIssue[] = [];
    if (!doc || typeof doc !== 'object')
      return [{ path: '', message: 'the opcua section must be an object' }];
    const d = doc as Partial<OpcuaSection>;
    const s = (d.settings ?? {}) as Partial<Record<keyof ServerSettings, unknown>>;
    for (const k of Object.keys(s)) {
      if (!SETTING_KEYS.includes(k as keyof ServerSettings))
        issues.push({ path: `settings.${k}`, message: 'unknown setting' });
    }
    for (const k of ['allowAnonymous', 'autoSync', 'autoAcceptUntrusted'] as const) {
      if (s[k] !== undefined && typeof s[k] !== 'boolean')
        issues.push({ path: `settings.${k}`, message: 'must be a boolean' });
    }
    if (s.maxSessions !== undefined && (!Number.isInteger(s.maxSessions) || (s.maxSessions as number) < 1))
      issues.push({ path: 'settings.maxSessions', message: 'must be a positive integer' });
    const policies = s.securityPolicies;
    if (
      policies !== undefined &&
      (!Array.isArray(policies) || policies.some((p) => !SECURITY_POLICIES.includes(p)))
    )
      issues.push({
        path: 'settings.securityPolicies',
        message: `must be a list of ${SECURITY_POLICIES.join(', ')}`,
      });
    const modes = s.securityModes;
    if (modes !== undefined && (!Array.isArray(modes) || modes.some((m) => !SECURITY_MODES.includes(m))))
      issues.push({
        path: 'settings.securityModes',
        message: `must be a list of ${SECURITY_MODES.join(', ')}`,
      });
    if (d.nodes !== undefined) {
      if (!Array.isArray(d.nodes)) issues.push({ path: 'nodes', message: 'must be a list of nodes' });
      else {
        const problem = await this.#service.checkHierarchy(d.nodes);
        if (problem) issues.push({ path: 'nodes', message: problem });
      }
    }
    return issues;
  }

  diff(current: OpcuaSection, next: OpcuaSection, mode: ApplyMode): SectionDiff {
    const target = targetOf(current, next, mode);
    const before = flatten(current.nodes);
    const after = flatten(target.nodes);
    const diff: SectionDiff = { added: [], changed: [], removed: [], restarts: [] };
    for (const [path, v] of after) {
      if (!before.has(path)) diff.added.push(`nodes/${path}`);
      else if (before.get(path) !== v) diff.changed.push(`nodes/${path}`);
    }
    for (const path of before.keys()) if (!after.has(path)) diff.removed.push(`nodes/${path}`);
    for (const k of SETTING_KEYS) {
      if (canonical(current.settings[k]) === canonical(target.settings[k])) continue;
      diff.changed.push(`settings.${k}`);
      if (RESTART_SETTINGS.includes(k) && !diff.restarts.includes('opcua server'))
        diff.restarts.push('opcua server');
    }
    return diff;
  }

  merge(current: OpcuaSection, template: OpcuaSection): { merged: OpcuaSection; overwrites: string[] } {
    return mergeSections(current, template);
  }

  async apply(next: OpcuaSection, ctx: SectionApplyContext): Promise<void> {
    // Every read and write below goes through ctx.trx; the live service is not touched.
    const repo = OpcuaRepository.inTransaction(ctx.trx);
    const nodes = await repo.loadNodes();
    const settings = await repo.loadSettings();
    const current: OpcuaSection = { settings, nodes: hierarchyOf(new NodeTree(nodes)) };
    const target = targetOf(current, next, ctx.mode);
    const attempt = (item: string, fn: () => Promise<unknown>) => attemptItem(ctx, 'opcua', item, fn);
    await attempt('settings', async () => {
      const resolved = resolveSettings(settings, target.settings);
      if (canonical(resolved) !== canonical(settings)) await repo.saveSettings(resolved);
    });
    ctx.progress(1, 2);
    await attempt('nodes', async () => {
      const plan = await this.#service.planHierarchy(nodes, target.nodes, ctx.trx);
      await repo.saveNodes(plan.upserts, plan.deletes);
    });
    ctx.progress(2, 2);
    ctx.afterCommit(() => this.#service.reload());
  }
}

export function opcuaConfigSection(service: OpcuaService): OpcuaConfigSection {
  return new OpcuaConfigSection(service);
}
