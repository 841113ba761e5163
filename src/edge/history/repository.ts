/** The history module's tables in the edge's database: recording policies and retention. */
import type { Kysely } from '../../kernel/db/index.js';
import type { HistoryPolicy, PolicyMode } from './policy.js';

export interface HistoryTables {
  history_policy: { tag: string; mode: string; deadband: number; min_interval_ms: number };
  history_retention: { id: number; max_age_days: number; max_mb: number };
}

export interface RetentionRow {
  maxAgeDays: number;
  maxMb: number;
}

export class HistoryRepository {
  constructor(private readonly db: Kysely<HistoryTables>) {}

  async policies(trx: Kysely<HistoryTables> = this.db): Promise<HistoryPolicy[]> {
    const rows = await trx.selectFrom('history_policy').selectAll().orderBy('tag').execute();
    return rows.map((r) => ({
      tag: r.tag,
      mode: r.mode as PolicyMode,
      deadband: Number(r.deadband),
      minIntervalMs: Number(r.min_interval_ms),
    }));
  }

  async replacePolicies(policies: HistoryPolicy[], trx: Kysely<HistoryTables>): Promise<void> {
    await trx.deleteFrom('history_policy').execute();
    for (let i = 0; i < policies.length; i += 200) {
      await trx
        .insertInto('history_policy')
        .values(
          policies.slice(i, i + 200).map((p) => ({
            tag: p.tag,
            mode: p.mode,
            deadband: p.deadband,
            min_interval_ms: p.minIntervalMs,
          })),
        )
        .execute();
    }
  }

  /** Retention set by a template, or undefined (the options apply). */
  async retention(trx: Kysely<HistoryTables> = this.db): Promise<RetentionRow | undefined> {
    const r = await trx.selectFrom('history_retention').selectAll().where('id', '=', 1).executeTakeFirst();
    return r ? { maxAgeDays: Number(r.max_age_days), maxMb: Number(r.max_mb) } : undefined;
  }

  async setRetention(r: RetentionRow, trx: Kysely<HistoryTables>): Promise<void> {
    await trx.deleteFrom('history_retention').execute();
    await trx
      .insertInto('history_retention')
      .values({ id: 1, max_age_days: r.maxAgeDays, max_mb: r.maxMb })
      .execute();
  }
}
