/**
 * The task runner against a real database (SQLite file; the claims themselves are tested on both
 * dialects in tasks-repository.test.ts): a subtask the device cannot take now is retried with a
 * growing delay and then succeeds; no more subtasks run at once than the concurrency; only
 * devices whose link this process holds are run, and one that links later runs then; a waiting
 * subtask fails at the task's deadline; an error that is not transient fails at once.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Database } from '../../src/kernel/db/index.js';
import { AppError, ERRORS } from '../../src/kernel/errors.js';
import type { Principal } from '../../src/manager/auth/index.js';
import { taskMigrations } from '../../src/manager/tasks/migrations/index.js';
import { TaskRepository } from '../../src/manager/tasks/repository.js';
import { TaskService, type SubtaskOutcome } from '../../src/manager/tasks/service.js';

const dir = mkdtempSync(join(tmpdir(), 'mw-runner-'));
let database: Database;
let tasks: TaskService;
const linked = new Set<string>();
const listeners: ((d: string) => void)[] = [];
const admin: Principal = {
  subject: 'token:test',
  tokenId: 't',
  tokenName: 'test',
  username: null,
  grants: [{ role: 'admin', companyId: null, projectId: null }],
};
const calls = new Map<string, number>();
let running = 0;
let maxRunning = 0;

before(async () => {
  database = Database.open({ sqlitePath: join(dir, 'm.sqlite') });
  await database.migrate([taskMigrations]);
  tasks = new TaskService(new TaskRepository(database), pino({ level: 'silent' }), {
    concurrency: 3,
    leaseMs: 5000,
    pollMs: 50,
    backoffBaseMs: 100,
    backoffMaxMs: 400,
    linked: () => [...linked],
    onLinked: (l) => listeners.push(l),
  });
  tasks.register({
    type: 'FLAKY',
    description: 'fails twice as the device is busy, then works',
    async run(ctx): Promise<SubtaskOutcome> {
      await ctx.markSent();
      const n = (calls.get(ctx.subtask.id) ?? 0) + 1;
      calls.set(ctx.subtask.id, n);
      if (n <= 2) throw new AppError(ERRORS.deviceOffline, 'the device went offline during the request');
      return { status: 'SUCCEEDED', result: { n } };
    },
  });
  tasks.register({
    type: 'SLOW',
    description: 'takes 100 ms',
    async run(ctx): Promise<SubtaskOutcome> {
      await ctx.markSent();
      running++;
      maxRunning = Math.max(maxRunning, running);
      // A subtask that takes time, so that runs overlap if they can.
      await new Promise((r) => setTimeout(r, 100));
      running--;
      return { status: 'SUCCEEDED' };
    },
  });
  tasks.register({
    type: 'BROKEN',
    description: 'refused by the edge',
    async run(): Promise<SubtaskOutcome> {
      throw new AppError(ERRORS.invalidTemplate, 'invalid template: section devicehub: nope');
    },
  });
  await tasks.start();
});
after(async () => {
  await tasks.stop();
  await database.close();
  rmSync(dir, { recursive: true, force: true });
});

const until = async (taskId: string, ms = 10_000) => {
  const end = Date.now() + ms;
  for (;;) {
    const t = await tasks.task(admin, taskId);
    if (t.status !== 'RUNNING') return t;
    if (Date.now() > end) throw new Error(`task ${taskId} still running: ${JSON.stringify(t.counts)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};
const scope = { companyId: null, projectId: null };

test('a transient failure is retried with a growing delay, then succeeds', async () => {
  linked.add('d-flaky');
  const t = await tasks.create(admin, {
    type: 'FLAKY',
    description: 'f',
    params: {},
    scope,
    devices: ['d-flaky'],
  });
  const done = await until(t.taskId);
  assert.equal(done.status, 'SUCCEEDED');
  const [s] = (await tasks.subtasks(admin, t.taskId)).items;
  assert.equal(s!.attempts, 3);
  assert.deepEqual(s!.result, { n: 3 });
  assert.ok(s!.durationMs! >= 100 + 200 / 2, `backoff waited: ${s!.durationMs} ms`);
  const logs = (await tasks.subtaskLogs(admin, s!.subtaskId)).items.map((l) => l.message);
  assert.equal(logs.filter((m) => /retrying after/.test(m)).length, 2);
});

test('at most `concurrency` subtasks at once; offline devices wait and run once linked', async () => {
  const devices = Array.from({ length: 10 }, (_, i) => `d-slow-${i}`);
  for (const d of devices.slice(0, 8)) linked.add(d);
  const t = await tasks.create(admin, { type: 'SLOW', description: 's', params: {}, scope, devices });
  for (let i = 0; i < 500 && (await tasks.task(admin, t.taskId)).counts.SUCCEEDED !== 8; i++)
    await new Promise((r) => setTimeout(r, 20));
  // The two offline devices still wait a while later.
  // Time is the test: the offline devices still wait a while later.
  await new Promise((r) => setTimeout(r, 300));
  const mid = await tasks.task(admin, t.taskId);
  assert.equal(mid.status, 'RUNNING');
  assert.equal(mid.counts.SUCCEEDED, 8);
  assert.equal(mid.counts.PENDING, 2);
  linked.add('d-slow-8');
  linked.add('d-slow-9');
  for (const l of listeners) l('d-slow-8');
  assert.equal((await until(t.taskId)).status, 'SUCCEEDED');
  assert.equal(maxRunning, 3);
});

test('a device that never links fails at the deadline; a refusal fails at once', async () => {
  const t = await tasks.create(admin, {
    type: 'SLOW',
    description: 'late',
    params: {},
    scope,
    devices: ['d-never'],
    deadlineSeconds: 1,
  });
  const done = await until(t.taskId, 5000);
  assert.equal(done.status, 'FAILED');
  const [s] = (await tasks.subtasks(admin, t.taskId)).items;
  assert.match(s!.error!, /deadline passed/);
  assert.equal(s!.attempts, 0);

  linked.add('d-broken');
  const b = await tasks.create(admin, {
    type: 'BROKEN',
    description: 'b',
    params: {},
    scope,
    devices: ['d-broken'],
  });
  assert.equal((await until(b.taskId)).status, 'FAILED');
  const [bs] = (await tasks.subtasks(admin, b.taskId)).items;
  assert.match(bs!.error!, /invalid template/);
  await assert.rejects(
    tasks.create(admin, { type: 'NOPE', description: 'x', params: {}, scope, devices: ['x'] }),
    /unknown task type/,
  );
  await assert.rejects(
    tasks.create(admin, {
      type: 'SLOW',
      description: 'x',
      params: {},
      scope,
      devices: ['x'],
      deadlineSeconds: 0,
    }),
    /deadlineSeconds/,
  );
});
