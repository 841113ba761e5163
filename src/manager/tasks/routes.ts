/** HTTP translation of the tasks: `/api/v1/async-task/...` and `/admin/v1/instance-async-task/...`. */
import type { FastifyInstance } from 'fastify';
import { badRequest } from '../../kernel/errors.js';
import { ListQuerySchema, listResponse, parseListQuery } from '../../kernel/paging.js';
import { principalOf } from '../auth/index.js';
import { SUBTASK_LIST, TASK_LIST, type TaskService } from './service.js';
import * as S from './schemas.js';

type Query = { Querystring: Record<string, unknown> };

/** A time of the `from`/`to` filters: epoch milliseconds or ISO 8601. */
function timeParam(v: unknown, name: string): number | undefined {
  if (v === undefined || v === '') return undefined;
  const s = String(v);
  const n = /^\d+$/.test(s) ? Number(s) : Date.parse(s);
  if (!Number.isFinite(n))
    throw badRequest(`${name} must be epoch milliseconds or an ISO 8601 time, got "${s}"`);
  return n;
}

async function history(tasks: TaskService, request: import('fastify').FastifyRequest<Query>) {
  const spec = parseListQuery(request.query, SUBTASK_LIST);
  const from = timeParam(request.query.from, 'from');
  const to = timeParam(request.query.to, 'to');
  if (from !== undefined && to !== undefined && from > to) throw badRequest('from is after to');
  return listResponse(
    spec,
    await tasks.subtaskHistory(principalOf(request), spec, {
      ...(from !== undefined ? { from } : {}),
      ...(to !== undefined ? { to } : {}),
    }),
  );
}

export async function taskRoutes(app: FastifyInstance, options: { tasks: TaskService }) {
  const { tasks } = options;
  app.get('/api/v1/async-task/task-types', async () => tasks.taskTypes());
  app.get<Query>('/api/v1/async-task/subtasks', { schema: { querystring: S.HistoryQuery } }, (request) =>
    history(tasks, request),
  );
  app.get<Query>(
    '/api/v1/async-task/tasks',
    { schema: { querystring: ListQuerySchema } },
    async (request) => {
      const spec = parseListQuery(request.query, TASK_LIST);
      return listResponse(spec, await tasks.listTasks(principalOf(request), spec));
    },
  );
  app.get<{ Params: S.TaskParams }>(
    '/api/v1/async-task/:taskId',
    { schema: { params: S.TaskParams } },
    async (request) => tasks.task(principalOf(request), request.params.taskId),
  );
  app.get<{ Params: S.TaskParams }>(
    '/api/v1/async-task/:taskId/subtasks',
    { schema: { params: S.TaskParams } },
    async (request) => tasks.subtasks(principalOf(request), request.params.taskId),
  );
  app.post<{ Params: S.TaskParams }>(
    '/api/v1/async-task/:taskId/cancel',
    { schema: { params: S.TaskParams } },
    async (request) => tasks.cancel(principalOf(request), request.params.taskId),
  );
  app.post<{ Params: S.TaskParams; Body: S.ResumeBody }>(
    '/api/v1/async-task/:taskId/resume',
    {
      schema: { params: S.TaskParams, body: S.ResumeBody },
      // The body is optional: none is `{}` (the default deadline).
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request) =>
      tasks.resume(principalOf(request), request.params.taskId, request.body.deadlineSeconds),
  );
}

export async function adminTaskRoutes(app: FastifyInstance, options: { tasks: TaskService }) {
  const { tasks } = options;
  const base = '/admin/v1/instance-async-task';
  app.get(`${base}/task-types`, async () => tasks.taskTypes());
  app.get<Query>(`${base}/tasks`, { schema: { querystring: ListQuerySchema } }, async (request) => {
    const spec = parseListQuery(request.query, TASK_LIST);
    return listResponse(spec, await tasks.listTasks(principalOf(request), spec));
  });
  app.get<{ Params: S.TaskParams }>(
    `${base}/task/:taskId`,
    { schema: { params: S.TaskParams } },
    async (request) => tasks.task(principalOf(request), request.params.taskId),
  );
  app.get<Query>(`${base}/subtasks`, { schema: { querystring: S.HistoryQuery } }, (request) =>
    history(tasks, request),
  );
  app.get<{ Params: S.TaskParams }>(
    `${base}/:taskId/subtasks`,
    { schema: { params: S.TaskParams } },
    async (request) => tasks.subtasks(principalOf(request), request.params.taskId),
  );
  app.get<{ Params: S.SubtaskParams }>(
    `${base}/logs/subtask/:subtaskId`,
    { schema: { params: S.SubtaskParams } },
    async (request) => tasks.subtaskLogs(principalOf(request), request.params.subtaskId),
  );
}
