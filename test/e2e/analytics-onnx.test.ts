/**
 * The `onnx` processor on live data: a dense-layer model made by the test (protobufjs and the
 * ONNX schema, no download) uploaded to the AI suite and run by onnxruntime-node on a window of a
 * Generator tag's values; every output is checked against the same arithmetic computed here from
 * the raw values seen on the bus. Models that fail to load or to run fail their processor only.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startAcqEdge, type AcqEdge } from '../edge/acquisition/support.js';
import { aok, collect, CREATE_INSTANCE } from '../helpers/analytics.js';
import { uploadFile } from '../helpers/ai-suite.js';
import { denseModel } from '../helpers/onnx-model.js';
import { eventually } from '../helpers/util.js';
import { graphql } from '../helpers/edge.js';

let e: AcqEdge;
let ws: string;

before(async () => {
  e = await startAcqEdge();
  ws = (await aok(e.t, e.auth, `mutation { CreateWorkspace(input: { Name: "models" }) { ID } }`))
    .CreateWorkspace.ID;
});
after(() => e.stop());

const create = async (input: Record<string, unknown>) =>
  (await aok(e.t, e.auth, CREATE_INSTANCE, { in: { WorkspaceID: ws, ...input } })).CreateProcessorInstance;
const state = async (id: string) =>
  (await aok(e.t, e.auth, `query($id: ID!) { GetProcessorInstance(ID: $id) { State Error } }`, { id }))
    .GetProcessorInstance;

describe('analytics: onnx processors', () => {
  test('a dense model on a window of 4 Generator values: each output is x·W + b of that window', async () => {
    const model = denseModel(4, 2, 11);
    await uploadFile(e.t, e.auth, 'model', 'dense.onnx', model.bytes);
    const dev = await e.createDevice('mgen', 'Generator', { seed: '3' });
    const raw = collect(e.nc, 'devicehub.raw.mgen.noise');
    await e.createTags(dev, [
      {
        Name: 'N',
        TagName: 'noise',
        ValueType: 'float64',
        IntervalMs: 100,
        Properties: { address: '0', amplitude: '10' },
      },
    ]);
    await eventually(() => raw.items.length > 0, 15_000, 'raw values');
    const p = await create({
      Name: 'dense',
      Kind: 'onnx',
      Parameters: { inputs: [{ subject: 'devicehub.raw.mgen.noise' }], model: 'dense.onnx', window: 4 },
    });
    assert.equal(p.State, 'Running', JSON.stringify(p));
    const out = collect(e.nc, `analytics.publish.${p.ID}`);
    await eventually(() => out.items.length >= 10, 20_000, 'ten outputs');
    out.stop();
    raw.stop();
    let checked = 0;
    for (const o of out.items) {
      const at = raw.items.findIndex((r) => r.timestamp === o.timestamp);
      if (at < 3) continue;
      const window = raw.items.slice(at - 3, at + 1).map((r) => r.value as number);
      const want = model.apply(window);
      assert.equal(o.value.length, 2);
      for (let j = 0; j < 2; j++)
        assert.ok(
          Math.abs(o.value[j] - want[j]!) <= 1e-4 * Math.max(1, Math.abs(want[j]!)),
          `${o.value} != ${want}`,
        );
      assert.equal(o.metadata.model, 'dense.onnx');
      assert.equal(o.metadata.output, 'y');
      assert.deepEqual(o.metadata.dims, [1, 2]);
      checked++;
    }
    assert.ok(checked >= 8, `only ${checked} outputs matched a raw window`);
  });

  test('a model that fails to load, one that fails to run and one missing fail their processor; the edge runs on', async () => {
    await uploadFile(e.t, e.auth, 'model', 'broken.onnx', Buffer.from('this is not an ONNX model'));
    await uploadFile(e.t, e.auth, 'model', 'three.onnx', denseModel(3, 1).bytes);
    const inputs = [{ subject: 'devicehub.raw.mgen.noise' }];
    const broken = await create({
      Name: 'broken',
      Kind: 'onnx',
      Parameters: { inputs, model: 'broken.onnx' },
    });
    assert.equal(broken.State, 'Failed');
    assert.match(broken.Error, /model "broken.onnx" failed to load/);
    const missing = await create({
      Name: 'missing',
      Kind: 'onnx',
      Parameters: { inputs, model: 'none.onnx' },
    });
    assert.equal(missing.State, 'Failed');
    assert.match(missing.Error, /not in the AI suite/);
    // Loads (its input is [1, 3]) but a window of 4 values is the wrong shape: fails on its first run.
    const wrong = await create({
      Name: 'wrong shape',
      Kind: 'onnx',
      Parameters: { inputs, model: 'three.onnx', window: 4 },
    });
    assert.equal(wrong.State, 'Running');
    const failed = await eventually(
      async () => {
        const s = await state(wrong.ID);
        return s.State === 'Failed' ? s : undefined;
      },
      15_000,
      'the run failure',
    );
    assert.match(failed.Error, /model "three.onnx" failed to run/);
    // The edge and the good processor run on.
    const dense = (
      await aok(
        e.t,
        e.auth,
        `query($w: ID!) { GetWorkspaceProcessors(input: { WorkspaceID: $w }) { Items { ID Name State } } }`,
        { w: ws },
      )
    ).GetWorkspaceProcessors.Items.find((x: { Name: string }) => x.Name === 'dense');
    assert.equal(dense.State, 'Running');
    const more = collect(e.nc, `analytics.publish.${dense.ID}`);
    await eventually(() => more.items.length >= 2, 10_000, 'outputs after the failures');
    more.stop();
  });

  test('bad parameters are refused with a clear message', async () => {
    const inputs = [{ subject: 'devicehub.raw.mgen.noise' }];
    const kinds = (await aok(e.t, e.auth, `{ GetProcessorKinds { Kind Parameters { Name } } }`))
      .GetProcessorKinds;
    const onnx = kinds.find((k: { Kind: string }) => k.Kind === 'onnx');
    assert.deepEqual(
      onnx.Parameters.map((x: { Name: string }) => x.Name),
      ['model', 'window', 'stride', 'inputName', 'inputShape', 'output', 'threads'],
    );
    const bad = await graphql(e.t, '/analytics/v3', e.auth, CREATE_INSTANCE, {
      in: { WorkspaceID: ws, Name: 'bad', Kind: 'onnx', Parameters: { inputs, model: '../x', window: 4 } },
    });
    assert.match(bad.body.errors[0].message, /Parameters.model/);
    const shape = await graphql(e.t, '/analytics/v3', e.auth, CREATE_INSTANCE, {
      in: {
        WorkspaceID: ws,
        Name: 'bad',
        Kind: 'onnx',
        Parameters: { inputs, model: 'dense.onnx', window: 4, inputShape: '1,3' },
      },
    });
    assert.match(shape.body.errors[0].message, /inputShape "1,3" must hold window × inputs = 4 values/);
  });
});
