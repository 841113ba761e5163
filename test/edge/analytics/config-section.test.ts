/**
 * The analytics section's apply on SQLite and PostgreSQL, against the live service on the
 * in-process bus: everything goes through the apply's transaction (a rollback leaves the tables
 * and the live processors as they were, and `afterCommit` is not run), a failing workspace with
 * failFast false is undone to its savepoint while the rest of the transaction stays, and after the
 * commit `reload` starts the new processors while untouched ones keep their window.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { DataHub } from '../../../src/edge/datahub/index.js';
import { AnalyticsConfigSection, type AnalyticsSection } from '../../../src/edge/analytics/config-section.js';
import { AnalyticsLog, AnalyticsService, analyticsMigrations } from '../../../src/edge/analytics/index.js';
import { AnalyticsRepository, type AnalyticsTables } from '../../../src/edge/analytics/repository.js';
import type { ApplyMode, SectionApplyContext } from '../../../src/kernel/service/index.js';
import type { Transaction } from '../../../src/kernel/db/index.js';
import { forEachDialect } from '../../helpers/postgres.js';

const sumWorkspace = (name: string, subject: string, processorName = 'sum') => ({
  version: 1 as const,
  workspace: { name, description: '' },
  groups: [],
  processors: [
    {
      key: 'p1',
      name: processorName,
      kind: 'window',
      group: null,
      enabled: true,
      position: { x: 0, y: 0 },
      parameters: { inputs: [{ subject }], statistic: 'sum', windowType: 'sliding', windowCount: 100 },
    },
  ],
});

forEachDialect('analytics configuration section: apply in the transaction', (ctx) => {
  let hub: DataHub;
  let service: AnalyticsService;
  let section: AnalyticsConfigSection;

  before(async () => {
    await ctx.database.migrate([analyticsMigrations]);
    hub = new DataHub();
    service = await AnalyticsService.open({
      database: ctx.database,
      hub,
      log: new AnalyticsLog(pino({ level: 'silent' })),
      persistIntervalMs: 0,
    });
    section = new AnalyticsConfigSection(service);
  });
  after(async () => {
    await service.close();
    hub.close();
  });

  /** Applies `doc` in one transaction; `then` runs inside it after the section (throw: roll back). */
  async function apply(
    doc: AnalyticsSection,
    options: { mode?: ApplyMode; failFast?: boolean; then?: (trx: Transaction<any>) => Promise<void> } = {},
  ): Promise<{ failed: string[]; afterCommit: number }> {
    const failed: string[] = [];
    const later: Array<() => void | Promise<void>> = [];
    await ctx.database.transaction(async (trx) => {
      const c: SectionApplyContext = {
        mode: options.mode ?? 'legacy',
        trx,
        failFast: options.failFast ?? true,
        fail: (item) => void failed.push(item),
        afterCommit: (fn) => void later.push(fn),
        progress: () => undefined,
      };
      await section.apply(doc, c);
      await options.then?.(trx);
    });
    for (const fn of later) await fn();
    return { failed, afterCommit: later.length };
  }

  /** The next output on `analytics.publish.<id>` after publishing `value` on `subject`. */
  function feed(id: string, subject: string, value: number): Promise<any> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        sub.unsubscribe();
        reject(new Error(`no output of ${id}`));
      }, 2000);
      const sub = hub.subscribe(`analytics.publish.${id}`, {
        callback: (m) => {
          clearTimeout(timer);
          sub.unsubscribe();
          resolve(m.json());
        },
      });
      hub.publish(subject, { value, timestamp: Date.now() });
    });
  }

  const names = () => [...service.workspaces.values()].map((w) => w.name).sort();
  const rows = async (table: keyof AnalyticsTables) =>
    (await ctx.database.typed<AnalyticsTables>().selectFrom(table).selectAll().execute()).length;

  test('a rollback after the section wrote leaves tables and live processors as they were', async () => {
    await service.createWorkspace({ name: 'kept' });
    const kept = [...service.workspaces.values()][0]!;
    const k = await service.createInstance({
      workspaceId: kept.id,
      name: 'sum',
      kind: 'window',
      parameters: sumWorkspace('kept', 'in.kept').processors[0]!.parameters,
    });
    assert.equal((await feed(k.id, 'in.kept', 1)).value, 1);
    let inside = 0;
    await assert.rejects(
      apply(
        { workspaces: [sumWorkspace('gone', 'in.gone')], variables: { v: 1 } },
        {
          then: async (trx) => {
            // Inside the transaction the section's writes are there.
            inside = (await trx.selectFrom('analytics_instance').selectAll().execute()).length;
            throw new Error('another section failed');
          },
        },
      ),
      /another section failed/,
    );
    assert.equal(inside, 2);
    assert.deepEqual(names(), ['kept']);
    assert.equal(await rows('analytics_workspace'), 1);
    assert.equal(await rows('analytics_instance'), 1);
    assert.equal(await rows('analytics_variable'), 0);
    assert.equal(service.runtime.counts.total, 1);
    // The live processor still has its window (1), then 2 more.
    assert.equal((await feed(k.id, 'in.kept', 2)).value, 3);
  });

  test('after the commit, reload starts the new processors and keeps the untouched ones with their window', async () => {
    const k = [...service.instances.values()].find((i) => i.name === 'sum')!;
    const current = await section.export();
    const r = await apply({
      workspaces: [...current.workspaces, sumWorkspace('fresh', 'in.fresh')],
      variables: { limit: 3 },
    });
    assert.equal(r.afterCommit, 1);
    assert.deepEqual(names(), ['fresh', 'kept']);
    assert.equal(service.variable('limit').value, 3);
    const fresh = [...service.instances.values()].find((i) => i.id !== k.id)!;
    assert.equal(service.runtime.status(fresh.id)?.state, 'Running');
    assert.equal((await feed(fresh.id, 'in.fresh', 5)).value, 5);
    assert.equal((await feed(k.id, 'in.kept', 4)).value, 7);
    // Nothing to change: no afterCommit, nothing restarted.
    const same = await apply(await section.export());
    assert.equal(same.afterCommit, 0);
  });

  test('failFast false: a failing workspace is undone to its savepoint, the rest applies', async () => {
    const bad = sumWorkspace('bad', 'in.bad');
    bad.processors.push({ ...bad.processors[0]!, key: 'p2', name: 'x'.repeat(201) });
    await assert.rejects(
      apply({ workspaces: [sumWorkspace('good', 'in.good'), bad], variables: {} }),
      /section analytics: workspaces\[1\] \(bad\): Name must have 1 to 200 characters/,
    );
    assert.deepEqual(names(), ['fresh', 'kept']);
    const r = await apply(
      { workspaces: [sumWorkspace('good', 'in.good'), bad], variables: {} },
      { failFast: false },
    );
    assert.deepEqual(r.failed, ['analytics: workspaces[1] (bad)']);
    assert.deepEqual(names(), ['fresh', 'good', 'kept']);
    assert.equal(await rows('analytics_workspace'), 3);
    assert.equal(await rows('analytics_instance'), 3);
    const good = [...service.instances.values()].find(
      (i) => service.workspace(i.workspaceId).name === 'good',
    )!;
    assert.equal((await feed(good.id, 'in.good', 2)).value, 2);
  });

  test('mode use: workspaces and variables not in the template go; their processors stop', async () => {
    const good = [...service.workspaces.values()].find((w) => w.name === 'good')!;
    const doc = service.exportWorkspace(good.id);
    await apply({ workspaces: [doc], variables: {} }, { mode: 'use' });
    assert.deepEqual(names(), ['good']);
    assert.equal(service.variables.size, 0);
    assert.equal(service.runtime.counts.total, 1);
    assert.equal(await rows('analytics_instance'), 1);
  });

  test('the repository bound to a transaction writes in it and runs `transaction` in it', async () => {
    await assert.rejects(
      ctx.database.transaction(async (trx) => {
        const repo = AnalyticsRepository.inTransaction(trx);
        assert.equal(repo.bound, true);
        await repo.transaction((r) =>
          r.upsertVariable({ name: 'inside', value: { a: 1 }, updatedAt: Date.now() }),
        );
        assert.deepEqual(
          (await repo.load()).variables.map((v) => [v.name, v.value]),
          [['inside', { a: 1 }]],
        );
        throw new Error('roll back');
      }),
      /roll back/,
    );
    assert.equal(await rows('analytics_variable'), 0);
  });
});
