/**
 * The analytics section of a configuration template: workspaces (each as the document
 * `ExportWorkspace` answers) and global variables.
 *
 *     { "workspaces": [ { "version": 1, "workspace": { "name", "description" }, "groups": [...],
 *                         "processors": [...] } ],
 *       "variables": { "<name>": <JSON value> } }
 *
 * Workspaces are keyed by name, variables by name. `validate` checks every processor against the
 * catalogue (kinds, parameters, references, expressions). The analytics runtime owns its rows and
 * its running processors, so `apply` records the change in the apply's transaction only as far as
 * the check goes, and carries it out after the transaction committed (`afterCommit`): a workspace
 * of the template that exists is replaced (its groups and processors made anew), one that does
 * not is created; with mode `use`, workspaces and variables not in the template are deleted.
 */
import { canonical } from '../../kernel/service/section-shape.js';
import type {
  ApplyMode,
  ConfigSection,
  SectionApplyContext,
  SectionDiff,
  SectionIssue,
} from '../../kernel/service/index.js';
import { AnalyticsService, type WorkspaceDocument } from './service.js';

export interface AnalyticsSection {
  workspaces: WorkspaceDocument[];
  variables: Record<string, unknown>;
}

export class AnalyticsConfigSection implements ConfigSection<AnalyticsSection> {
  readonly name = 'analytics';
  readonly #service: AnalyticsService;

  constructor(service: AnalyticsService) {
    this.#service = service;
  }

  export(): Promise<AnalyticsSection> {
    const s = this.#service;
    const workspaces = [...s.workspaces.values()]
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((w) => s.exportWorkspace(w.id));
    const variables: Record<string, unknown> = {};
    for (const v of [...s.variables.values()].sort((a, b) => (a.name < b.name ? -1 : 1)))
      variables[v.name] = v.value;
    return Promise.resolve({ workspaces, variables });
  }

  async validate(doc: unknown): Promise<SectionIssue[]> {
    const issues: SectionIssue[] = [];
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc))
      return [{ path: '', message: 'must be an object' }];
    const d = doc as Partial<AnalyticsSection>;
    for (const k of Object.keys(d))
      if (k !== 'workspaces' && k !== 'variables') issues.push({ path: k, message: 'unknown field' });
    if (d.workspaces !== undefined && !Array.isArray(d.workspaces))
      issues.push({ path: 'workspaces', message: 'must be an array' });
    if (
      d.variables !== undefined &&
      (d.variables === null || typeof d.variables !== 'object' || Array.isArray(d.variables))
    )
      issues.push({ path: 'variables', message: 'must be an object' });
    const names = new Map<string, number>();
    for (const [i, w] of (Array.isArray(d.workspaces) ? d.workspaces : []).entries()) {
      for (const m of await AnalyticsService.documentIssues(w))
        issues.push({ path: `workspaces[${i}]`, message: m });
      const name = (w as WorkspaceDocument)?.workspace?.name;
      if (typeof name === 'string') {
        const dup = names.get(name);
        if (dup !== undefined)
          issues.push({
            path: `workspaces[${i}].workspace.name`,
            message: `"${name}" is given twice (workspaces[${dup}])`,
          });
        names.set(name, i);
      }
    }
    for (const n of Object.keys(d.variables ?? {}))
      if (!/^[A-Za-z_][A-Za-z0-9_.-]{0,199}$/.test(n))
        issues.push({ path: `variables.${n}`, message: 'not a valid variable name' });
    return issues;
  }

  #norm(s: Partial<AnalyticsSection>): AnalyticsSection {
    return { workspaces: s.workspaces ?? [], variables: s.variables ?? {} };
  }

  diff(current: AnalyticsSection, next: AnalyticsSection, mode: ApplyMode): SectionDiff {
    const target = mode === 'merge-apply' ? this.merge(current, next).merged : this.#norm(next);
    const out: SectionDiff = { added: [], changed: [], removed: [], restarts: [] };
    const cur = new Map(current.workspaces.map((w) => [w.workspace.name, w]));
    for (const w of target.workspaces) {
      const was = cur.get(w.workspace.name);
      if (!was) out.added.push(`workspace ${w.workspace.name}`);
      else if (canonical(was) !== canonical(w)) out.changed.push(`workspace ${w.workspace.name}`);
      cur.delete(w.workspace.name);
    }
    const vars = new Map(Object.entries(current.variables));
    for (const [n, v] of Object.entries(target.variables)) {
      if (!vars.has(n)) out.added.push(`variable ${n}`);
      else if (canonical(vars.get(n)) !== canonical(v)) out.changed.push(`variable ${n}`);
      vars.delete(n);
    }
    if (mode === 'use') {
      out.removed.push(
        ...[...cur.keys()].map((n) => `workspace ${n}`),
        ...[...vars.keys()].map((n) => `variable ${n}`),
      );
    }
    if (
      out.changed.some((c) => c.startsWith('workspace')) ||
      out.removed.some((c) => c.startsWith('workspace'))
    )
      out.restarts.push(
        'analytics: processors of changed workspaces start anew (their window state is lost)',
      );
    return out;
  }

  merge(
    current: AnalyticsSection,
    template: AnalyticsSection,
  ): { merged: AnalyticsSection; overwrites: string[] } {
    const t = this.#norm(template);
    const overwrites: string[] = [];
    const ws = new Map(current.workspaces.map((w) => [w.workspace.name, w]));
    for (const w of t.workspaces) {
      const c = ws.get(w.workspace.name);
      if (c && canonical(c) !== canonical(w)) overwrites.push(`workspace ${w.workspace.name}`);
      ws.set(w.workspace.name, w);
    }
    const variables = { ...current.variables };
    for (const [n, v] of Object.entries(t.variables)) {
      if (Object.hasOwn(variables, n) && canonical(variables[n]) !== canonical(v))
        overwrites.push(`variable ${n}`);
      variables[n] = v;
    }
    return { merged: { workspaces: [...ws.values()], variables }, overwrites };
  }

  async apply(next: AnalyticsSection, ctx: SectionApplyContext): Promise<void> {
    const current = await this.export();
    const target = ctx.mode === 'merge-apply' ? this.merge(current, next).merged : this.#norm(next);
    const plan = this.diff(current, target, ctx.mode === 'use' ? 'use' : 'legacy');
    const s = this.#service;
    ctx.afterCommit(async () => {
      const byName = new Map([...s.workspaces.values()].map((w) => [w.name, w]));
      const touched = new Set([...plan.added, ...plan.changed]);
      for (const w of target.workspaces) {
        if (!touched.has(`workspace ${w.workspace.name}`)) continue;
        const existing = byName.get(w.workspace.name);
        try {
          if (existing) {
            await s.deleteWorkspaceContent(existing.id);
            await s.updateWorkspace({ id: existing.id, description: w.workspace.description ?? '' });
            await s.importInto(existing.id, w);
          } else {
            await s.importWorkspace(w);
          }
        } catch (err) {
          s.log.write(
            'error',
            `configuration apply: workspace "${w.workspace.name}" failed: ${(err as Error).message}`,
          );
        }
      }
      for (const [n, v] of Object.entries(target.variables)) {
        if (touched.has(`variable ${n}`)) await s.setVariable(n, v);
      }
      for (const r of plan.removed) {
        if (r.startsWith('workspace ')) {
          const w = byName.get(r.slice('workspace '.length));
          if (w) await s.deleteWorkspace(w.id);
        } else await s.deleteVariable(r.slice('variable '.length));
      }
    });
  }
}
