/**
 * The OPC UA module's part of a configuration template: the server settings and the node tree
 * (as an uploadable hierarchy). Users are not part of it (their passwords are only kept hashed);
 * certificates stay with the device.
 */
import type {
  ApplyMode,
  ConfigSection,
  SectionApplyContext,
  SectionDiff,
  SectionIssue,
} from '../../kernel/service/config-section.js';
import type { OpcuaService } from './service.js';
import {
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

/** Node paths of a hierarchy, with what each node is. */
function flatten(nodes: HierarchyInput[], prefix = '', out = new Map<string, string>()): Map<string, string> {
  for (const n of nodes) {
    const path = prefix ? `${prefix}/${n.ID}` : n.ID;
    const { Children, ...own } = n;
    out.set(path, JSON.stringify(own));
    if (Children) flatten(Children, path, out);
  }
  return out;
}

/** `next` laid over `current` by path: nodes of `next` win, the rest of `current` stays. */
function merge(current: HierarchyInput[], next: HierarchyInput[]): HierarchyInput[] {
  const out = current.map((n) => ({ ...n }));
  for (const n of next) {
    const i = out.findIndex((c) => c.ID === n.ID);
    if (i < 0) out.push(n);
    else out[i] = { ...out[i]!, ...n, Children: merge(out[i]!.Children ?? [], n.Children ?? []) };
  }
  return out;
}

/** The section before it is transactional: no `merge`, and `apply` writes through the service. */
export type OpcuaSectionDraft = Omit<ConfigSection<OpcuaSection>, 'merge' | 'apply'> & {
  apply(next: OpcuaSection, ctx: SectionApplyContext | ApplyMode): Promise<void>;
};

export function opcuaConfigSection(service: OpcuaService): OpcuaSectionDraft {
  return {
    name: 'opcua',
    export: () => Promise.resolve({ settings: service.settings, nodes: service.exportHierarchy() }),
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
          const problem = await service.checkHierarchy(d.nodes);
          if (problem) issues.push({ path: 'nodes', message: problem });
        }
      }
      return issues;
    },
    diff(current: OpcuaSection, next: OpcuaSection, mode: ApplyMode): SectionDiff {
      const target = mode === 'merge-apply' ? merge(current.nodes, next.nodes) : next.nodes;
      const before = flatten(current.nodes);
      const after = flatten(target);
      const diff: SectionDiff = { added: [], changed: [], removed: [], restarts: [] };
      for (const [path, v] of after) {
        if (!before.has(path)) diff.added.push(`nodes/${path}`);
        else if (before.get(path) !== v) diff.changed.push(`nodes/${path}`);
      }
      for (const path of before.keys()) if (!after.has(path)) diff.removed.push(`nodes/${path}`);
      for (const k of SETTING_KEYS) {
        if (next.settings[k] === undefined) continue;
        if (JSON.stringify(current.settings[k]) !== JSON.stringify(next.settings[k])) {
          diff.changed.push(`settings.${k}`);
          if (RESTART_SETTINGS.includes(k) && !diff.restarts.includes('opcua server'))
            diff.restarts.push('opcua server');
        }
      }
      return diff;
    },
    // Not hooked to the module yet: it writes through the service, not the apply's transaction.
    async apply(next: OpcuaSection, ctx: SectionApplyContext | ApplyMode): Promise<void> {
      const mode = typeof ctx === 'string' ? ctx : ctx.mode;
      await service.updateSettings(next.settings);
      const nodes = mode === 'merge-apply' ? merge(service.exportHierarchy(), next.nodes) : next.nodes;
      await service.uploadHierarchy(nodes);
    },
  };
}
