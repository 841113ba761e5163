/**
 * The analytics section of configuration templates: exported with the workspaces and variables,
 * applied (mode `use`) onto an edge, reproducing the same processors.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bootstrapAdmin, startTestEdge, type TestEdge } from '../helpers/edge.js';
import { aok, CREATE_INSTANCE } from '../helpers/analytics.js';

let t: TestEdge;
let auth: string;
const call = (path: string, options: { method?: string; json?: unknown } = {}) =>
  t.call(path, { ...options, headers: { authorization: auth } });

before(async () => {
  t = await startTestEdge({ logLevel: 'error' });
  auth = `Bearer ${await bootstrapAdmin(t)}`;
});
after(() => t.stop());

describe('analytics configuration section', () => {
  test('export, then apply with mode use: workspaces and variables as in the template', async () => {
    const ws = (await aok(t, auth, `mutation { CreateWorkspace(input: { Name: "cfg" }) { ID } }`))
      .CreateWorkspace.ID;
    const a = (
      await aok(t, auth, CREATE_INSTANCE, {
        in: {
          WorkspaceID: ws,
          Name: 'avg',
          Kind: 'window',
          Parameters: { inputs: [{ subject: 'x.y' }], statistic: 'mean', windowCount: 10 },
        },
      })
    ).CreateProcessorInstance;
    await aok(t, auth, CREATE_INSTANCE, {
      in: {
        WorkspaceID: ws,
        Name: 'high',
        Kind: 'threshold',
        Parameters: { inputs: [{ processor: a.ID }], limit: 3 },
      },
    });
    await aok(t, auth, `mutation($v: JSON) { SetVariable(input: { Name: "k", Value: $v }) { Name } }`, {
      v: { a: 1 },
    });
    const saved = (await call('/config/templates', { json: { name: 'with-analytics' } })).body;
    assert.ok(saved.sections.includes('analytics'), JSON.stringify(saved.sections));
    const doc = (await call(`/config/templates/${saved.id}/download`, { json: {} })).body;
    const section = doc.sections.analytics;
    assert.equal(section.workspaces.length, 1);
    assert.equal(section.workspaces[0].processors.length, 2);
    assert.deepEqual(section.variables, { k: { a: 1 } });
    // Wipe analytics, then apply the saved template's analytics section only.
    await aok(t, auth, `mutation($id: ID!) { DeleteWorkspace(input: { ID: $id }) }`, { id: ws });
    await aok(t, auth, `mutation { CreateWorkspace(input: { Name: "extra" }) { ID } }`);
    const applied = await call(`/config/templates/${saved.id}/apply`, { json: { mode: 'use' } });
    assert.equal(applied.status, 200, applied.text);
    const list = (
      await aok(t, auth, `{ GetWorkspaces { Items { Name Processors { Name Kind Parameters } } } }`)
    ).GetWorkspaces.Items;
    assert.deepEqual(
      list.map((w: any) => w.Name),
      ['cfg'],
    );
    const procs = list[0].Processors;
    const avg = procs.find((p: any) => p.Name === 'avg');
    const high = procs.find((p: any) => p.Name === 'high');
    assert.equal(high.Parameters.inputs[0].processor !== a.ID, true);
    assert.equal(typeof high.Parameters.inputs[0].processor, 'string');
    assert.equal(avg.Kind, 'window');
    // A template whose analytics section is invalid is refused before anything is applied.
    const bad = JSON.parse(JSON.stringify(doc));
    bad.sections.analytics.workspaces[0].processors[0].kind = 'nope';
    const up = await call('/config/session', { json: {} });
    const id = up.body.id;
    const { request } = await import('undici');
    const { insecureAgent } = await import('../helpers/edge.js');
    const r = await request(`${t.url}/config/session/${id}?offset=0`, {
      method: 'PATCH',
      headers: { authorization: auth, 'content-type': 'application/octet-stream' },
      body: JSON.stringify(bad),
      dispatcher: insecureAgent,
    });
    await r.body.text();
    const refused = await call(`/config/template/${id}`, { method: 'PUT', json: {} });
    assert.ok(refused.status >= 400, refused.text);
    assert.match(refused.text, /unknown processor kind/);
  });
});
