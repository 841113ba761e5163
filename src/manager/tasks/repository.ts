/** The tasks module's tables: tasks, their subtasks (one per device) and each subtask's log. */
import type { Transaction } from '../../kernel/db/index.js';
import { BoundRepository } from '../../kernel/db/bound-repository.js';
import { sql } from '../../kernel/db/index.js';
import { runList, type ListDefinition, type ListSpec } from '../../kernel/paging.js';

export type TaskStatus = 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'CANCELLED';
export type SubtaskStatus = 'PENDING' | 'RUNNING' | 'RETRY' | 'SUCCEEDED' | 'FAILED' | 'CANCELLED';
export const OPEN_SUBTASK: readonly SubtaskStatus[] = ['PENDING', 'RUNNING', 'RETRY'];

export interface TaskTables {
  mgr_task: {
    id: string;
    type: string;
    status: TaskStatus;
    description: string;
    params: string;
    company_id: string | null;
    project_id: string | null;
    total: number;
    created_by: string;
    created_at: number;
    updated_at: number;
    finished_at: number | null;
    deadline_at: number;
  };
  mgr_subtask: {
    id: string;
    task_id: string;
    type: string;
    device_id: string | null;
    status: SubtaskStatus;
    attempts: number;
    next_attempt_at: number;
    deadline_at: number;
    claimed_by: string | null;
    lease_until: number | null;
    sent_at: number | null;
    started_at: number | null;
    finished_at: number | null;
    result: string | null;
    error: string | null;
    created_at: number;
    updated_at: number;
  };
  mgr_subtask_log: {
    id: string;
    subtask_id: string;
    seq: number;
    at: number;
    level: string;
    instance: string;
    message: string;
  };
}

export type TaskRow = TaskTables['mgr_task'];
export type SubtaskRow = TaskTables['mgr_subtask'];
export type SubtaskLogRow = TaskTables['mgr_subtask_log'];

/** The companies and projects a caller holds a role on (null: a global role, everything). */
export type Visible = { companyIds: string[]; projectIds: string[] } | null;

/** An `in` list that matches nothing when empty. */
const ids = (list: string[]) => (list.length ? list : ['']);

export const TASK_LIST: ListDefinition = {
  fields: {
    type: 't.type',
    status: 't.status',
    createdBy: 't.created_by',
    projectId: 't.project_id',
    createdAt: { column: 't.created_at', type: 'integer' },
    updatedAt: { column: 't.updated_at', type: 'integer' },
  },
  tiebreak: 't.id',
  defaultSort: [{ field: 'createdAt', order: 'desc' }],
  maxLimit: 1000,
};

export const SUBTASK_LIST: ListDefinition = {
  fields: {
    status: 's.status',
    type: 's.type',
    deviceId: 's.device_id',
    taskId: 's.task_id',
    createdAt: { column: 's.created_at', type: 'integer' },
    updatedAt: { column: 's.updated_at', type: 'integer' },
  },
  tiebreak: 's.id',
  defaultSort: [{ field: 'createdAt', order: 'desc' }],
  maxLimit: 1000,
};

export class TaskRepository extends BoundRepository<TaskTables, TaskRepository> {
  protected bind(trx: Transaction<TaskTables>): TaskRepository {
    return new TaskRepository(this.database, trx);
  }

  /** A task and its subtasks, in one transaction. */
  async insertTask(task: TaskRow, subtasks: SubtaskRow[]): Promise<void> {
    await this.transaction(async (repo) => {
      const trx = repo.db;
      await trx.insertInto('mgr_task').values(task).execute();
      for (let i = 0; i < subtasks.length; i += 200) {
        await trx
          .insertInto('mgr_subtask')
          .values(subtasks.slice(i, i + 200))
          .execute();
      }
    });
  }

  getTask(id: string): Promise<TaskRow | undefined> {
    return this.db.selectFrom('mgr_task').selectAll().where('id', '=', id).executeTakeFirst();
  }

  getSubtask(id: string): Promise<SubtaskRow | undefined> {
    return this.db.selectFrom('mgr_subtask').selectAll().where('id', '=', id).executeTakeFirst();
  }

  subtasksOf(taskId: string): Promise<SubtaskRow[]> {
    return this.db
      .selectFrom('mgr_subtask')
      .selectAll()
      .where('task_id', '=', taskId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
  }

  /** Tasks, paged; those in a company or project `visible` holds a role on. */
  listTasks(spec: ListSpec, visible: Visible) {
    let q = this.db.selectFrom('mgr_task as t').selectAll('t');
    if (visible)
      q = q.where((eb) =>
        eb.or([
          eb('t.company_id', 'in', ids(visible.companyIds)),
          eb('t.project_id', 'in', ids(visible.projectIds)),
        ]),
      );
    return runList(this.database, q, TASK_LIST, spec);
  }

  /** Subtasks created in [from, to], paged; those of tasks `visible` may read. */
  listSubtasks(spec: ListSpec, visible: Visible, range: { from?: number; to?: number }) {
    let q = this.db
      .selectFrom('mgr_subtask as s')
      .innerJoin('mgr_task as t', 't.id', 's.task_id')
      .selectAll('s');
    if (visible)
      q = q.where((eb) =>
        eb.or([
          eb('t.company_id', 'in', ids(visible.companyIds)),
          eb('t.project_id', 'in', ids(visible.projectIds)),
        ]),
      );
    if (range.from !== undefined) q = q.where('s.created_at', '>=', range.from);
    if (range.to !== undefined) q = q.where('s.created_at', '<=', range.to);
    return runList(this.database, q, SUBTASK_LIST, spec);
  }

  /** A single-process database (SQLite): no other process can hold a claim. */
  get singleProcess(): boolean {
    return this.database.dialect === 'sqlite';
  }

  /** Counts of a task's subtasks by status. */
  async counts(taskId: string): Promise<Record<string, number>> {
    const rows = await this.db
      .selectFrom('mgr_subtask')
      .select(['status', sql<number>`count(*)`.as('n')])
      .where('task_id', '=', taskId)
      .groupBy('status')
      .execute();
    return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
  }

  /**
   * Claims up to `limit` subtasks due now, for devices in `devices` (the links this process
   * holds) or for no device: open and due, or running under a lease that expired (its holder
   * stopped). One statement (`UPDATE ... WHERE id IN (SELECT ...) RETURNING`); on PostgreSQL the
   * inner select takes its rows `FOR UPDATE SKIP LOCKED`, so two managers never claim the same
   * row and never wait on each other. Answers the claimed rows (`sent_at` is the earlier
   * holder's mark, if any).
   */
  async claim(instance: string, devices: string[], limit: number, leaseMs: number): Promise<SubtaskRow[]> {
    if (limit <= 0) return [];
    const now = Date.now();
    let due = this.db
      .selectFrom('mgr_subtask')
      .select('id')
      .where('deadline_at', '>', now)
      .where((eb) =>
        eb.or([
          eb.and([eb('status', 'in', ['PENDING', 'RETRY']), eb('next_attempt_at', '<=', now)]),
          eb.and([eb('status', '=', 'RUNNING'), eb('lease_until', '<', now)]),
        ]),
      )
      .where((eb) =>
        devices.length
          ? eb.or([eb('device_id', 'is', null), eb('device_id', 'in', devices)])
          : eb('device_id', 'is', null),
      )
      .orderBy('next_attempt_at')
      .orderBy('id')
      .limit(limit);
    if (this.database.dialect === 'postgres') due = due.forUpdate().skipLocked();
    return this.db
      .updateTable('mgr_subtask')
      .set({
        status: 'RUNNING',
        claimed_by: instance,
        lease_until: now + leaseMs,
        started_at: sql<number>`coalesce(started_at, ${now})`,
        updated_at: now,
      })
      .where('id', 'in', due)
      .returningAll()
      .execute();
  }

  /** Marks the start of an attempt that reaches the device (committed before the call is sent). */
  async markSent(id: string, instance: string): Promise<boolean> {
    const now = Date.now();
    const r = await this.db
      .updateTable('mgr_subtask')
      .set({ sent_at: now, attempts: sql<number>`attempts + 1`, updated_at: now })
      .where('id', '=', id)
      .where('claimed_by', '=', instance)
      .where('status', '=', 'RUNNING')
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /** Ends a claimed subtask (only while this process holds it). */
  async finish(
    id: string,
    instance: string,
    status: 'SUCCEEDED' | 'FAILED' | 'CANCELLED',
    result: unknown,
    error: string | null,
  ): Promise<boolean> {
    const now = Date.now();
    const r = await this.db
      .updateTable('mgr_subtask')
      .set({
        status,
        result: result === undefined ? null : JSON.stringify(result),
        error,
        finished_at: now,
        updated_at: now,
        lease_until: null,
      })
      .where('id', '=', id)
      .where('claimed_by', '=', instance)
      .where('status', '=', 'RUNNING')
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /** Puts a claimed subtask back to wait (`RETRY` after a failure, `PENDING` when released). */
  async release(
    id: string,
    instance: string,
    status: 'RETRY' | 'PENDING',
    nextAttemptAt: number,
    error: string | null,
  ): Promise<boolean> {
    const now = Date.now();
    const r = await this.db
      .updateTable('mgr_subtask')
      .set({
        status,
        next_attempt_at: nextAttemptAt,
        error,
        claimed_by: null,
        lease_until: null,
        sent_at: null,
        updated_at: now,
      })
      .where('id', '=', id)
      .where('claimed_by', '=', instance)
      .where('status', '=', 'RUNNING')
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /** Extends the leases this process holds. */
  async renew(instance: string, leaseMs: number): Promise<void> {
    const now = Date.now();
    await this.db
      .updateTable('mgr_subtask')
      .set({ lease_until: now + leaseMs })
      .where('claimed_by', '=', instance)
      .where('status', '=', 'RUNNING')
      .execute();
  }

  /** Ends the leases of every process (a single-process database at start: the previous run is gone). */
  async expireAllLeases(): Promise<number> {
    const r = await this.db
      .updateTable('mgr_subtask')
      .set({ lease_until: 0 })
      .where('status', '=', 'RUNNING')
      .executeTakeFirst();
    return Number(r.numUpdatedRows);
  }

  /** Waiting subtasks whose deadline passed fail; answers their task ids. */
  async failOverdue(): Promise<string[]> {
    const now = Date.now();
    return this.transaction(async (repo) => {
      const trx = repo.db;
      const rows = await trx
        .selectFrom('mgr_subtask')
        .select(['id', 'task_id', 'device_id'])
        .where('status', 'in', ['PENDING', 'RETRY'])
        .where('deadline_at', '<=', now)
        .limit(1000)
        .execute();
      if (rows.length === 0) return [];
      await trx
        .updateTable('mgr_subtask')
        .set({
          status: 'FAILED',
          error: sql<string>`coalesce(error || '; ', '') || ${'the task deadline passed before the device could be reached'}`,
          finished_at: now,
          updated_at: now,
        })
        .where(
          'id',
          'in',
          rows.map((r) => r.id),
        )
        .where('status', 'in', ['PENDING', 'RETRY'])
        .execute();
      return [...new Set(rows.map((r) => r.task_id))];
    });
  }

  /** Running tasks whose subtasks have all ended (a process stopped between the two writes). */
  async unsettled(): Promise<string[]> {
    const rows = await this.db
      .selectFrom('mgr_task as t')
      .select('t.id')
      .where('t.status', 'in', ['RUNNING', 'CANCELLED'])
      .where('t.finished_at', 'is', null)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('mgr_subtask as s')
              .select('s.id')
              .whereRef('s.task_id', '=', 't.id')
              .where('s.status', 'in', ['PENDING', 'RUNNING', 'RETRY']),
          ),
        ),
      )
      .limit(100)
      .execute();
    return rows.map((r) => r.id);
  }

  /** Cancels a running task: its waiting subtasks are cancelled; running ones end on their own. */
  async cancel(taskId: string): Promise<boolean> {
    const now = Date.now();
    return this.transaction(async (repo) => {
      const trx = repo.db;
      const r = await trx
        .updateTable('mgr_task')
        .set({ status: 'CANCELLED', updated_at: now })
        .where('id', '=', taskId)
        .where('status', '=', 'RUNNING')
        .executeTakeFirst();
      if (Number(r.numUpdatedRows) === 0) return false;
      await trx
        .updateTable('mgr_subtask')
        .set({ status: 'CANCELLED', finished_at: now, updated_at: now, error: 'the task was cancelled' })
        .where('task_id', '=', taskId)
        .where('status', 'in', ['PENDING', 'RETRY'])
        .execute();
      return true;
    });
  }

  /**
   * Resumes a cancelled task: it runs again until `deadline`, and its cancelled subtasks wait for
   * their device again (those that ended otherwise keep their outcome). Answers how many subtasks
   * were reopened, or undefined when the task is not CANCELLED.
   */
  async resume(taskId: string, deadline: number): Promise<number | undefined> {
    const now = Date.now();
    return this.transaction(async (repo) => {
      const trx = repo.db;
      const r = await trx
        .updateTable('mgr_task')
        .set({ status: 'RUNNING', finished_at: null, deadline_at: deadline, updated_at: now })
        .where('id', '=', taskId)
        .where('status', '=', 'CANCELLED')
        .executeTakeFirst();
      if (Number(r.numUpdatedRows) === 0) return undefined;
      const s = await trx
        .updateTable('mgr_subtask')
        .set({
          status: 'PENDING',
          next_attempt_at: now,
          deadline_at: deadline,
          finished_at: null,
          error: null,
          updated_at: now,
        })
        .where('task_id', '=', taskId)
        .where('status', '=', 'CANCELLED')
        .executeTakeFirst();
      return Number(s.numUpdatedRows);
    });
  }

  /** Ends a task whose subtasks have all ended: SUCCEEDED, or FAILED when one failed. */
  async settle(taskId: string): Promise<void> {
    const now = Date.now();
    const counts = await this.counts(taskId);
    const open = (counts.PENDING ?? 0) + (counts.RUNNING ?? 0) + (counts.RETRY ?? 0);
    if (open > 0) return;
    const failed = (counts.FAILED ?? 0) > 0;
    await this.db
      .updateTable('mgr_task')
      .set({ status: failed ? 'FAILED' : 'SUCCEEDED', finished_at: now, updated_at: now })
      .where('id', '=', taskId)
      .where('status', '=', 'RUNNING')
      .execute();
    await this.db
      .updateTable('mgr_task')
      .set({ finished_at: now, updated_at: now })
      .where('id', '=', taskId)
      .where('status', '=', 'CANCELLED')
      .where('finished_at', 'is', null)
      .execute();
  }

  async status(taskId: string): Promise<TaskStatus | undefined> {
    const r = await this.db
      .selectFrom('mgr_task')
      .select('status')
      .where('id', '=', taskId)
      .executeTakeFirst();
    return r?.status;
  }

  /** Subtasks on a device that ended since `since`, latest first (at most `limit`). */
  finishedSince(since: number, limit: number) {
    return this.db
      .selectFrom('mgr_subtask')
      .select(['id', 'task_id', 'type', 'device_id', 'status', 'error', 'finished_at'])
      .where('finished_at', '>=', since)
      .where('device_id', 'is not', null)
      .where('status', 'in', ['SUCCEEDED', 'FAILED'])
      .orderBy('finished_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
  }

  async addLog(row: Omit<SubtaskLogRow, 'seq'>, max: number): Promise<void> {
    const last = await this.db
      .selectFrom('mgr_subtask_log')
      .select(sql<number>`coalesce(max(seq), 0)`.as('seq'))
      .where('subtask_id', '=', row.subtask_id)
      .executeTakeFirstOrThrow();
    const seq = Number(last.seq) + 1;
    await this.db
      .insertInto('mgr_subtask_log')
      .values({ ...row, seq })
      .execute();
    if (seq > max) {
      await this.db
        .deleteFrom('mgr_subtask_log')
        .where('subtask_id', '=', row.subtask_id)
        .where('seq', '<=', seq - max)
        .execute();
    }
  }

  logsOf(subtaskId: string): Promise<SubtaskLogRow[]> {
    return this.db
      .selectFrom('mgr_subtask_log')
      .selectAll()
      .where('subtask_id', '=', subtaskId)
      .orderBy('seq')
      .execute();
  }
}
