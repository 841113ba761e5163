/**
 * The audit trail's rules: records sealed into a hash chain (each holds the hash of the one
 * before), verified from the retention's base to the head; the settings (retention, the request
 * log); the housekeeping (retention enforced); the move of the older action log into the chain.
 * Plain code: no HTTP here (the recording hook is `hook.ts`).
 */
import { hash as digest } from 'node:crypto';
import type { Logger } from 'pino';
import { badRequest } from '../../kernel/errors.js';
import { uuidv7 } from '../../kernel/ids.js';
import type { ListPage, ListSpec } from '../../kernel/paging.js';
import type {
  ActivityRow,
  AuditFilter,
  AuditRepository,
  AuditRow,
  ChainHead,
  LegacyRow,
} from './repository.js';

/** Where a change came from: the main API, the admin console API, a background task, the CLI. */
export type AuditOrigin = 'API' | 'CONSOLE' | 'TASK' | 'CLI';
export const AUDIT_ORIGINS: readonly AuditOrigin[] = ['API', 'CONSOLE', 'TASK', 'CLI'];

/** One record to append (the service gives it its id, time, place in the chain and hash). */
export interface AuditInput {
  actor: string;
  actorName?: string | null;
  companyId?: string | null;
  projectId?: string | null;
  module: string;
  action: string;
  origin: AuditOrigin;
  target?: string | null;
  outcome: 'success' | 'failure';
  status?: number | null;
  requestId?: string | null;
  details?: Record<string, unknown>;
  at?: number;
  legacyId?: string | null;
}

export interface AuditView {
  id: string;
  seq: number;
  time: string;
  actor: string;
  actorName: string | null;
  companyId: string | null;
  projectId: string | null;
  module: string;
  action: string;
  origin: string;
  target: string | null;
  outcome: string;
  status: number | null;
  requestId: string | null;
  details: unknown;
  prevHash: string;
  hash: string;
}

export interface VerifyResult {
  ok: boolean;
  checked: number;
  head: { seq: number; hash: string };
  /** The first broken link: the record that does not match its hash or its predecessor. */
  broken?: { seq: number; id: string | null; reason: string };
}

export interface AuditSettings {
  /** Days a record is kept; 0 keeps every record. */
  retentionDays: number;
  apiActivity: { enabled: boolean; retentionDays: number };
}

export const DEFAULT_SETTINGS: AuditSettings = {
  retentionDays: 0,
  apiActivity: { enabled: false, retentionDays: 7 },
};

export interface MigrationStatus {
  state: 'NOT_STARTED' | 'RUNNING' | 'COMPLETED' | 'FAILED';
  total: number;
  migrated: number;
  remaining: number;
  lastError: string | null;
  updatedAt: string | null;
}

/** The record's hash: SHA-256 of its previous hash and its fields, in a fixed order. */
export function hashOf(r: Omit<AuditRow, 'hash'>): string {
  const fields = [
    r.seq,
    r.id,
    r.at,
    r.actor,
    r.actor_name,
    r.company_id,
    r.project_id,
    r.module,
    r.action,
    r.origin,
    r.target,
    r.outcome,
    r.status,
    r.request_id,
    r.details,
    r.legacy_id,
  ];
  return digest('sha256', r.prev_hash + JSON.stringify(fields), 'hex');
}

export function auditView(r: AuditRow): AuditView {
  let details: unknown;
  try {
    details = JSON.parse(r.details);
  } catch {
    details = r.details;
  }
  return {
    id: r.id,
    seq: Number(r.seq),
    time: new Date(Number(r.at)).toISOString(),
    actor: r.actor,
    actorName: r.actor_name,
    companyId: r.company_id,
    projectId: r.project_id,
    module: r.module,
    action: r.action,
    origin: r.origin,
    target: r.target,
    outcome: r.outcome,
    status: r.status === null ? null : Number(r.status),
    requestId: r.request_id,
    details,
    prevHash: r.prev_hash,
    hash: r.hash,
  };
}

/** Why `r` (at `seq`) breaks the chain where `expected` and `prev` were due, if it does. */
function brokenLink(r: AuditRow, seq: number, expected: number, prev: string, head: ChainHead) {
  if (seq !== expected) return `record ${expected} is missing before record ${seq} (removed)`;
  if (r.prev_hash !== prev)
    return `record ${seq} does not follow the hash of record ${seq - 1} (one of them was changed)`;
  const { hash, ...rest } = r;
  const fields = { ...rest, seq, at: Number(r.at), status: r.status === null ? null : Number(r.status) };
  if (hashOf(fields) !== hash) return `record ${seq} was changed: its hash does not match its fields`;
  if (seq === head.markSeq && hash !== head.markHash)
    return `record ${seq} is not the record the chain reached (it was replaced)`;
  return undefined;
}

const clip = (v: string | null | undefined, n: number) => (v == null ? null : v.slice(0, n));

/** Legacy rows moved into the chain per batch (`/migration/retry`). */
const MIGRATION_BATCH = 500;

export class AuditService {
  readonly repo: AuditRepository;
  readonly #log: Logger;
  #settings: AuditSettings = DEFAULT_SETTINGS;
  #migrating: Promise<MigrationStatus> | undefined;

  constructor(repo: AuditRepository, logger: Logger) {
    this.repo = repo;
    this.#log = logger;
  }

  /** Appends one record (in the request's transaction when one is entered). */
  record(input: AuditInput): Promise<AuditRow> {
    const at = input.at ?? Date.now();
    const details = JSON.stringify(input.details ?? {});
    return this.repo.append((seq, prevHash) => {
      const row: Omit<AuditRow, 'hash'> = {
        seq,
        id: uuidv7(at),
        at,
        actor: input.actor.slice(0, 200),
        actor_name: clip(input.actorName, 200),
        company_id: clip(input.companyId, 200),
        project_id: clip(input.projectId, 200),
        module: input.module.slice(0, 100),
        action: input.action.slice(0, 200),
        origin: input.origin,
        target: clip(input.target, 500),
        outcome: input.outcome,
        status: input.status ?? null,
        request_id: clip(input.requestId, 100),
        details: details.length > 8000 ? JSON.stringify({ truncated: details.slice(0, 8000) }) : details,
        legacy_id: input.legacyId ?? null,
        prev_hash: prevHash,
      };
      return { ...row, hash: hashOf(row) };
    });
  }

  async list(filter: AuditFilter, spec: ListSpec): Promise<ListPage<AuditView>> {
    const page = await this.repo.list(filter, spec);
    return { items: page.items.map(auditView), total: page.total };
  }

  /** Modules (categories) with their actions (member contexts) and counts. */
  async categories() {
    const rows = await this.repo.categories();
    const by = new Map<string, { action: string; count: number }[]>();
    for (const r of rows) {
      const list = by.get(r.module) ?? [];
      list.push({ action: r.action, count: Number(r.n) });
      by.set(r.module, list);
    }
    const items = [...by].map(([category, contexts]) => ({
      category,
      count: contexts.reduce((n, c) => n + c.count, 0),
      contexts,
    }));
    return { items, total: items.length };
  }

  /**
   * Walks the chain from the retention's base to its end, recomputing every hash; names the
   * first record whose hash, predecessor link or place does not hold, or a chain that ends before
   * the head row's mark (records removed from the end).
   */
  async verify(): Promise<VerifyResult> {
    const head = await this.repo.head();
    let prev = head.baseHash;
    let expected = head.baseSeq + 1;
    let checked = 0;
    const result = (broken?: VerifyResult['broken']): VerifyResult => ({
      ok: broken === undefined,
      checked,
      head: { seq: head.seq, hash: head.hash },
      ...(broken ? { broken } : {}),
    });
    for await (const r of this.repo.scan({})) {
      const seq = Number(r.seq);
      const broken = brokenLink(r, seq, expected, prev, head);
      if (broken) return result({ seq, id: r.id, reason: broken });
      prev = r.hash;
      expected++;
      checked++;
    }
    if (head.markSeq > expected - 1)
      return result({
        seq: expected,
        id: null,
        reason: `the chain ends at record ${expected - 1} but it reached record ${head.markSeq} (records removed at the end)`,
      });
    return result();
  }

  // --- settings and housekeeping ------------------------------------------------------------

  async loadSettings(): Promise<AuditSettings> {
    const text = await this.repo.settings.get('settings');
    this.#settings = text
      ? { ...DEFAULT_SETTINGS, ...(JSON.parse(text) as AuditSettings) }
      : DEFAULT_SETTINGS;
    return this.#settings;
  }

  get settings(): AuditSettings {
    return this.#settings;
  }

  async putSettings(next: { retentionDays?: number | undefined }): Promise<AuditSettings> {
    const s = await this.loadSettings();
    const updated = {
      ...s,
      ...(next.retentionDays !== undefined ? { retentionDays: next.retentionDays } : {}),
    };
    await this.repo.settings.put('settings', JSON.stringify(updated));
    this.#settings = updated;
    return updated;
  }

  async putApiActivity(next: { enabled?: boolean | undefined; retentionDays?: number | undefined }) {
    const s = await this.loadSettings();
    const updated: AuditSettings = {
      ...s,
      apiActivity: {
        enabled: next.enabled ?? s.apiActivity.enabled,
        retentionDays: next.retentionDays ?? s.apiActivity.retentionDays,
      },
    };
    await this.repo.settings.put('settings', JSON.stringify(updated));
    this.#settings = updated;
    return updated.apiActivity;
  }

  /** Retention: records and request-log rows older than their settings allow are removed. */
  async housekeep(now = Date.now()): Promise<{ records: number; activity: number }> {
    const s = await this.loadSettings();
    let records = 0;
    if (s.retentionDays > 0) {
      const before = now - s.retentionDays * 86_400_000;
      for (;;) {
        const n = await this.repo.prune(before, 10_000);
        records += n;
        if (n < 10_000) break;
      }
    }
    const activity = await this.repo.pruneActivity(now - s.apiActivity.retentionDays * 86_400_000);
    if (records || activity) this.#log.info({ records, activity }, 'audit housekeeping removed old rows');
    return { records, activity };
  }

  addActivity(rows: ActivityRow[]): Promise<void> {
    return this.repo.addActivity(rows);
  }

  listActivity(spec: ListSpec) {
    return this.repo.listActivity(spec);
  }

  // --- the older action log ---------------------------------------------------------------

  async migrationStatus(): Promise<MigrationStatus> {
    const saved = await this.repo.settings.get('migration');
    const m = saved
      ? (JSON.parse(saved) as {
          state: MigrationStatus['state'];
          lastError: string | null;
          updatedAt: string;
        })
      : null;
    const total = await this.repo.legacyCount();
    const migrated = await this.repo.migratedCount();
    const state = this.#migrating ? 'RUNNING' : (m?.state ?? (total === 0 ? 'COMPLETED' : 'NOT_STARTED'));
    return {
      state: state === 'COMPLETED' && migrated < total ? 'NOT_STARTED' : state,
      total,
      migrated,
      remaining: Math.max(0, total - migrated),
      lastError: m?.lastError ?? null,
      updatedAt: m?.updatedAt ?? null,
    };
  }

  /**
   * Moves the older action log's records into the chain, from where the last run stopped (its
   * cursor is saved after every batch): resumable, and idempotent (a record moved once is
   * skipped by its legacy id). `maxBatches` bounds one run (tests stop half way with it).
   */
  migrate(maxBatches = Number.MAX_SAFE_INTEGER): Promise<MigrationStatus> {
    this.#migrating ??= this.#migrate(maxBatches).finally(() => (this.#migrating = undefined));
    return this.#migrating;
  }

  async #migrate(maxBatches: number): Promise<MigrationStatus> {
    const save = (state: MigrationStatus['state'], lastError: string | null) =>
      this.repo.settings.put(
        'migration',
        JSON.stringify({ state, lastError, updatedAt: new Date().toISOString() }),
      );
    try {
      const cursorText = await this.repo.settings.get('migration-cursor');
      let cursor = cursorText ? (JSON.parse(cursorText) as { at: number; id: string }) : null;
      for (let b = 0; b < maxBatches; b++) {
        const rows = await this.repo.legacyAfter(cursor, MIGRATION_BATCH);
        if (rows.length === 0) {
          await save('COMPLETED', null);
          break;
        }
        for (const row of rows) if (!(await this.repo.hasLegacy(row.id))) await this.record(legacyInput(row));
        const last = rows[rows.length - 1]!;
        cursor = { at: Number(last.at), id: last.id };
        await this.repo.settings.put('migration-cursor', JSON.stringify(cursor));
        if (b + 1 === maxBatches) await save('NOT_STARTED', null);
      }
    } catch (err) {
      this.#log.warn({ err }, 'moving the older action log failed');
      await save('FAILED', (err as Error).message);
    }
    this.#migrating = undefined;
    return this.migrationStatus();
  }
}

function legacyInput(row: LegacyRow): AuditInput {
  return {
    actor: row.username ? `user:${row.username}` : 'unknown',
    actorName: row.username,
    module: 'legacy',
    action: row.context,
    origin: 'API',
    outcome: 'success',
    details: { message: row.message },
    at: Number(row.at),
    legacyId: row.id,
  };
}

/** Reads the days of a retention setting (0 to 3650). */
export function retentionDays(v: unknown, name: string): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 3650)
    throw badRequest(`${name} must be an integer from 0 to 3650 (days; 0 keeps everything)`);
  return v;
}
