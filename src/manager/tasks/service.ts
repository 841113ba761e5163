/**
 * Asynchronous tasks: a task (e.g. `TEMPLATE_APPLY`) is one subtask per device, run by the
 * runner of whichever manager process holds the device's link, with bounded concurrency, retried
 * with backoff while the device cannot be reached, until the task's deadline; each subtask keeps
 * its status, attempts, timing, the edge's answer and a short log. State lives in the database:
 * a manager that stops and starts again resumes, and with PostgreSQL two managers share the work
 * (claims with `FOR UPDATE SKIP LOCKED` and a lease that a stopped process's claims outlive only
 * until it expires). No HTTP here.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { AppError, badRequest, notFound, ERRORS } from '../../kernel/errors.js';
import { uuidv7 } from '../../kernel/ids.js';
import { outsideScope } from '../../kernel/db/index.js';
import type { ListSpec } from '../../kernel/paging.js';
import { isGlobal, roleAt, requireRole, type Principal } from '../auth/index.js';
import {
  SUBTASK_LIST,
  TASK_LIST,
  type SubtaskRow,
  type TaskRepository,
  type TaskRow,
  type Visible,
} from './repository.js';

/** What a subtask's handler may do while it runs. */
export interface SubtaskContext {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- pending (issue 24, another's work in progress): a task type's own parameters (each handler reads its own shape); to be typed per task type
  task: { id: string; type: string; params: any; createdBy: string; deadlineAt: number };
  subtask: { id: string; deviceId: string | null; attempts: number };
  /** True when an earlier holder may already have sent the change (it stopped before recording). */
  maybeSent: boolean;
  /** Records, before the change is sent, that this attempt reaches the device. */
  markSent(): Promise<void>;
  log(level: 'info' | 'warn' | 'error', message: string): Promise<void>;
}

export type SubtaskOutcome =
  | { status: 'SUCCEEDED'; result?: unknown; message?: string }
  | { status: 'FAILED'; error: string; result?: unknown }
  | { status: 'RETRY'; error: string };

export interface TaskHandler {
  type: string;
  description: string;
  run(ctx: SubtaskContext): Promise<SubtaskOutcome>;
  /** The task's parameters as shown to callers (secrets left out). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- pending (issue 24, another's work in progress): a task type's own parameters (each handler reads its own shape); to be typed per task type
  publicParams?(params: any): unknown;
}

export interface TaskRunnerOptions {
  /** Subtasks run at once by this process. */
  concurrency: number;
  /** How long a claim holds without renewal (a stopped process's claims are taken over after it). */
  leaseMs: number;
  /** How often the runner looks for due subtasks. */
  pollMs: number;
  /** First retry delay; doubles per attempt up to `backoffMaxMs`. */
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** Links this process holds, and a call when one comes up. */
  linked(): string[];
  onLinked(listener: (deviceId: string) => void): void;
}

export const TASK_LIMITS = {
  /** Subtasks of one task (devices of one apply). */
  maxSubtasks: 20_000,
  /** Log lines kept per subtask (older ones are dropped). */
  maxLogsPerSubtask: 50,
  /** Longest task deadline, seconds. */
  maxDeadlineSeconds: 7 * 24 * 3600,
  defaultDeadlineSeconds: 3600,
  /** Stored bytes of an edge answer per subtask. */
  maxResultBytes: 64 * 1024,
};

export { SUBTASK_LIST, TASK_LIST };

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function subtaskView(s: SubtaskRow) {
  let result: unknown = null;
  if (s.result !== null) {
    try {
      result = JSON.parse(s.result);
    } catch {
      result = s.result;
    }
  }
  return {
    subtaskId: s.id,
    taskId: s.task_id,
    type: s.type,
    deviceId: s.device_id,
    status: s.status,
    attempts: s.attempts,
    nextAttemptAt: s.status === 'RETRY' || s.status === 'PENDING' ? iso(s.next_attempt_at) : null,
    startedAt: iso(s.started_at),
    finishedAt: iso(s.finished_at),
    durationMs: s.started_at !== null && s.finished_at !== null ? s.finished_at - s.started_at : null,
    result,
    error: s.error,
    createdAt: iso(s.created_at),
    updatedAt: iso(s.updated_at),
  };
}
export type SubtaskView = ReturnType<typeof subtaskView>;

export interface NewTask {
  type: string;
  description: string;
  /** Stored with the task (secrets sealed by the caller). */
  params: unknown;
  /** Where the task acts, for the caller's role and for scoped reads. */
  scope: { companyId: string | null; projectId: string | null };
  /** One subtask per device; `[null]` for a task that reaches no device. */
  devices: (string | null)[];
  deadlineSeconds?: number | undefined;
}

export class TaskService {
  readonly #repo: TaskRepository;
  readonly #log: Logger;
  readonly #handlers = new Map<string, TaskHandler>();
  readonly #o: TaskRunnerOptions;
  /** This process, in claims and logs. */
  readonly instance = randomUUID();
  readonly #inflight = new Map<string, string | null>();
  #timer: NodeJS.Timeout | null = null;
  #renewTimer: NodeJS.Timeout | null = null;
  #ticking = false;
  #again = false;
  #stopped = false;
  #lastSweep = 0;
  /** Tasks' parameters by id (few, small; dropped when a task ends). */
  readonly #taskCache = new Map<string, TaskRow>();

  constructor(repo: TaskRepository, logger: Logger, options: TaskRunnerOptions) {
    this.#repo = repo;
    this.#log = logger;
    this.#o = options;
  }

  register(handler: TaskHandler): void {
    this.#handlers.set(handler.type, handler);
  }

  /**
   * Devices whose latest subtask that ended since `since` failed (the alert rule "a template task
   * failed"): device id → the failed subtask. Reads at most 50,000 recent subtasks.
   */
  async latestFailures(
    since: number,
  ): Promise<
    Map<string, { subtaskId: string; taskId: string; type: string; error: string | null; at: number }>
  > {
    const rows = await this.#repo.finishedSince(since, 50_000);
    const seen = new Set<string>();
    const out = new Map<
      string,
      { subtaskId: string; taskId: string; type: string; error: string | null; at: number }
    >();
    for (const r of rows) {
      if (!r.device_id || seen.has(r.device_id)) continue;
      seen.add(r.device_id);
      if (r.status === 'FAILED')
        out.set(r.device_id, {
          subtaskId: r.id,
          taskId: r.task_id,
          type: r.type,
          error: r.error,
          at: Number(r.finished_at),
        });
    }
    return out;
  }

  taskTypes() {
    const items = [...this.#handlers.values()].map((h) => ({ type: h.type, description: h.description }));
    return { items, total: items.length };
  }

  // --- creating and reading ---------------------------------------------------------------------

  async create(principal: Principal, t: NewTask) {
    if (!this.#handlers.has(t.type)) throw badRequest(`unknown task type "${t.type}"`);
    if (t.devices.length === 0) throw badRequest('the task reaches no device');
    if (t.devices.length > TASK_LIMITS.maxSubtasks)
      throw badRequest(`a task has at most ${TASK_LIMITS.maxSubtasks} devices`);
    const seconds = t.deadlineSeconds ?? TASK_LIMITS.defaultDeadlineSeconds;
    if (!(Number.isInteger(seconds) && seconds >= 1 && seconds <= TASK_LIMITS.maxDeadlineSeconds))
      throw badRequest(`deadlineSeconds must be an integer from 1 to ${TASK_LIMITS.maxDeadlineSeconds}`);
    const now = Date.now();
    const deadline = now + seconds * 1000;
    const task: TaskRow = {
      id: uuidv7(now),
      type: t.type,
      status: 'RUNNING',
      description: t.description.slice(0, 500),
      params: JSON.stringify(t.params ?? {}),
      company_id: t.scope.companyId,
      project_id: t.scope.projectId,
      total: t.devices.length,
      created_by: principal.subject,
      created_at: now,
      updated_at: now,
      finished_at: null,
      deadline_at: deadline,
    };
    const subtasks: SubtaskRow[] = t.devices.map((deviceId) => ({
      id: uuidv7(now),
      task_id: task.id,
      type: t.type,
      device_id: deviceId,
      status: 'PENDING',
      attempts: 0,
      next_attempt_at: now,
      deadline_at: deadline,
      claimed_by: null,
      lease_until: null,
      sent_at: null,
      started_at: null,
      finished_at: null,
      result: null,
      error: null,
      created_at: now,
      updated_at: now,
    }));
    await this.#repo.insertTask(task, subtasks);
    this.#log.info({ taskId: task.id, type: t.type, subtasks: subtasks.length }, 'task created');
    this.kick();
    return this.#taskView(task);
  }

  async #taskView(t: TaskRow) {
    const handler = this.#handlers.get(t.type);
    const params = JSON.parse(t.params) as unknown;
    const counts = await this.#repo.counts(t.id);
    return {
      taskId: t.id,
      type: t.type,
      status: t.status,
      description: t.description,
      params: handler?.publicParams ? handler.publicParams(params) : params,
      companyId: t.company_id,
      projectId: t.project_id,
      total: t.total,
      counts,
      createdBy: t.created_by,
      createdAt: iso(t.created_at),
      updatedAt: iso(t.updated_at),
      finishedAt: iso(t.finished_at),
      deadline: iso(t.deadline_at),
    };
  }

  async #readable(principal: Principal, taskId: string): Promise<TaskRow> {
    const t = await this.#repo.getTask(taskId);
    if (!t || roleAt(principal, { companyId: t.company_id, projectId: t.project_id }) === null)
      throw notFound(`task "${taskId}" not found`);
    return t;
  }

  async task(principal: Principal, taskId: string) {
    return this.#taskView(await this.#readable(principal, taskId));
  }

  async listTasks(principal: Principal, spec: ListSpec) {
    const page = await this.#repo.listTasks(spec, visibleTo(principal));
    return { items: await Promise.all(page.items.map((t) => this.#taskView(t))), total: page.total };
  }

  async subtasks(principal: Principal, taskId: string) {
    await this.#readable(principal, taskId);
    const items = (await this.#repo.subtasksOf(taskId)).map(subtaskView);
    return { items, total: items.length };
  }

  /** Subtasks of every task the caller may read, created in [from, to], paged. */
  async subtaskHistory(principal: Principal, spec: ListSpec, range: { from?: number; to?: number }) {
    const page = await this.#repo.listSubtasks(spec, visibleTo(principal), range);
    return { items: page.items.map(subtaskView), total: page.total };
  }

  async subtaskLogs(principal: Principal, subtaskId: string) {
    const s = await this.#repo.getSubtask(subtaskId);
    if (!s) throw notFound(`subtask "${subtaskId}" not found`);
    await this.#readable(principal, s.task_id);
    const items = (await this.#repo.logsOf(subtaskId)).map((l) => ({
      at: iso(l.at),
      level: l.level,
      instance: l.instance,
      message: l.message,
    }));
    return { subtaskId, items, total: items.length };
  }

  async cancel(principal: Principal, taskId: string) {
    const t = await this.#readable(principal, taskId);
    requireRole(principal, { companyId: t.company_id, projectId: t.project_id }, 'operator');
    // Cancelled, and ended at once when nothing of it runs any more, in one transaction.
    await this.#repo.transaction(async (repo) => {
      if (!(await repo.cancel(taskId)))
        throw new AppError(
          ERRORS.conflict,
          `task "${taskId}" is ${t.status}, not RUNNING: nothing to cancel`,
        );
      await repo.settle(taskId);
    });
    this.#log.info({ taskId }, 'task cancelled');
    return this.#taskView((await this.#repo.getTask(taskId))!);
  }

  /**
   * Resumes a cancelled task: its cancelled subtasks wait for their device again, under a new
   * deadline (`deadlineSeconds` from now, else the default). Each subtask keeps its id, so its
   * `Idempotency-Key` on the edge stays the same: what an earlier attempt applied is not applied twice.
   */
  async resume(principal: Principal, taskId: string, deadlineSeconds?: number) {
    const t = await this.#readable(principal, taskId);
    requireRole(principal, { companyId: t.company_id, projectId: t.project_id }, 'operator');
    const seconds = deadlineSeconds ?? TASK_LIMITS.defaultDeadlineSeconds;
    if (!(Number.isInteger(seconds) && seconds >= 1 && seconds <= TASK_LIMITS.maxDeadlineSeconds))
      throw badRequest(`deadlineSeconds must be an integer from 1 to ${TASK_LIMITS.maxDeadlineSeconds}`);
    const reopened = await this.#repo.transaction(async (repo) => {
      const n = await repo.resume(taskId, Date.now() + seconds * 1000);
      if (n === undefined)
        throw new AppError(
          ERRORS.conflict,
          `task "${taskId}" is ${t.status}, not CANCELLED: nothing to resume`,
        );
      // A task cancelled after its last subtask started has nothing to reopen: it ends now.
      await repo.settle(taskId);
      return n;
    });
    // The runner's copy holds the old deadline.
    this.#taskCache.delete(taskId);
    this.#log.info({ taskId, reopened }, 'task resumed');
    this.kick();
    return this.#taskView((await this.#repo.getTask(taskId))!);
  }

  // --- the runner -------------------------------------------------------------------------------

  /** Starts the runner. A single-process database (SQLite) takes over its previous run's claims at once. */
  async start(): Promise<void> {
    if (this.#repo.singleProcess) {
      const n = await this.#repo.expireAllLeases();
      if (n)
        this.#log.info({ subtasks: n }, 'resuming the subtasks that were running when the manager stopped');
    }
    this.#o.onLinked(() => this.kick());
    this.#timer = setInterval(() => this.kick(), this.#o.pollMs);
    this.#timer.unref();
    this.#renewTimer = setInterval(
      () => {
        if (this.#inflight.size === 0) return;
        this.#repo
          .renew(this.instance, this.#o.leaseMs)
          .catch((err: unknown) => this.#log.warn({ err }, 'renewing subtask leases failed'));
      },
      Math.max(100, Math.floor(this.#o.leaseMs / 3)),
    );
    this.#renewTimer.unref();
    this.kick();
  }

  /** Looks for due subtasks now. */
  kick(): void {
    if (this.#stopped) return;
    if (this.#ticking) {
      this.#again = true;
      return;
    }
    this.#ticking = true;
    // Never in the transaction of the request that created a task (see kernel/db/request-scope.ts).
    void outsideScope(() => this.#tick())
      .catch((err: unknown) => this.#log.warn({ err }, 'task runner tick failed'))
      .finally(() => {
        this.#ticking = false;
        if (this.#again) {
          this.#again = false;
          setImmediate(() => this.kick());
        }
      });
  }

  async #tick(): Promise<void> {
    const now = Date.now();
    if (now - this.#lastSweep > 1000) {
      this.#lastSweep = now;
      for (const taskId of await this.#repo.failOverdue()) await this.#repo.settle(taskId);
      for (const taskId of await this.#repo.unsettled()) await this.#repo.settle(taskId);
    }
    const free = this.#o.concurrency - this.#inflight.size;
    if (free <= 0) return;
    const busy = new Set(this.#inflight.values());
    const devices = this.#o.linked().filter((d) => !busy.has(d));
    const rows = await this.#repo.claim(this.instance, devices, free, this.#o.leaseMs);
    const taken = new Set<string>();
    for (const row of rows) {
      // One subtask per device at a time (the edge runs one apply at a time).
      if (row.device_id !== null && taken.has(row.device_id)) {
        await this.#repo.release(row.id, this.instance, 'PENDING', Date.now() + 200, row.error);
        continue;
      }
      if (row.device_id !== null) taken.add(row.device_id);
      this.#inflight.set(row.id, row.device_id);
      void this.#run(row).finally(() => {
        this.#inflight.delete(row.id);
        this.kick();
      });
    }
  }

  async #task(taskId: string): Promise<TaskRow | undefined> {
    const hit = this.#taskCache.get(taskId);
    if (hit) return hit;
    const t = await this.#repo.getTask(taskId);
    if (t) {
      if (this.#taskCache.size > 100) this.#taskCache.delete(this.#taskCache.keys().next().value!);
      this.#taskCache.set(taskId, t);
    }
    return t;
  }

  async #run(row: SubtaskRow): Promise<void> {
    const log = async (level: 'info' | 'warn' | 'error', message: string) => {
      try {
        await this.#repo.addLog(
          {
            id: randomUUID(),
            subtask_id: row.id,
            at: Date.now(),
            level,
            instance: this.instance,
            message: message.slice(0, 2000),
          },
          TASK_LIMITS.maxLogsPerSubtask,
        );
      } catch (err) {
        this.#log.warn({ err, subtaskId: row.id }, 'writing a subtask log failed');
      }
    };
    try {
      const task = await this.#task(row.task_id);
      const handler = this.#handlers.get(row.type);
      if (!task || !handler) {
        await this.#repo.finish(
          row.id,
          this.instance,
          'FAILED',
          undefined,
          `no handler for task type "${row.type}"`,
        );
        return;
      }
      if ((await this.#repo.status(task.id)) !== 'RUNNING') {
        await this.#repo.finish(row.id, this.instance, 'CANCELLED', undefined, 'the task was cancelled');
        await this.#repo.settle(task.id);
        return;
      }
      const maybeSent = row.sent_at !== null;
      let attempts = row.attempts;
      if (maybeSent)
        await log(
          'warn',
          `taken over from a manager process that stopped (lease expired); attempt ${attempts}`,
        );
      const ctx: SubtaskContext = {
        task: {
          id: task.id,
          type: task.type,
          params: JSON.parse(task.params),
          createdBy: task.created_by,
          deadlineAt: task.deadline_at,
        },
        subtask: { id: row.id, deviceId: row.device_id, attempts },
        maybeSent,
        markSent: async () => {
          if (!(await this.#repo.markSent(row.id, this.instance)))
            throw new LostClaim(`subtask ${row.id} is no longer held by this process`);
          attempts++;
          ctx.subtask.attempts = attempts;
        },
        log,
      };
      let outcome: SubtaskOutcome;
      try {
        outcome = await handler.run(ctx);
      } catch (err) {
        if (err instanceof LostClaim) throw err;
        const e = err as AppError;
        const transient = e instanceof AppError && [429, 502, 503, 504].includes(e.status);
        outcome = transient
          ? { status: 'RETRY', error: e.message }
          : { status: 'FAILED', error: (err as Error).message };
      }
      if (outcome.status === 'RETRY') {
        const delay = Math.min(this.#o.backoffMaxMs, this.#o.backoffBaseMs * 2 ** Math.min(attempts, 20));
        const next = Date.now() + Math.round(delay / 2 + (Math.random() * delay) / 2);
        await log(
          'warn',
          `attempt ${attempts} failed, retrying after ${new Date(next).toISOString()}: ${outcome.error}`,
        );
        await this.#repo.release(row.id, this.instance, 'RETRY', next, outcome.error);
      } else if (outcome.status === 'SUCCEEDED') {
        await log('info', outcome.message ?? `done after ${attempts} attempt(s)`);
        await this.#repo.finish(row.id, this.instance, 'SUCCEEDED', bound(outcome.result), null);
      } else {
        await log('error', outcome.error);
        await this.#repo.finish(row.id, this.instance, 'FAILED', bound(outcome.result), outcome.error);
      }
      await this.#repo.settle(task.id);
      const status = await this.#repo.status(task.id);
      if (status !== 'RUNNING') this.#taskCache.delete(task.id);
    } catch (err) {
      this.#log.warn({ err, subtaskId: row.id }, 'subtask run failed');
    }
  }

  /** Stops claiming; waits (bounded) for the subtasks in flight. */
  async stop(waitMs = 5000): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    if (this.#renewTimer) clearInterval(this.#renewTimer);
    const until = Date.now() + waitMs;
    while (this.#inflight.size > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  }

  /** Subtasks running in this process now (for tests and the bench). */
  get running(): number {
    return this.#inflight.size;
  }
}

class LostClaim extends Error {}

/** What `principal` may see of the tasks: null for a global role (everything). */
function visibleTo(principal: Principal): Visible {
  if (isGlobal(principal, 'viewer')) return null;
  return {
    companyIds: principal.grants.filter((g) => g.companyId && !g.projectId).map((g) => g.companyId!),
    projectIds: principal.grants.filter((g) => g.projectId).map((g) => g.projectId!),
  };
}

function bound(result: unknown): unknown {
  if (result === undefined) return undefined;
  const text = JSON.stringify(result);
  if (text === undefined || text.length <= TASK_LIMITS.maxResultBytes) return result;
  return { truncated: true, text: text.slice(0, TASK_LIMITS.maxResultBytes) };
}
