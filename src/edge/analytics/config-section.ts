/**
 * The analytics section of a configuration template: workspaces (each as the document
 * `ExportWorkspace` answers) and global variables.
 *
 *     { "workspaces": [ { "version": 1, "workspace": { "name", "description" }, "groups": [...],
 *                         "processors": [...] } ],
 *       "variables": { "<name>": <JSON value> } }
 *
 * Workspaces are keyed by name, variables by name. `validate` checks every processor against the
 * catalogue (kinds, parameters, references, expressions).
 *
 * `apply` writes through an `AnalyticsService` over the apply's transaction
 * (`AnalyticsService.over` with `AnalyticsRepository.inTransaction(ctx.trx)`), with the rules of
 * the API (names, limits, references, cycles): a workspace of the template that exists and differs
 * is replaced (its groups and processors made anew), one that does not exist is created; with mode
 * `use`, workspaces and variables not in the template are deleted. An item that fails aborts the
 * whole apply (`failFast`), or is reported with `ctx.fail` and rolled back to a savepoint so that
 * the rest applies. Nothing touches the running processors until the transaction committed; then
 * the live service reads its tables again (`reload`): processors of workspaces the apply replaced
 * or removed stop and start anew (their window state is lost), the others keep running untouched.
 */
import { canonical } from '../../kernel/service/section-shape.js';
import type {
  ApplyMode,
  ConfigSection,
  SectionApplyContext,
  SectionDiff,
  SectionIssue,
} from '../../kernel/service/index.js';
import { applyKeyed, attemptItem, type ItemGuard } from '../../kernel/service/keyed-section.js';
import { AnalyticsRepository } from './repository.js';
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
    return Promise.resolve(exportAnalytics(this.#service));
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
    const repo = AnalyticsRepository.inTransaction(ctx.trx);
    // A service over the apply's transaction: every read and write below goes through ctx.trx.
    let x = await this.#service.over(repo);
    const current = exportAnalytics(x);
    const target = ctx.mode === 'merge-apply' ? this.merge(current, next).merged : this.#norm(next);
    const plan = this.diff(current, target, ctx.mode === 'use' ? 'use' : 'legacy');
    const total = plan.added.length + plan.changed.length + plan.removed.length;
    let done = 0;
    const step = () => ctx.progress(++done, total);
    let savepoints = 0;
    /** An item that fails is undone alone (failFast false), and the service reads its view again. */
    const guard: ItemGuard = {
      begin: () => repo.savepoint(`analytics_item_${++savepoints}`),
      keep: () => repo.releaseSavepoint(`analytics_item_${savepoints}`),
      undo: async () => {
        await repo.rollbackToSavepoint(`analytics_item_${savepoints}`);
        // The service's memory held the undone writes.
        x = await this.#service.over(repo);
      },
    };
    // 1. workspaces: those left out go first (names and the instance limit free up); those that
    // are new or differ are made (anew) from the document.
    const mode = ctx.mode === 'use' ? 'use' : 'legacy';
    await applyKeyed(
      [...x.workspaces.values()],
      target.workspaces,
      { ...ctx, mode },
      {
        section: 'analytics',
        path: 'workspaces',
        key: (w) => w.workspace.name,
        rowKey: (r) => r.name,
        same: (r) => !plan.changed.includes(`workspace ${r.name}`),
        create: async (w) => {
          await x.importWorkspace(w);
        },
        update: async (w, was) => {
          const existing = [...x.workspaces.values()].find((r) => r.name === was.name) ?? was;
          await x.deleteWorkspaceContent(existing.id);
          await x.updateWorkspace({ id: existing.id, description: w.workspace.description ?? '' });
          await x.importInto(existing.id, w);
        },
        remove: async ([was]) => {
          const w = [...x.workspaces.values()].find((r) => r.name === was!.name);
          if (w) await x.deleteWorkspace(w.id);
          step();
        },
        removeOneByOne: true,
        guard,
        step: (w) => {
          const name = `workspace ${w.workspace.name}`;
          if (plan.added.includes(name) || plan.changed.includes(name)) step();
        },
      },
    );
    // 2. variables, by name
    for (const r of plan.removed.filter((r) => r.startsWith('variable '))) {
      const name = r.slice('variable '.length);
      await attemptItem(
        ctx,
        'analytics',
        `variables.${name} (removing)`,
        () => x.deleteVariable(name),
        guard,
      );
      step();
    }
    for (const [n, v] of Object.entries(target.variables)) {
      if (!plan.added.includes(`variable ${n}`) && !plan.changed.includes(`variable ${n}`)) continue;
      await attemptItem(ctx, 'analytics', `variables.${n}`, () => x.setVariable(n, v), guard);
      step();
    }
    if (total > 0) ctx.afterCommit(() => this.#service.reload());
  }
}

/** The section of the configuration held by `s` (the live service, or one over a transaction). */
export function exportAnalytics(s: AnalyticsService): AnalyticsSection {
  const workspaces = [...s.workspaces.values()]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((w) => s.exportWorkspace(w.id));
  const variables: Record<string, unknown> = {};
  for (const v of [...s.variables.values()].sort((a, b) => (a.name < b.name ? -1 : 1)))
    variables[v.name] = v.value;
  return { workspaces, variables };
}
