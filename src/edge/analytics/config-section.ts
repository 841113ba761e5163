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
import { sql } from '../../kernel/db/index.js';
import { AppError } from '../../kernel/errors.js';
import { canonical } from '../../kernel/service/section-shape.js';
import type {
  ApplyMode,
  ConfigSection,
  SectionApplyContext,
  SectionDiff,
  SectionIssue,
} from '../../kernel/service/index.js';
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
    const touched = new Set([...plan.added, ...plan.changed]);
    let savepoints = 0;
    /** Runs one item; a failure aborts the apply (failFast) or is reported and undone. */
    const attempt = async (item: string, fn: () => Promise<unknown>): Promise<void> => {
      const savepoint = `analytics_item_${++savepoints}`;
      if (!ctx.failFast) await sql`savepoint ${sql.raw(savepoint)}`.execute(ctx.trx);
      try {
        await fn();
        if (!ctx.failFast) await sql`release savepoint ${sql.raw(savepoint)}`.execute(ctx.trx);
      } catch (err) {
        const text = err instanceof Error ? err.message : String(err);
        const message = `section analytics: ${item}: ${text}`;
        if (ctx.failFast)
          throw err instanceof AppError
            ? new AppError(err.kind, message, { cause: err, status: err.status })
            : new Error(message, { cause: err });
        await sql`rollback to savepoint ${sql.raw(savepoint)}`.execute(ctx.trx);
        await sql`release savepoint ${sql.raw(savepoint)}`.execute(ctx.trx);
        ctx.fail(`analytics: ${item}`, message);
        // The service's memory held the undone writes: read the transaction's view again.
        x = await this.#service.over(repo);
      }
    };
    const total = plan.added.length + plan.changed.length + plan.removed.length;
    let done = 0;
    const step = () => ctx.progress(++done, total);
    const byName = () => new Map([...x.workspaces.values()].map((w) => [w.name, w]));

    // 1. use: what the template does not have goes first (names and the instance limit free up).
    for (const r of plan.removed) {
      if (r.startsWith('workspace ')) {
        const name = r.slice('workspace '.length);
        await attempt(`workspace "${name}" (removing)`, async () => {
          const w = byName().get(name);
          if (w) await x.deleteWorkspace(w.id);
        });
      } else {
        const name = r.slice('variable '.length);
        await attempt(`variables.${name} (removing)`, () => x.deleteVariable(name));
      }
      step();
    }

    // 2. workspaces that are new or differ: made (anew) from the document.
    for (const [i, w] of target.workspaces.entries()) {
      if (!touched.has(`workspace ${w.workspace.name}`)) continue;
      await attempt(`workspaces[${i}] (${w.workspace.name})`, async () => {
        const existing = byName().get(w.workspace.name);
        if (!existing) {
          await x.importWorkspace(w);
          return;
        }
        await x.deleteWorkspaceContent(existing.id);
        await x.updateWorkspace({ id: existing.id, description: w.workspace.description ?? '' });
        await x.importInto(existing.id, w);
      });
      step();
    }

    // 3. variables
    for (const [n, v] of Object.entries(target.variables)) {
      if (!touched.has(`variable ${n}`)) continue;
      await attempt(`variables.${n}`, () => x.setVariable(n, v));
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
