/**
 * Fleet twins (DT2, contract parts 4.5 and 2.10) with two real edges enrolled into a real manager
 * (in this process, every call over HTTPS and the link): a model built in one call, a nested
 * attribute added with the DT2 fields, instances parsed from CSV line by line, and the model
 * deployed through a branch of the asset hierarchy: both edges placed under it get a
 * `/digital-twins` model whose instances publish on their own DataHub (read with a NATS client).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, StringCodec, type NatsConnection } from 'nats';
import { bootstrapAdmin, startTestEdge, type TestEdge } from '../helpers/edge.js';
import { activationCode, makeProject, startTestManager, type TestManager } from '../helpers/manager.js';
import { eventually } from '../helpers/util.js';

let m: TestManager;
const edges: TestEdge[] = [];
const deviceIds: string[] = [];
const nodes: Record<string, string> = {};
const H = '/api/v1/assets/hierarchy/acme';
let cellId: string;
let projectId: string;

async function enrol(e: TestEdge, code: string): Promise<string> {
  const c = { cookie: `jwtAccess=${await bootstrapAdmin(e)}` };
  const proposed = await e.call('/dm/cloud/url', { headers: c, json: { url: m.url } });
  assert.equal(proposed.status, 200, proposed.text);
  await e.call(`/dm/cloud/url/${proposed.body.tx}/confirm`, { method: 'PUT', headers: c });
  const a = await e.call('/dm/cloud', { headers: c, json: { code } });
  assert.equal(a.status, 200, a.text);
  return a.body.deviceId as string;
}

async function node(name: string, parent: string | null, deviceId?: string) {
  const r = await m.call(`${H}/node`, { json: { name, parentId: parent ? nodes[parent] : null, deviceId } });
  assert.equal(r.status, 201, r.text);
  nodes[name] = r.body.id;
}

before(async () => {
  m = await startTestManager({ heartbeatInterval: 300 });
  ({ projectId } = await makeProject(m, 'acme', 'plant-1'));
  for (let i = 0; i < 2; i++) {
    const e = await startTestEdge({ logLevel: 'error' });
    edges.push(e);
    deviceIds.push(await enrol(e, await activationCode(m, projectId)));
  }
  for (const id of deviceIds) {
    await eventually(
      async () => (await m.call(`/api/v1/device/${id}`)).body.online === true,
      15_000,
      'online',
    );
  }
  await node('Acme', null);
  await node('Lyon', 'Acme');
  await node('Turin', 'Acme');
  await node('Cell A', 'Lyon', deviceIds[0]);
  await node('Cell B', 'Lyon', deviceIds[1]);
});
after(async () => {
  for (const e of edges) await e.stop().catch(() => undefined);
  await m?.stop();
});

describe('DT2 models', () => {
  test('model/complete: a model with its attributes, a transformation and an instance in one call', async () => {
    const r = await m.call('/api/v1/dt2/model/complete/acme', {
      json: {
        Name: 'Cell',
        Assets: 'cell',
        PublishIntervalMs: 300,
        Parameters: [{ Key: 'Cell', Value: 'c0' }],
        StaticAttributes: [{ Key: 'Vendor', Value: 'ACME' }],
        DynamicAttributes: [
          {
            Name: 'Temp',
            Topic: 'lab/{{Cell}}/temp',
            Transformation: { Name: 'double', Expression: 'value * 2' },
          },
        ],
        Instances: [{ Name: 'cell1', Topic: 'twins.cell1' }],
      },
    });
    assert.equal(r.status, 201, r.text);
    cellId = r.body.ID;
    const temp = r.body.DynamicAttributes[0];
    assert.equal(temp.TopicExpressionConverted, 'lab.{{Cell}}.temp');
    assert.equal(temp.Transformation, 'double');
    assert.equal(temp.Type, 'topic');
    assert.deepEqual(
      r.body.Transformations.map((t: any) => t.Name),
      ['double'],
    );
    const again = await m.call('/api/v1/dt2/model/complete/acme', {
      json: { Name: 'Cell', Assets: 'cell', Colour: 1 },
    });
    assert.equal(again.status, 400, 'an unknown field');
    const badTopic = await m.call('/api/v1/dt2/model/complete/acme', {
      json: {
        Name: 'X',
        Assets: 'x',
        DynamicAttributes: [{ Name: 'A', Transformation: 'nope', Topic: 'a' }],
      },
    });
    assert.equal(badTopic.status, 400);
    assert.match(badTopic.body.message, /nope/);
  });

  test('dynamic-attribute: the nested-model fields resolved both ways; one of model or instance', async () => {
    const line = await m.call('/api/v1/dt2/model/complete/acme', { json: { Name: 'Line', Assets: 'line' } });
    assert.equal(line.status, 201, line.text);
    const instanceId = (await m.call(`/api/v1/dt2/acme/models/${cellId}`)).body.Instances[0].ID;
    const byName = await m.call('/api/v1/dt2/dynamic-attribute', {
      json: {
        ModelID: line.body.ID,
        Name: 'FirstCell',
        NestedModelName: 'Cell',
        NestedInstanceName: 'cell1',
      },
    });
    assert.equal(byName.status, 201, byName.text);
    assert.deepEqual(
      [
        byName.body.Type,
        byName.body.NestedModelID,
        byName.body.NestedInstanceID,
        byName.body.NestedInstanceName,
      ],
      ['nestedModel', cellId, instanceId, 'cell1'],
    );
    const byId = await m.call('/api/v1/dt2/dynamic-attribute', {
      json: { ModelID: line.body.ID, Name: 'Cells', NestedModelID: cellId, NestedInstanceID: null },
    });
    assert.equal(byId.status, 201, byId.text);
    assert.deepEqual([byId.body.NestedModelName, byId.body.NestedInstanceID], ['Cell', null]);
    const both = await m.call('/api/v1/dt2/dynamic-attribute', {
      json: { ModelID: line.body.ID, Name: 'Both', NestedModelID: cellId, NestedInstanceID: instanceId },
    });
    assert.equal(both.status, 400, both.text);
    const topic = await m.call('/api/v1/dt2/dynamic-attribute', {
      json: {
        ModelID: line.body.ID,
        Name: 'Speed',
        TopicExpressionConverted: 'lab.line.speed',
        Transformation: null,
      },
    });
    assert.equal(topic.status, 201, topic.text);
    assert.equal(topic.body.Topic, 'lab.line.speed');
    const list = await m.call('/api/v1/dt2/acme/models');
    assert.deepEqual(
      list.body.items.map((x: any) => x.Name),
      ['Cell', 'Line'],
    );
    const scratch = await m.call('/api/v1/dt2/model/complete/acme', {
      json: { Name: 'Scratch', Assets: 's' },
    });
    assert.equal(
      (await m.call(`/api/v1/dt2/acme/models/${scratch.body.ID}`, { method: 'DELETE' })).status,
      204,
    );
    assert.equal((await m.call(`/api/v1/dt2/acme/models/${scratch.body.ID}`)).status, 404);
    const missing = await m.call('/api/v1/dt2/dynamic-attribute', {
      json: { ModelID: 'nope', Name: 'x', Topic: 'a' },
    });
    assert.equal(missing.status, 404);
  });

  test('instances/parse-csv: a result per line; valid ones saved into the model', async () => {
    const csv = 'Name,Topic,param.Cell\ncell2,twins.cell2,c2\nbad name,,\ncell1,,c9\ncell3,twins.cell3\n';
    const r = await m.call(`/api/v1/dt2/acme/instances/parse-csv?modelId=${cellId}&save=true`, {
      body: csv,
      headers: { 'content-type': 'text/csv' },
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(
      r.body.Results.map((x: any) => [x.Line, x.Valid]),
      [
        [2, true],
        [3, false],
        [4, false],
        [5, false],
      ],
    );
    assert.match(r.body.Results[1].Error, /Name/);
    assert.match(r.body.Results[2].Error, /exists/);
    assert.match(r.body.Results[3].Error, /values/);
    assert.deepEqual(r.body.Results[0].Instance.Parameters, [{ Key: 'Cell', Value: 'c2' }]);
    assert.equal(r.body.Saved, 1);
    const model = await m.call(`/api/v1/dt2/acme/models/${cellId}`);
    assert.deepEqual(
      model.body.Instances.map((i: any) => i.Name),
      ['cell1', 'cell2'],
    );
    const unknown = await m.call('/api/v1/dt2/acme/instances/parse-csv', {
      body: 'Name,Colour\nx,red\n',
      headers: { 'content-type': 'text/csv' },
    });
    assert.equal(unknown.status, 400);
  });
});

describe('deploy through a branch', () => {
  test('both edges under the branch run the twins and publish on their DataHub', async () => {
    const none = await m.call(`/api/v1/dt2/acme/models/${cellId}/deploy`, { json: { nodeId: nodes.Turin } });
    assert.equal(none.status, 400, 'no edge under Turin');
    const r = await m.call(`/api/v1/dt2/acme/models/${cellId}/deploy`, { json: { nodeId: nodes.Lyon } });
    assert.equal(r.status, 202, r.text);
    assert.deepEqual([...r.body.DeviceIDs].sort(), [...deviceIds].sort());
    const taskId = r.body.Task.taskId as string;
    await eventually(
      async () => (await m.call(`/api/v1/async-task/${taskId}`)).body.status !== 'RUNNING',
      60_000,
      'the deploy task ends',
    );
    const task = await m.call(`/api/v1/async-task/${taskId}`);
    const subtasks = await m.call(`/api/v1/async-task/${taskId}/subtasks`);
    assert.equal(task.body.status, 'SUCCEEDED', subtasks.text);
    const sc = StringCodec();
    for (const e of edges) {
      const nc: NatsConnection = await connect({ servers: e.edge.datahub.gateway!.url });
      try {
        const got: Record<string, string[]> = { 'twins.cell1': [], 'twins.cell2': [] };
        for (const subject of Object.keys(got)) {
          nc.subscribe(subject, { callback: (_err, msg) => got[subject]!.push(sc.decode(msg.data)) });
        }
        await nc.flush();
        // An input value on the edge's DataHub reaches the twin through the model's transformation.
        const feed = setInterval(
          () => nc.publish('lab.c0.temp', sc.encode(JSON.stringify({ value: 21 }))),
          200,
        );
        try {
          await eventually(
            async () => got['twins.cell1']!.some((p) => p.includes('42')) && got['twins.cell2']!.length > 0,
            20_000,
            'both instances publish on the edge',
          );
        } finally {
          clearInterval(feed);
        }
        assert.match(
          got['twins.cell1']!.find((p) => p.includes('42'))!,
          /Vendor|ACME/,
        );
      } finally {
        await nc.close();
      }
    }
  });
});
