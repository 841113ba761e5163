/**
 * /analytics/v3 end to end over HTTPS: every operation of contract part 4.4 for analytics (the AI
 * suite and model uploads aside), the removed global parameters, the deprecated logs, the
 * subscriptions over WebSocket, `/analytics/v2/version`, and an export and import that reproduces
 * the same outputs on the bus.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { graphql } from '../helpers/edge.js';
import { startAcqEdge, type AcqEdge } from '../edge/acquisition/support.js';
import { aerr, aok, ANALYTICS, collect, CREATE_INSTANCE, subscribe } from '../helpers/analytics.js';
import { eventually } from '../helpers/util.js';

let e: AcqEdge;
const ok = (q: string, v?: Record<string, unknown>) => aok(e.t, e.auth, q, v);
const err = (q: string, v?: Record<string, unknown>) => aerr(e.t, e.auth, q, v);

before(async () => {
  e = await startAcqEdge();
});
after(() => e.stop());

describe('analytics API', () => {
  test('/analytics/v2/version answers; the endpoint needs credentials', async () => {
    const v = await e.t.call('/analytics/v2/version', { headers: { authorization: e.auth } });
    assert.equal(v.status, 200);
    assert.equal(v.body.version, '4.4.0');
    const anon = await e.t.call(ANALYTICS, { json: { query: '{ GetVariables { Name } }' } });
    assert.equal(anon.status, 401);
  });

  test('GetParameters and SetParameter are unknown operations (removed in 4.4.x)', async () => {
    const q = await graphql(e.t, ANALYTICS, e.auth, '{ GetParameters { Name } }');
    assert.equal(q.status, 400);
    assert.match(q.body.errors[0].message, /Cannot query field "GetParameters" on type "Query"/);
    const m = await graphql(
      e.t,
      ANALYTICS,
      e.auth,
      'mutation { SetParameter(input: { Name: "a", Value: 1 }) { Name } }',
    );
    assert.equal(m.status, 400);
    assert.match(m.body.errors[0].message, /Cannot query field "SetParameter" on type "Mutation"/);
  });

  test('workspaces: create, get, list with filter/sort/paging, update, delete', async () => {
    const a = (
      await ok(
        `mutation($in: CreateWorkspaceRequest!) { CreateWorkspace(input: $in) { ID Name Description } }`,
        {
          in: { Name: 'Line A', Description: 'press line' },
        },
      )
    ).CreateWorkspace;
    const b = (await ok(`mutation { CreateWorkspace(input: { Name: "Line B" }) { ID } }`)).CreateWorkspace;
    assert.match(await err(`mutation { CreateWorkspace(input: { Name: "Line A" }) { ID } }`), /exists/);
    assert.match(await err(`mutation { CreateWorkspace(input: { Name: "" }) { ID } }`), /Name must have/);
    const got = (
      await ok(
        `query($id: ID!) { GetWorkspace(ID: $id) { ID Name Description Groups { ID } Processors { ID } } }`,
        { id: a.ID },
      )
    ).GetWorkspace;
    assert.deepEqual(got, {
      ID: a.ID,
      Name: 'Line A',
      Description: 'press line',
      Groups: [],
      Processors: [],
    });
    const list = (
      await ok(`query($in: GetWorkspacesRequest) { GetWorkspaces(input: $in) { Items { Name } Total } }`, {
        in: { Filter: { Name: { Contains: 'line' } }, Sort: [{ Field: 'Name', Order: 'DESC' }], Limit: 1 },
      })
    ).GetWorkspaces;
    assert.deepEqual(list, { Items: [{ Name: 'Line B' }], Total: 2 });
    const up = (
      await ok(
        `mutation($in: UpdateWorkspaceRequest!) { UpdateWorkspace(input: $in) { Name Description } }`,
        {
          in: { ID: b.ID, Name: 'Line C', Description: 'd' },
        },
      )
    ).UpdateWorkspace;
    assert.deepEqual(up, { Name: 'Line C', Description: 'd' });
    assert.equal(
      (await ok(`mutation($id: ID!) { DeleteWorkspace(input: { ID: $id }) }`, { id: b.ID })).DeleteWorkspace,
      true,
    );
    assert.match(await err(`query($id: ID!) { GetWorkspace(ID: $id) { ID } }`, { id: b.ID }), /not found/);
    // The input type names are part of the wire.
    const typed = await graphql(
      e.t,
      ANALYTICS,
      e.auth,
      `
        query L($input: GetWorkspacesRequest) {
          GetWorkspaces(input: $input) {
            Total
          }
        }
      `,
      { input: {} },
    );
    assert.equal(typed.body.data.GetWorkspaces.Total, 1);
  });

  test('groups and processor instances: every operation', async () => {
    const ws = (await ok(`mutation { CreateWorkspace(input: { Name: "ops" }) { ID } }`)).CreateWorkspace.ID;
    const other = (await ok(`mutation { CreateWorkspace(input: { Name: "ops2" }) { ID } }`)).CreateWorkspace
      .ID;
    const mk = async (name: string, params: Record<string, unknown>, kind = 'window') =>
      (
        await ok(CREATE_INSTANCE, {
          in: { WorkspaceID: ws, Name: name, Kind: kind, Parameters: params, Position: { X: 1, Y: 2 } },
        })
      ).CreateProcessorInstance;
    const p1 = await mk('p1', { inputs: [{ subject: 'test.ops.in' }], statistic: 'sum', windowCount: 2 });
    assert.equal(p1.Parameters.windowType, 'tumbling');
    assert.deepEqual(p1.Parameters.inputs, [{ subject: 'test.ops.in', path: 'value', name: 'in0' }]);
    const p2 = await mk('p2', { inputs: [{ processor: p1.ID }], band: 1 }, 'deadband');
    // Catalogue checks: unknown kind, unknown parameter, missing parameter, bad input, cycles.
    assert.match(
      await err(CREATE_INSTANCE, { in: { WorkspaceID: ws, Name: 'x', Kind: 'nope', Parameters: {} } }),
      /unknown processor kind/,
    );
    assert.match(
      await err(CREATE_INSTANCE, {
        in: {
          WorkspaceID: ws,
          Name: 'x',
          Kind: 'rate',
          Parameters: { inputs: [{ subject: 'a' }], bogus: 1 },
        },
      }),
      /Parameters.bogus: not a parameter/,
    );
    assert.match(
      await err(CREATE_INSTANCE, {
        in: { WorkspaceID: ws, Name: 'x', Kind: 'threshold', Parameters: { inputs: [{ subject: 'a' }] } },
      }),
      /Parameters.limit is required/,
    );
    assert.match(
      await err(CREATE_INSTANCE, {
        in: {
          WorkspaceID: ws,
          Name: 'x',
          Kind: 'expression',
          Parameters: { inputs: [{ subject: 'a' }], expression: '1 +' },
        },
      }),
      /Parameters.expression/,
    );
    assert.match(
      await err(
        `mutation($in: UpdateProcessorInstanceRequest!) { UpdateProcessorInstance(input: $in) { ID } }`,
        {
          in: { ID: p1.ID, Parameters: { inputs: [{ processor: p2.ID }], statistic: 'sum', windowCount: 2 } },
        },
      ),
      /cycle/,
    );
    const kinds = (await ok(`{ GetProcessorKinds { Kind Parameters { Name Type Required } } }`))
      .GetProcessorKinds;
    assert.deepEqual(
      kinds.map((k: any) => k.Kind),
      [
        'window',
        'rate',
        'integrator',
        'debounce',
        'deadband',
        'threshold',
        'range',
        'expression',
        'join',
        'downsample',
        'state-counter',
        'script',
        'onnx',
      ],
    );
    // Groups.
    const g = (
      await ok(
        `mutation($in: CreateGroupRequest!) { CreateGroup(input: $in) { ID Name ProcessorIDs WorkspaceID } }`,
        {
          in: { WorkspaceID: ws, Name: 'g1', ProcessorIDs: [p1.ID] },
        },
      )
    ).CreateGroup;
    assert.deepEqual(g.ProcessorIDs, [p1.ID]);
    assert.deepEqual(
      (
        await ok(
          `mutation($in: AddProcessorsToGroupRequest!) { AddProcessorsToGroup(input: $in) { ProcessorIDs } }`,
          { in: { GroupID: g.ID, ProcessorIDs: [p2.ID] } },
        )
      ).AddProcessorsToGroup.ProcessorIDs.sort(),
      [p1.ID, p2.ID].sort(),
    );
    assert.deepEqual(
      (
        await ok(
          `mutation($in: RemoveProcessorsFromGroupRequest!) { RemoveProcessorsFromGroup(input: $in) { ProcessorIDs } }`,
          { in: { GroupID: g.ID, ProcessorIDs: [p2.ID] } },
        )
      ).RemoveProcessorsFromGroup.ProcessorIDs,
      [p1.ID],
    );
    assert.equal(
      (
        await ok(`mutation($in: UpdateGroupRequest!) { UpdateGroup(input: $in) { Name } }`, {
          in: { ID: g.ID, Name: 'g-one' },
        })
      ).UpdateGroup.Name,
      'g-one',
    );
    assert.equal(
      (await ok(`query($id: ID!) { GetGroup(ID: $id) { Name ProcessorIDs } }`, { id: g.ID })).GetGroup.Name,
      'g-one',
    );
    const groups = (
      await ok(
        `query($in: GetWorkspaceGroupsRequest!) { GetWorkspaceGroups(input: $in) { Items { ID } Total } }`,
        { in: { WorkspaceID: ws } },
      )
    ).GetWorkspaceGroups;
    assert.equal(groups.Total, 1);
    const procs = (
      await ok(
        `query($in: GetWorkspaceProcessorsRequest!) { GetWorkspaceProcessors(input: $in) { Items { Name Kind } Total } }`,
        {
          in: { WorkspaceID: ws, Filter: { Kind: { Eq: 'deadband' } } },
        },
      )
    ).GetWorkspaceProcessors;
    assert.deepEqual(procs, { Items: [{ Name: 'p2', Kind: 'deadband' }], Total: 1 });
    const inGroup = (
      await ok(
        `query($in: GetWorkspaceProcessorsRequest!) { GetWorkspaceProcessors(input: $in) { Total } }`,
        { in: { WorkspaceID: ws, GroupID: g.ID } },
      )
    ).GetWorkspaceProcessors;
    assert.equal(inGroup.Total, 1);
    // Positions, rename, copy, reconnect.
    const posMap = (
      await ok(
        `mutation($in: SetProcessorInstancesPositionMapRequest!) { SetProcessorInstancesPositionMap(input: $in) { ID X Y } }`,
        {
          in: {
            Positions: [
              { ID: p1.ID, X: 10, Y: 20 },
              { ID: p2.ID, X: 30, Y: 40 },
            ],
          },
        },
      )
    ).SetProcessorInstancesPositionMap;
    assert.equal(posMap.length, 2);
    const positions = (
      await ok(`query($ws: ID!) { GetWorkspacePositions(WorkspaceID: $ws) { ID X Y } }`, { ws })
    ).GetWorkspacePositions;
    assert.deepEqual(
      positions.find((p: any) => p.ID === p2.ID),
      { ID: p2.ID, X: 30, Y: 40 },
    );
    const renamed = (
      await ok(
        `mutation($in: RenameProcessorInstanceRequest!) { RenameProcessorInstance(input: $in) { Name State } }`,
        { in: { ID: p2.ID, Name: 'band' } },
      )
    ).RenameProcessorInstance;
    assert.deepEqual(renamed, { Name: 'band', State: 'Running' });
    const copies = (
      await ok(
        `mutation($in: CopyProcessorInstancesRequest!) { CopyProcessorInstances(input: $in) { ID Name WorkspaceID Parameters Position { X Y } } }`,
        {
          in: { IDs: [p1.ID, p2.ID], WorkspaceID: other, Offset: { X: 5, Y: 5 } },
        },
      )
    ).CopyProcessorInstances;
    assert.equal(copies.length, 2);
    assert.equal(copies[0].WorkspaceID, other);
    assert.equal(copies[1].Parameters.inputs[0].processor, copies[0].ID, 'the copy reads the copy');
    assert.deepEqual(copies[0].Position, { X: 15, Y: 25 });
    const p3 = await mk('p3', { inputs: [{ subject: 'test.ops.other' }], statistic: 'mean', windowCount: 1 });
    const rec = (
      await ok(
        `mutation($in: ReconnectProcessorInstancesRequest!) { ReconnectProcessorInstances(input: $in) { ID Parameters } }`,
        {
          in: { IDs: [p2.ID], FromProcessorID: p1.ID, ToProcessorID: p3.ID },
        },
      )
    ).ReconnectProcessorInstances;
    assert.equal(rec[0].Parameters.inputs[0].processor, p3.ID);
    // Update with Parameters, then delete rules.
    const upd = (
      await ok(
        `mutation($in: UpdateProcessorInstanceRequest!) { UpdateProcessorInstance(input: $in) { Parameters Enabled State } }`,
        {
          in: {
            ID: p1.ID,
            Parameters: { inputs: [{ subject: 'test.ops.in' }], statistic: 'max', windowCount: 3 },
            Enabled: false,
          },
        },
      )
    ).UpdateProcessorInstance;
    assert.equal(upd.Parameters.statistic, 'max');
    assert.equal(upd.State, 'Stopped');
    assert.match(
      await err(`mutation($id: ID!) { DeleteProcessorInstance(input: { ID: $id }) }`, { id: p3.ID }),
      /feeds "band"/,
    );
    assert.equal(
      (await ok(`mutation($id: ID!) { DeleteProcessorInstance(input: { ID: $id }) }`, { id: p2.ID }))
        .DeleteProcessorInstance,
      true,
    );
    assert.equal(
      (
        await ok(`mutation($ws: ID!) { DeleteAllProcessorInstances(input: { WorkspaceID: $ws }) }`, {
          ws: other,
        })
      ).DeleteAllProcessorInstances,
      2,
    );
    // Group deletion, workspace content deletion, everything.
    const g2 = (
      await ok(`mutation($ws: ID!) { CreateGroup(input: { WorkspaceID: $ws, Name: "g2" }) { ID } }`, { ws })
    ).CreateGroup.ID;
    assert.equal(
      (await ok(`mutation($id: ID!) { DeleteGroup(input: { ID: $id }) }`, { id: g2 })).DeleteGroup,
      true,
    );
    assert.deepEqual(
      (
        await ok(
          `mutation($ws: ID!) { DeleteWorkspaceGroupsAndProcessorInstances(input: { WorkspaceID: $ws }) { Groups ProcessorInstances } }`,
          { ws },
        )
      ).DeleteWorkspaceGroupsAndProcessorInstances,
      { Groups: 1, ProcessorInstances: 2 },
    );
    await mk('again', { inputs: [{ subject: 'x.y' }], statistic: 'count', windowCount: 2 });
    await ok(`mutation($ws: ID!) { CreateGroup(input: { WorkspaceID: $ws, Name: "g3" }) { ID } }`, { ws });
    const all = (await ok(`mutation { DeleteAllGroupsAndProcessorInstances { Groups ProcessorInstances } }`))
      .DeleteAllGroupsAndProcessorInstances;
    assert.ok(all.Groups >= 1 && all.ProcessorInstances >= 1);
    assert.equal((await ok(`mutation { DeleteAllProcessorInstances }`)).DeleteAllProcessorInstances, 0);
  });

  test('variables and component variables; expressions see them', async () => {
    assert.deepEqual(
      (await ok(`mutation { SetVariable(input: { Name: "scale", Value: 3 }) { Name Value } }`)).SetVariable,
      { Name: 'scale', Value: 3 },
    );
    assert.deepEqual((await ok(`{ GetVariable(Name: "scale") { Value } }`)).GetVariable, { Value: 3 });
    assert.ok((await ok(`{ GetVariables { Name } }`)).GetVariables.some((v: any) => v.Name === 'scale'));
    assert.match(await err(`{ GetVariable(Name: "nope") { Value } }`), /not found/);
    const ws = (await ok(`mutation { CreateWorkspace(input: { Name: "vars" }) { ID } }`)).CreateWorkspace.ID;
    const p = (
      await ok(CREATE_INSTANCE, {
        in: {
          WorkspaceID: ws,
          Name: 'scaled',
          Kind: 'expression',
          Parameters: { inputs: [{ subject: 'test.vars.x', name: 'x' }], expression: 'x * scale + offset' },
        },
      })
    ).CreateProcessorInstance;
    await ok(
      `mutation($c: String!) { SetComponentVariable(input: { Component: $c, Name: "offset", Value: 100 }) { Component Name Value } }`,
      { c: p.ID },
    );
    assert.deepEqual(
      (
        await ok(
          `query($c: String!) { GetComponentVariable(input: { Component: $c, Name: "offset" }) { Value } }`,
          { c: p.ID },
        )
      ).GetComponentVariable,
      { Value: 100 },
    );
    assert.equal(
      (
        await ok(`query($c: String!) { GetComponentVariables(input: { Component: $c }) { Name } }`, {
          c: p.ID,
        })
      ).GetComponentVariables.length,
      1,
    );
    const out = collect(e.nc, `analytics.publish.${p.ID}`);
    // The gateway handles a SUB before it answers the PING of a flush: the collector is subscribed.
    await e.nc.flush();
    e.nc.publish('test.vars.x', JSON.stringify({ value: 2, timestamp: Date.now() }));
    const first = await eventually(() => out.items[0], 3000, 'expression output');
    assert.equal(first.value, 106);
    assert.equal(
      (
        await ok(
          `mutation($c: String!) { DeleteComponentVariable(input: { Component: $c, Name: "offset" }) }`,
          { c: p.ID },
        )
      ).DeleteComponentVariable,
      true,
    );
    assert.match(
      await err(
        `query($c: String!) { GetComponentVariable(input: { Component: $c, Name: "offset" }) { Value } }`,
        { c: p.ID },
      ),
      /not found/,
    );
    out.stop();
  });

  test('export and import of a workspace reproduce the same outputs', async () => {
    const ws = (await ok(`mutation { CreateWorkspace(input: { Name: "exp" }) { ID } }`)).CreateWorkspace.ID;
    const g = (
      await ok(`mutation($ws: ID!) { CreateGroup(input: { WorkspaceID: $ws, Name: "grp" }) { ID } }`, { ws })
    ).CreateGroup.ID;
    const s = (
      await ok(CREATE_INSTANCE, {
        in: {
          WorkspaceID: ws,
          GroupID: g,
          Name: 'sum3',
          Kind: 'window',
          Parameters: { inputs: [{ subject: 'test.exp.in' }], statistic: 'sum', windowCount: 3 },
        },
      })
    ).CreateProcessorInstance;
    const x = (
      await ok(CREATE_INSTANCE, {
        in: {
          WorkspaceID: ws,
          Name: 'half',
          Kind: 'expression',
          Parameters: { inputs: [{ processor: s.ID, name: 's' }], expression: 's / 2' },
        },
      })
    ).CreateProcessorInstance;
    const doc = (await ok(`query($id: ID!) { ExportWorkspace(ID: $id) }`, { id: ws })).ExportWorkspace;
    assert.equal(doc.version, 1);
    assert.equal(doc.processors.length, 2);
    const imported = (
      await ok(
        `mutation($in: ImportWorkspaceRequest!) { ImportWorkspace(input: $in) { ID Name Groups { Name ProcessorIDs } Processors { ID Name Parameters } } }`,
        {
          in: { Document: doc, Name: 'exp copy' },
        },
      )
    ).ImportWorkspace;
    assert.equal(imported.Name, 'exp copy');
    assert.equal(imported.Groups[0].ProcessorIDs.length, 1);
    const half2 = imported.Processors.find((p: any) => p.Name === 'half');
    const sum2 = imported.Processors.find((p: any) => p.Name === 'sum3');
    assert.equal(half2.Parameters.inputs[0].processor, sum2.ID);
    const a = collect(e.nc, `analytics.publish.${x.ID}`);
    const b = collect(e.nc, `analytics.publish.${half2.ID}`);
    // The gateway handles a SUB before it answers the PING of a flush: the collector is subscribed.
    await e.nc.flush();
    for (let i = 1; i <= 9; i++)
      e.nc.publish('test.exp.in', JSON.stringify({ value: i * 1.5, timestamp: 1000 + i }));
    await eventually(() => a.items.length >= 3 && b.items.length >= 3, 3000, 'outputs of both');
    assert.deepEqual(
      a.items.map((m) => m.value),
      [4.5, 11.25, 18],
    );
    assert.deepEqual(
      b.items.map((m) => m.value),
      a.items.map((m) => m.value),
    );
    a.stop();
    b.stop();
    assert.match(
      await err(`mutation { ImportWorkspace(input: { Document: { version: 2 } }) { ID } }`),
      /not a workspace export/,
    );
  });

  test('GetAnalyticsLogs (deprecated) answers the /logs/query entries of component analytics; SubscribeToAnalyticsLogs streams them', async () => {
    const sub = await subscribe(e.t, e.auth, `subscription { SubscribeToAnalyticsLogs { Level Message } }`);
    const ws = (await ok(`mutation { CreateWorkspace(input: { Name: "logged" }) { ID } }`)).CreateWorkspace
      .ID;
    await eventually(
      () => sub.items.some((i) => /workspace "logged" created/.test(i.SubscribeToAnalyticsLogs.Message)),
      3000,
      'live log entry',
    );
    // The test edge logs at level error: a script that fails at start logs an error.
    const p = (
      await ok(CREATE_INSTANCE, {
        in: {
          WorkspaceID: ws,
          Name: 'broken',
          Kind: 'script',
          Parameters: { inputs: [{ subject: 'test.logs' }], script: 'throw new Error("boom-logged")' },
        },
      })
    ).CreateProcessorInstance;
    assert.equal(p.State, 'Failed');
    assert.match(p.Error, /boom-logged/);
    await eventually(
      () => sub.items.some((i) => /boom-logged/.test(i.SubscribeToAnalyticsLogs.Message)),
      3000,
      'error entry',
    );
    sub.close();
    await e.t.edge.logStore.flush();
    const r = (
      await ok(
        `{ GetAnalyticsLogs(input: { Search: "boom-logged", Limit: 10 }) { Entries { Timestamp Level Message Fields } Count Cursor } }`,
      )
    ).GetAnalyticsLogs;
    assert.equal(r.Count, 1);
    assert.equal(r.Entries[0].Level, 'error');
    assert.equal(r.Entries[0].Fields.instanceId, p.ID);
    assert.equal(r.Cursor, r.Entries[0].Timestamp);
    const q = await e.t.call(`/logs/query?component=analytics&search=boom-logged`, {
      headers: { authorization: e.auth },
    });
    assert.equal(q.status, 200);
    assert.equal(q.body.entries.length, 1);
    assert.equal(q.body.entries[0].message, r.Entries[0].Message);
    assert.equal(q.body.entries[0].component, 'analytics');
    const schema = await graphql(
      e.t,
      ANALYTICS,
      e.auth,
      `
        {
          __type(name: "Query") {
            fields(includeDeprecated: true) {
              name
              isDeprecated
            }
          }
        }
      `,
    );
    assert.ok(
      schema.body.data.__type.fields.some((f: any) => f.name === 'GetAnalyticsLogs' && f.isDeprecated),
    );
  });

  test('SubscribeServerMetrics streams samples', async () => {
    const sub = await subscribe(
      e.t,
      e.auth,
      `subscription { SubscribeServerMetrics(input: { IntervalMs: 500 }) { Timestamp CpuPercent MemoryRssBytes Processors Running MessagesIn } }`,
    );
    await eventually(() => sub.items.length >= 2, 4000, 'two metric samples');
    sub.close();
    const m = sub.items[1].SubscribeServerMetrics;
    assert.ok(m.MemoryRssBytes > 1e6);
    assert.ok(m.CpuPercent >= 0);
    assert.ok(m.Processors >= 0);
    const bad = await subscribe(
      e.t,
      e.auth,
      `subscription { SubscribeServerMetrics(input: { IntervalMs: 1 }) { Timestamp } }`,
    );
    await eventually(() => bad.errors.length > 0, 3000, 'an error');
    bad.close();
    assert.match(bad.errors[0].message, /IntervalMs/);
  });
});
