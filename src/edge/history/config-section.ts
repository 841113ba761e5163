/**
 * The history's section of a configuration template: recording policies and retention.
 *
 *     { "policies": [ { "tag": "*", "mode": "all" },
 *                     { "tag": "Press.*", "mode": "deadband", "deadband": 0.5, "minIntervalMs": 1000 } ],
 *       "retention": { "maxAgeDays": 30, "maxMb": 1024 } }
 *
 * Policies are keyed by `tag`. Retention, once a template set it, wins over the options.
 */
import type { Kysely } from '../../kernel/db/index.js';
import type {
  ApplyMode,
  ConfigSection,
  SectionApplyContext,
  SectionDiff,
  SectionIssue,
} from '../../kernel/service/index.js';
import { canonical, checkObject, diffByKey, join, mergeByKey } from '../../kernel/service/section-shape.js';
import { POLICY_MODES, policyTagProblem, type HistoryPolicy, type PolicyMode } from './policy.js';
import type { HistoryRepository, HistoryTables, RetentionRow } from './repository.js';
import type { HistoryService } from './service.js';

/** Policies a template holds at most. */
export const MAX_POLICIES = 10_000;

export interface TemplatePolicy {
  tag: string;
  mode: PolicyMode;
  deadband?: number;
  minIntervalMs?: number;
}

export interface HistorySection {
  policies: TemplatePolicy[];
  retention: RetentionRow;
}

const full = (p: TemplatePolicy): HistoryPolicy => ({
  tag: p.tag,
  mode: p.mode,
  deadband: p.deadband ?? 0,
  minIntervalMs: p.minIntervalMs ?? 0,
});

export class HistoryConfigSection implements ConfigSection<HistorySection> {
  readonly name = 'history';

  constructor(
    private readonly repo: HistoryRepository,
    private readonly service: HistoryService | null,
    private readonly defaults: RetentionRow,
  ) {}

  async export(): Promise<HistorySection> {
    return {
      policies: (await this.repo.policies()).map((p) => ({ ...p })),
      retention: (await this.repo.retention()) ?? this.defaults,
    };
  }

  validate(doc: unknown): SectionIssue[] {
    const issues: SectionIssue[] = [];
    if (!checkObject(issues, '', doc, { policies: 'array', retention: 'object' })) return issues;
    const d = doc as HistorySection;
    if (d.policies.length > MAX_POLICIES)
      issues.push({
        path: 'policies',
        message: `at most ${MAX_POLICIES} policies, got ${d.policies.length}`,
      });
    const seen = new Set<string>();
    for (const [i, p] of d.policies.entries()) {
      const path = join('policies', i);
      if (
        !checkObject(issues, path, p, {
          tag: 'string',
          mode: 'string',
          'deadband?': 'any',
          'minIntervalMs?': 'integer',
        })
      )
        continue;
      const problem = policyTagProblem(p.tag);
      if (problem) issues.push({ path: join(path, 'tag'), message: problem });
      if (!POLICY_MODES.includes(p.mode))
        issues.push({ path: join(path, 'mode'), message: `must be one of ${POLICY_MODES.join(', ')}` });
      if (
        p.deadband !== undefined &&
        (typeof p.deadband !== 'number' || !(p.deadband >= 0) || !Number.isFinite(p.deadband))
      )
        issues.push({ path: join(path, 'deadband'), message: 'must be a number of 0 or more' });
      if (p.minIntervalMs !== undefined && (p.minIntervalMs < 0 || p.minIntervalMs > 86_400_000))
        issues.push({ path: join(path, 'minIntervalMs'), message: 'must be from 0 to 86400000' });
      if (seen.has(p.tag)) issues.push({ path: join(path, 'tag'), message: `"${p.tag}" is given twice` });
      seen.add(p.tag);
    }
    if (checkObject(issues, 'retention', d.retention, { maxAgeDays: 'integer', maxMb: 'integer' })) {
      const r = d.retention;
      if (r.maxAgeDays < 0 || r.maxAgeDays > 36_500)
        issues.push({ path: 'retention.maxAgeDays', message: 'must be from 0 (kept) to 36500' });
      if (r.maxMb !== 0 && (r.maxMb < 8 || r.maxMb > 16_777_216))
        issues.push({ path: 'retention.maxMb', message: 'must be 0 (no cap) or from 8 to 16777216' });
    }
    return issues;
  }

  diff(current: HistorySection, next: HistorySection, mode: ApplyMode): SectionDiff {
    const target = mode === 'merge-apply' ? this.merge(current, next).merged : next;
    const out = diffByKey(
      current.policies.map(full),
      target.policies.map(full),
      (p) => p.tag,
      (a, b) => canonical(a) === canonical(b),
      mode,
    );
    if (canonical(current.retention) !== canonical(target.retention)) out.changed.push('retention');
    return out;
  }

  merge(current: HistorySection, template: HistorySection): { merged: HistorySection; overwrites: string[] } {
    const { merged, overwrites } = mergeByKey(current.policies, template.policies, (p) => p.tag);
    if (canonical(current.retention) !== canonical(template.retention)) overwrites.push('retention');
    return { merged: { policies: merged, retention: template.retention }, overwrites };
  }

  async apply(next: HistorySection, ctx: SectionApplyContext): Promise<void> {
    const trx = ctx.trx as unknown as Kysely<HistoryTables>;
    const current = await this.repo.policies(trx);
    const policies =
      ctx.mode === 'use'
        ? next.policies.map(full)
        : mergeByKey(current, next.policies.map(full), (p) => p.tag).merged;
    await this.repo.replacePolicies(policies, trx);
    await this.repo.setRetention(next.retention, trx);
    ctx.afterCommit(() => {
      this.service?.setPolicies(policies);
      this.service?.setRetention(retentionOf(next.retention));
    });
  }
}

export function retentionOf(r: RetentionRow): { maxAgeMs: number; maxBytes: number } {
  return { maxAgeMs: r.maxAgeDays * 86_400_000, maxBytes: r.maxMb * 1024 * 1024 };
}
