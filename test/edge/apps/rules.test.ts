/**
 * The rules of the applications module without an engine: the engine's records in this API's
 * shapes, application grouping labels, paging in memory, the dashboard's parameter, and the
 * engine's refusals as errors of ours.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pageInMemory } from '../../../src/kernel/paging/index.js';
import { engineFailure } from '../../../src/edge/apps/engine.js';
import { isoTime, toContainerSummary, toImageSummary } from '../../../src/edge/apps/shapes.js';
import { StatsSampler, cpuOf } from '../../../src/edge/apps/stats.js';
import { AppsService } from '../../../src/edge/apps/service.js';
import { EngineClient } from '../../../src/edge/apps/engine.js';
import { AppError } from '../../../src/kernel/errors.js';
import pino from 'pino';

test('a container of the engine in this API shape, its application from its labels', () => {
  const c = toContainerSummary({
    Id: 'abc',
    Names: ['/web'],
    Image: 'nginx',
    State: 'running',
    Created: 1795752428,
    Labels: { 'com.docker.compose.project': 'line7' },
    Ports: [{ PrivatePort: 80, PublicPort: 8080, Type: 'tcp' }],
    NetworkSettings: { Networks: { podman: {} } },
  });
  assert.equal(c.name, 'web');
  assert.equal(c.application, 'line7');
  assert.equal(c.created, '2026-11-27T04:07:08.000Z');
  assert.deepEqual(c.ports, [{ privatePort: 80, publicPort: 8080, type: 'tcp', ip: null }]);
  assert.deepEqual(c.networks, ['podman']);
  // millwright.application wins over compose's label.
  const m = toContainerSummary({
    Labels: { 'com.docker.compose.project': 'a', 'millwright.application': 'b' },
  });
  assert.equal(m.application, 'b');
  assert.equal(toContainerSummary({}).application, null);
  assert.deepEqual(toImageSummary({ Id: 'sha256:1', RepoTags: ['<none>:<none>'] }).tags, []);
  assert.equal(isoTime('0001-01-01T00:00:00Z'), null);
  assert.equal(isoTime(0), null);
});

test('lists in memory: filter, sort with nulls last, paging, errors naming the parameter', () => {
  const rows = [
    { id: '1', name: 'b', size: 3, app: null },
    { id: '2', name: 'a', size: 1, app: 'x' },
    { id: '3', name: 'C', size: 2, app: 'y' },
  ];
  const def = {
    fields: { name: 'name', app: 'app', size: { column: 'size', type: 'integer' as const } },
    tiebreak: 'id',
    defaultSort: [{ field: 'name', order: 'asc' as const }],
  };
  assert.deepEqual(
    pageInMemory(rows, { sort: 'app:desc' }, def).items.map((r) => r.id),
    ['3', '2', '1'],
  );
  assert.deepEqual(
    pageInMemory(rows, { sort: 'app:asc' }, def).items.map((r) => r.id),
    ['2', '3', '1'],
  );
  const page = pageInMemory(rows, { filter: 'size:gte:2', limit: '1', offset: '1', sort: 'size:asc' }, def);
  assert.deepEqual(page, { items: [rows[0]], total: 2, offset: 1, limit: 1 });
  assert.deepEqual(
    pageInMemory(rows, { filter: 'name:contains:c' }, def).items.map((r) => r.id),
    ['3'],
  );
  assert.throws(() => pageInMemory(rows, { limit: '0' }, def), /limit must be an integer/);
  assert.throws(() => pageInMemory(rows, { sort: 'nope:asc' }, def), /nope/);
});

test('cpuHistorySeconds: an integer from 0 to the history kept', () => {
  const s = new StatsSampler(
    new AppsService(new EngineClient({ socket: '/nowhere', timeoutMs: 100 }), 10),
    { intervalSeconds: 5, historySeconds: 600, maxContainers: 10 },
    pino({ level: 'silent' }),
  );
  assert.equal(s.parseHistorySeconds(undefined), 300);
  assert.equal(s.parseHistorySeconds('0'), 0);
  assert.equal(s.parseHistorySeconds('600'), 600);
  for (const bad of ['601', '-1', '1e3', 'x', ['1', '2']]) {
    assert.throws(() => s.parseHistorySeconds(bad), /cpuHistorySeconds must be an integer from 0 to 600/);
  }
});

test("the engine's refusals: 404, 409, 400 as ours; anything else a 502 with the engine's reason", () => {
  const e = (status: number) => engineFailure({ status, body: { message: 'why' } }, 'POST /x');
  assert.equal(e(404).status, 404);
  assert.equal(e(409).code, 'conflict');
  assert.equal(e(400).code, 'bad_request');
  const failed = e(500);
  assert.ok(failed instanceof AppError);
  assert.equal(failed.status, 502);
  assert.equal(failed.code, 'engine_error');
  assert.equal(failed.message, 'the container engine refused POST /x: why');
  assert.deepEqual(failed.details, { engineStatus: 500, engineMessage: 'why' });
});

test('CPU from two stats samples, as docker stats computes it', () => {
  const stats = (total: number, system: number) => ({
    cpu_stats: { cpu_usage: { total_usage: total }, system_cpu_usage: system, online_cpus: 2 },
  });
  const first = cpuOf(stats(1_000, 10_000), null);
  assert.equal(first.cpuPercent, null, 'nothing to compare the first sample with');
  // 500 of 10,000 ns of host CPU time on two CPUs: 10% (of one core).
  assert.equal(cpuOf(stats(1_500, 20_000), first.sample).cpuPercent, 10);
  // A counter that went back (the container restarted): no figure, a new start.
  const back = cpuOf(stats(100, 30_000), { total: 1_500, system: 20_000 });
  assert.equal(back.cpuPercent, null);
  assert.deepEqual(back.sample, { total: 100, system: 30_000 });
  assert.equal(cpuOf({}, first.sample).cpuPercent, null);
});
