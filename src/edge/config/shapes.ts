/**
 * What the configuration service is bounded by and answers: its limits, the list of saved
 * templates, the views of templates and snapshots, and the options and results of an apply.
 */
import type { ListDefinition } from '../../kernel/paging.js';
import type { ApplyMode, SectionDiff } from '../../kernel/service/index.js';
import type { SnapshotMeta, TemplateMeta } from './repository.js';

/** Bounds (docs/security.md, "Configuration templates"). */
export const CONFIG_LIMITS = {
  /** Bytes of one template document (a session's content, a saved template). */
  maxTemplateBytes: 128 * 1024 * 1024,
  /** Bytes of one PATCH of an upload session. */
  maxChunkBytes: 16 * 1024 * 1024,
  /** Upload sessions open at once; the oldest is dropped for a new one. */
  maxSessions: 4,
  /** An upload session not written to for this long is dropped. */
  sessionTtlMs: 60 * 60 * 1000,
  /** Saved templates. */
  maxTemplates: 200,
  /** Snapshots kept: capturing one more drops the oldest. */
  maxSnapshots: 20,
  /** Snapshots a DELETE /config/snapshots removes per call (`truncated` says more remain). */
  prunePerCall: 5,
} as const;

export const TEMPLATE_LIST: ListDefinition = {
  fields: {
    id: 'id',
    name: 'name',
    description: 'description',
    size: { column: 'size', type: 'integer' },
    createdAt: { column: 'created_at', type: 'integer', filterable: false },
    updatedAt: { column: 'updated_at', type: 'integer', filterable: false },
  },
  tiebreak: 'id',
  defaultSort: [{ field: 'createdAt', order: 'asc' }],
  maxLimit: 200,
};

export interface TemplateView {
  id: string;
  name: string;
  description: string;
  sections: string[];
  encrypted: boolean;
  size: number;
  createdAt: string;
  updatedAt: string;
}

export interface SnapshotView {
  id: string;
  reason: string;
  sections: string[];
  size: number;
  createdAt: string;
}

export interface ApplyOptions {
  mode?: ApplyMode | undefined;
  failFast?: boolean | undefined;
  encryptionKey?: string | undefined;
  parameters?: Record<string, Record<string, unknown>> | undefined;
  /** Called now and then during a long apply. */
  onProgress?: ((p: { section: string; done: number; total: number }) => void) | undefined;
  /**
   * An apply made again with the same key is not made again: it answers the outcome recorded
   * with the first (in the same transaction), marked `replayed` (the `Idempotency-Key` header).
   */
  idempotencyKey?: string | undefined;
}

/** Idempotency keys kept (the newest; older ones are forgotten). */
export const IDEMPOTENCY_KEYS_KEPT = 10_000;

export interface PreviewResult {
  mode: ApplyMode;
  sections: Record<string, SectionDiff>;
  restarts: string[];
}

export interface ApplyResult extends PreviewResult {
  /** The snapshot captured before the apply (what a rollback returns to). */
  snapshotId: string;
  applied: boolean;
  failed: Array<{ item: string; message: string }>;
  restarted: string[];
  /** An apply with an `idempotencyKey` already used: the recorded outcome, nothing applied now. */
  replayed?: boolean;
}

export const templateView = (m: TemplateMeta): TemplateView => ({
  id: m.id,
  name: m.name,
  description: m.description,
  sections: JSON.parse(m.sections) as string[],
  encrypted: m.encrypted === 1,
  size: Number(m.size),
  createdAt: new Date(Number(m.created_at)).toISOString(),
  updatedAt: new Date(Number(m.updated_at)).toISOString(),
});

export const snapshotView = (m: SnapshotMeta): SnapshotView => ({
  id: m.id,
  reason: m.reason,
  sections: JSON.parse(m.sections) as string[],
  size: Number(m.size),
  createdAt: new Date(Number(m.created_at)).toISOString(),
});
