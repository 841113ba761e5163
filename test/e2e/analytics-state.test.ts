/**
 * Analytics state: windows longer than a minute keep their values over a restart of the edge
 * (saved every `analytics-persist-interval` ms and at close); a rename or a move keeps a running
 * instance's state, a change of its parameters starts it anew.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection } from 'nats';
import { LOCAL_PROVIDER_ID } from '../../src/edge/auth/index.js';
import { bootstrapAdmin, startTestEdge, type TestEdge } from '../helpers/edge.js';
import { aok, collect, CREATE_INSTANCE } from '../helpers/analytics.js';
import { eventually } from '../helpers/util.js';
import type { AnalyticsTables } from '../../src/edge/analytics/repository.js';

const dataDir = mkdtempSync(join(tmpdir(), 'mw-analytics-state-'));
const PASSWORD = 'a-new-admin-password';
let t: TestEdge;
let nc: NatsConnection;
let auth: string;

async function start(first: boolean): Promise<void> {
  t = await startTestEdge({ dataDir, logLevel: 'error', analyticsPersistInterval: 1000 });
  if (first) auth = `Bearer ${await bootstrapAdmin(t, PASSWORD)}`;
  else {
    const login = await t.call('/auth/v2/login', {
      json: { username: 'admin', password: PASSWORD, providerId: LOCAL_PROVIDER_ID },
    });
    auth = `Bearer ${login.body.jwtAccess}`;
  }
  nc = await connect({ servers: t.edge.datahub.gateway!.url });
}

async function stop(): Promise<void> {
  await nc.close();
  await t.stop();
}

before(() => start(true));
after(async () => {
  await stop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** Publishes values on `subject` and answers the outputs they caused on `id`'s subject. */
async function send(id: string, subject: string, values: number[]): Promise<any[]> {
  const out = collect(nc, `analytics.publish.${id}`);
  // The gateway handles a SUB before it answers the PING of a flush: the collector is subscribed.
  await nc.flush();
  const now = Date.now();
  values.forEach((v, i) => nc.publish(subject, JSON.stringify({ value: v, timestamp: now + i })));
  await eventually(() => out.items.length >= values.length, 3000, `${values.length} outputs`);
  out.stop();
  return out.items;
}

describe('analytics state', () => {
  test('a 2-minute sliding window survives a restart; a 30 s one does not', async () => {
    const ws = (await aok(t, auth, `mutation { CreateWorkspace(input: { Name: "state" }) { ID } }`))
      .CreateWorkspace.ID;
    const mk = async (name: string, windowMs: number) =>
      (
        await aok(t, auth, CREATE_INSTANCE, {
          in: {
            WorkspaceID: ws,
            Name: name,
            Kind: 'window',
            Parameters: {
              inputs: [{ subject: 'test.state.in' }],
              statistic: 'sum',
              windowType: 'sliding',
              windowMs,
            },
          },
        })
      ).CreateProcessorInstance;
    const long = await mk('long', 120_000);
    const short = await mk('short', 30_000);
    assert.deepEqual(
      (await send(long.ID, 'test.state.in', [1, 2, 3])).map((m) => m.value),
      [1, 3, 6],
    );
    // Saved periodically, not only at close (a crash loses at most one interval).
    const saved = async () =>
      (
        await t.edge.database
          .typed<AnalyticsTables>()
          .selectFrom('analytics_state')
          .select('instance_id')
          .execute()
      ).map((r: { instance_id: string }) => r.instance_id);
    const end = Date.now() + 3000;
    while (!(await saved()).includes(long.ID) && Date.now() < end)
      await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(await saved(), [long.ID], 'only the window longer than a minute is saved');
    await stop();
    await start(false);
    const both = collect(nc, 'analytics.publish.>');
    // The gateway handles a SUB before it answers the PING of a flush: the collector is subscribed.
    await nc.flush();
    nc.publish('test.state.in', JSON.stringify({ value: 10, timestamp: Date.now() }));
    await eventually(() => both.items.length >= 2, 3000, 'outputs after restart');
    both.stop();
    assert.equal(both.items.find((m) => m.registerId === long.ID).value, 16);
    assert.equal(both.items.find((m) => m.registerId === short.ID).value, 10);
  });

  test('rename and move keep the state; new parameters start anew', async () => {
    const ws = (await aok(t, auth, `mutation { CreateWorkspace(input: { Name: "keep" }) { ID } }`))
      .CreateWorkspace.ID;
    const p = (
      await aok(t, auth, CREATE_INSTANCE, {
        in: {
          WorkspaceID: ws,
          Name: 'count',
          Kind: 'window',
          Parameters: {
            inputs: [{ subject: 'test.keep.in' }],
            statistic: 'count',
            windowType: 'sliding',
            windowCount: 100,
          },
        },
      })
    ).CreateProcessorInstance;
    assert.deepEqual(
      (await send(p.ID, 'test.keep.in', [1, 1])).map((m) => m.value),
      [1, 2],
    );
    await aok(
      t,
      auth,
      `mutation($id: ID!) { RenameProcessorInstance(input: { ID: $id, Name: "counter" }) { Name } }`,
      { id: p.ID },
    );
    await aok(
      t,
      auth,
      `mutation($id: ID!) { SetProcessorInstancesPositionMap(input: { Positions: [{ ID: $id, X: 5, Y: 6 }] }) { ID } }`,
      { id: p.ID },
    );
    await aok(
      t,
      auth,
      `mutation($id: ID!) { UpdateProcessorInstance(input: { ID: $id, Name: "counter 2", Position: { X: 9, Y: 9 } }) { ID } }`,
      { id: p.ID },
    );
    const after = await send(p.ID, 'test.keep.in', [1]);
    assert.equal(after[0].value, 3);
    assert.equal(after[0].tagName, 'counter 2');
    await aok(
      t,
      auth,
      `mutation($in: UpdateProcessorInstanceRequest!) { UpdateProcessorInstance(input: $in) { ID } }`,
      {
        in: {
          ID: p.ID,
          Parameters: {
            inputs: [{ subject: 'test.keep.in' }],
            statistic: 'count',
            windowType: 'sliding',
            windowCount: 50,
          },
        },
      },
    );
    assert.equal((await send(p.ID, 'test.keep.in', [1]))[0].value, 1);
  });
});
