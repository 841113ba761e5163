/**
 * The task tables on SQLite and PostgreSQL: claims by two processes (two handles on one
 * database) never overlap, a claim held past its lease is taken over with what the first holder
 * recorded, a subtask is ended only by its holder, overdue waiting subtasks fail, a cancelled
 * task's waiting subtasks are cancelled (and wait again when it resumes), and a task settles once
 * every subtask ended.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from '../helpers/postgres.js';
import { taskMigrations } from '../../src/manager/tasks/migrations/index.js';
import { TaskRepository, type SubtaskRow, type TaskRow } from '../../src/manager/tasks/repository.js';

function rows(taskId: string, devices: string[], deadline = Date.now() + 60_000) {
  const now = Date.now();
  const task: TaskRow = {
    id: taskId,
    type: 'TEMPLATE_APPLY',
    status: 'RUNNING',
    description: 't',
    params: '{}',
    company_id: null,
    project_id: null,
    total: devices.length,
    created_by: 'test',
    created_at: now,
    updated_at: now,
    finished_at: null,
    deadline_at: deadline,
  };
  const subtasks: SubtaskRow[] = devices.map((d, i) => ({
    id: `${taskId}-${i.toString().padStart(4, '0')}`,
    task_id: taskId,
    type: 'TEMPLATE_APPLY',
    device_id: d,
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
  return { task, subtasks };
}

forEachDialect('task repository', (ctx) => {
  let a: TaskRepository;
  let b: TaskRepository;
  before(async () => {
    await ctx.database.migrate([taskMigrations]);
    a = new TaskRepository(ctx.database);
    b = new TaskRepository(ctx.reopen(ctx.database));
  });

  test('two processes claiming at once never claim the same subtask', async () => {
    const devices = Array.from({ length: 60 }, (_, i) => `dev-${i}`);
    const { task, subtasks } = rows('claims', devices);
    await a.insertTask(task, subtasks);
    const seen: string[] = [];
    for (let round = 0; round < 10; round++) {
      const [x, y] = await Promise.all([a.claim('A', devices, 5, 60_000), b.claim('B', devices, 5, 60_000)]);
      seen.push(...x.map((r) => r.id), ...y.map((r) => r.id));
    }
    assert.equal(seen.length, 60);
    assert.equal(new Set(seen).size, 60);
    // Only devices this process holds (and deviceless subtasks) are claimed.
    const { task: t2, subtasks: s2 } = rows('scoped', ['mine', 'theirs']);
    await a.insertTask(t2, s2);
    const mine = await a.claim('A', ['mine'], 10, 60_000);
    assert.deepEqual(
      mine.map((r) => r.device_id),
      ['mine'],
    );
  });

  test('a lease that expires is taken over, with the sent mark of the stopped holder', async () => {
    const { task, subtasks } = rows('lease', ['d1']);
    await a.insertTask(task, subtasks);
    const [first] = await a.claim('A', ['d1'], 1, 50);
    assert.ok(first);
    assert.equal(await a.markSent(first.id, 'A'), true);
    assert.deepEqual(await b.claim('B', ['d1'], 1, 50), []);
    // Time is the test: the 50 ms claim lease runs out.
    await new Promise((r) => setTimeout(r, 80));
    const [taken] = await b.claim('B', ['d1'], 1, 60_000);
    assert.equal(taken?.id, first.id);

    assert.ok(taken?.sent_at, 'the new holder sees that the change may have been sent');
    // The first holder can no longer end it; the new one can.
    assert.equal(await a.finish(first.id, 'A', 'SUCCEEDED', {}, null), false);
    assert.equal(await b.finish(first.id, 'B', 'SUCCEEDED', { ok: 1 }, null), true);
    await b.settle('lease');
    assert.equal(await a.status('lease'), 'SUCCEEDED');
  });

  test('retry, overdue, cancel and settle', async () => {
    const { task, subtasks } = rows('mixed', ['r1', 'r2', 'r3']);
    await a.insertTask(task, subtasks);
    const got = await a.claim('A', ['r1'], 1, 60_000);
    assert.equal(await a.release(got[0]!.id, 'A', 'RETRY', Date.now() + 60_000, 'offline'), true);
    assert.deepEqual(await a.claim('A', ['r1'], 1, 60_000), [], 'not before its next attempt');
    assert.equal(await a.cancel('mixed'), true);
    assert.equal(await a.cancel('mixed'), false);
    await a.settle('mixed');
    const counts = await a.counts('mixed');
    assert.deepEqual(counts, { CANCELLED: 3 });
    assert.equal(await a.status('mixed'), 'CANCELLED');

    const { task: t2, subtasks: s2 } = rows('late', ['x'], Date.now() + 30);
    await a.insertTask(t2, s2);
    // Time is the test: the deadline (30 ms) passes.
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(await a.failOverdue(), ['late']);
    await a.settle('late');
    assert.equal(await a.status('late'), 'FAILED');
    const [s] = await a.subtasksOf('late');
    assert.match(s!.error!, /deadline passed/);
  });

  test('a cancelled task resumes: its cancelled subtasks wait again, the others keep their outcome', async () => {
    const { task, subtasks } = rows('resumed', ['q1', 'q2']);
    await a.insertTask(task, subtasks);
    const [done] = await a.claim('A', ['q1'], 1, 60_000);
    assert.equal(await a.finish(done!.id, 'A', 'SUCCEEDED', { ok: 1 }, null), true);
    assert.equal(
      await a.resume('resumed', Date.now() + 60_000),
      undefined,
      'a running task: nothing to resume',
    );
    assert.equal(await a.cancel('resumed'), true);
    await a.settle('resumed');
    assert.equal(await a.status('resumed'), 'CANCELLED');
    const deadline = Date.now() + 120_000;
    assert.equal(await b.resume('resumed', deadline), 1);
    assert.equal(await b.resume('resumed', deadline), undefined, 'resumed once');
    assert.equal(await a.status('resumed'), 'RUNNING');
    assert.equal((await a.getTask('resumed'))!.finished_at, null);
    assert.deepEqual(await a.counts('resumed'), { SUCCEEDED: 1, PENDING: 1 });
    const [again] = await b.claim('B', ['q2'], 1, 60_000);
    assert.equal(again?.device_id, 'q2');
    assert.equal(again?.deadline_at, deadline);
    assert.equal(await b.finish(again!.id, 'B', 'SUCCEEDED', {}, null), true);
    await b.settle('resumed');
    assert.equal(await a.status('resumed'), 'SUCCEEDED');
  });

  test('a task whose subtasks all ended without a settle is found and settled', async () => {
    const { task, subtasks } = rows('unsettled', ['u1']);
    await a.insertTask(task, subtasks);
    const [c] = await a.claim('A', ['u1'], 1, 60_000);
    assert.equal(await a.finish(c!.id, 'A', 'SUCCEEDED', {}, null), true);
    // The process stopped here, before its settle.
    assert.ok((await b.unsettled()).includes('unsettled'));
    await b.settle('unsettled');
    assert.equal(await a.status('unsettled'), 'SUCCEEDED');
    assert.equal((await b.unsettled()).includes('unsettled'), false);
  });

  test('logs are bounded per subtask', async () => {
    for (let i = 0; i < 8; i++)
      await a.addLog(
        { id: `log-${i}`, subtask_id: 'sx', at: Date.now(), level: 'info', instance: 'A', message: `m${i}` },
        5,
      );
    const logs = await a.logsOf('sx');
    assert.deepEqual(
      logs.map((l) => l.message),
      ['m3', 'm4', 'm5', 'm6', 'm7'],
    );
  });
});
