/**
 * The analytics section of configuration templates: exported with the workspaces and variables,
 * applied (mode `use`) onto an edge, reproducing the same processors. The section writes in the
 * apply's one transaction: a failure in another section (or in analytics itself) with failFast
 * leaves analytics (and the other sections) as they were, in the database and live; with failFast
 * false the failing workspace is reported and undone, the rest applies. After the commit the new
 * processors publish on `analytics.publish.<id>` (read by a plain NATS client), and the processors
 * of workspaces the apply did not change keep running with their window state.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type NatsConnection } from 'nats';
import { bootstrapAdmin, graphql, startTestEdge, type TestEdge } from '../helpers/edge.js';
import { aok, collect, CREATE_INSTANCE } from '../helpers/analytics.js';
import { applyTemplate, currentSections as sectionsNow, templateOf } from '../helpers/config.js';
import { eventually } from '../helpers/util.js';

let t: TestEdge;
let auth: string;
let nc: NatsConnection;
const call = (path: string, options: { method?: string; json?: unknown } = {}) =>
  t.call(path, { ...options, headers: { authorization: auth } });

before(async () => {
  t = await startTestEdge({ logLevel: 'error' });
  auth = `Bearer ${await bootstrapAdmin(t)}`;
  nc = await connect({ servers: t.edge.datahub.gateway!.url });
});
after(async () => {
  await nc.close();
  await t.stop();
});

const upload = (doc: unknown, body: Record<string, unknown> = {}) =>
  applyTemplate(t, { authorization: auth }, doc, body);
const template = templateOf;
const currentSections = () => sectionsNow(t, { authorization: auth });

const workspaces = async (): Promise<any[]> =>
  (await aok(t, auth, `{ GetWorkspaces { Items { ID Name Processors { ID Name State } } } }`)).GetWorkspaces
    .Items;

/** The devices of the devicehub, by name. */
async function deviceNames(): Promise<string[]> {
  const r = await graphql(
    t,
    '/devicehub/v2',
    auth,
    `
      {
        ListDevices {
          Items {
            Name
          }
        }
      }
    `,
  );
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.errors, undefined, JSON.stringify(r.body.errors));
  return (r.body.data.ListDevices.Items as Array<{ Name: string }>).map((d) => d.Name).sort();
}

/** A workspace document with one sliding sum over the last 100 values of `subject`. */
const sumWorkspace = (name: string, subject: string, processorName = 'sum') => ({
  version: 1,
  workspace: { name, description: `${name} from a template` },
  groups: [],
  processors: [
    {
      key: 'p1',
      name: processorName,
      kind: 'window',
      group: null,
      enabled: true,
      position: { x: 0, y: 0 },
      parameters: {
        inputs: [{ subject }],
        statistic: 'sum',
        windowType: 'sliding',
        windowCount: 100,
      },
    },
  ],
});

/** Publishes `value` on `subject` and answers the next output of processor `id`. */
async function feed(id: string, subject: string, value: number): Promise<any> {
  const out = collect(nc, `analytics.publish.${id}`);
  try {
    await nc.flush();
    nc.publish(subject, JSON.stringify({ value, timestamp: Date.now() }));
    return await eventually(() => out.items[0], 5000, `an output of ${id}`);
  } finally {
    out.stop();
  }
}

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

  test('a valid section applies; new processors publish after the commit, untouched ones keep their window', async () => {
    const kept = (await aok(t, auth, `mutation { CreateWorkspace(input: { Name: "kept" }) { ID } }`))
      .CreateWorkspace.ID;
    const k = (
      await aok(t, auth, CREATE_INSTANCE, {
        in: {
          WorkspaceID: kept,
          Name: 'sum',
          Kind: 'window',
          Parameters: {
            inputs: [{ subject: 'test.cfg.kept' }],
            statistic: 'sum',
            windowType: 'sliding',
            windowCount: 100,
          },
        },
      })
    ).CreateProcessorInstance;
    assert.equal((await feed(k.ID, 'test.cfg.kept', 1)).value, 1);
    assert.equal((await feed(k.ID, 'test.cfg.kept', 2)).value, 3);
    const current = (await currentSections()).analytics;
    // legacy: "kept" as it is (untouched), a new workspace and a variable.
    const r = await upload(
      template({
        analytics: {
          workspaces: [...current.workspaces, sumWorkspace('fresh', 'test.cfg.fresh')],
          variables: { ...current.variables, limit: 7 },
        },
      }),
      { failFast: true },
    );
    assert.equal(r.status, 200, r.text);
    const list = await workspaces();
    const fresh = list.find((w) => w.Name === 'fresh');
    assert.ok(fresh, JSON.stringify(list));
    assert.equal(fresh.Processors.length, 1);
    assert.equal(fresh.Processors[0].State, 'Running');
    const out = await feed(fresh.Processors[0].ID, 'test.cfg.fresh', 5);
    assert.equal(out.value, 5);
    assert.equal(out.tagName, 'sum');
    // The processor of "kept" was not restarted: its window still holds 1 and 2.
    const keptNow = list.find((w) => w.Name === 'kept');
    assert.deepEqual(
      keptNow.Processors.map((p: any) => p.ID),
      [k.ID],
    );
    assert.equal((await feed(k.ID, 'test.cfg.kept', 4)).value, 7);
    const vars = (await aok(t, auth, `{ GetVariables { Name Value } }`)).GetVariables;
    assert.equal(vars.find((v: any) => v.Name === 'limit')?.Value, 7);
  });

  test('an apply failing in another section (failFast) leaves analytics unchanged, in the database and live', async () => {
    const before = await currentSections();
    const names = (await workspaces()).map((w) => w.Name);
    // Refused at validation: a devicehub tag of a ValueType that does not exist.
    const refused = await upload(
      template({
        analytics: { workspaces: [sumWorkspace('never-1', 'test.cfg.never', 'never-sum')], variables: {} },
        devicehub: {
          devices: [
            {
              Name: 'cfg-bad',
              DriverID: 'Generator',
              Tags: [{ TagName: 't', Name: 'S', ValueType: 'no-such-type', Properties: { address: '0' } }],
            },
          ],
        },
      }),
      { failFast: true },
    );
    assert.equal(refused.status, 400, refused.text);
    // Failing in the apply, after analytics wrote its part in the transaction: a datahub access
    // key without a secret (analytics comes first in the document, so it is applied first).
    const failed = await upload(
      template({
        analytics: {
          workspaces: [sumWorkspace('never-2', 'test.cfg.never', 'never-sum')],
          variables: { never: true },
        },
        datahub: {
          accessKeys: [{ id: 'no-secret-key', name: 'orphan', publish: null, subscribe: null }],
        },
      }),
      { failFast: true },
    );
    assert.equal(failed.status, 409, failed.text);
    assert.match(failed.body.message, /nothing was applied/);
    assert.deepEqual(
      (await workspaces()).map((w) => w.Name),
      names,
    );
    assert.deepEqual(await currentSections(), before);
    // Nothing runs live for the workspaces that were rolled back.
    const outputs = collect(nc, 'analytics.publish.>');
    await nc.flush();
    nc.publish('test.cfg.never', JSON.stringify({ value: 1, timestamp: Date.now() }));
    // Time is the test: nothing is published.
    await new Promise((r) => setTimeout(r, 500));
    outputs.stop();
    assert.deepEqual(
      outputs.items.filter((m) => m.tagName === 'never-sum'),
      [],
    );
  });

  test('an analytics item failing in the apply: failFast rolls the whole template back; failFast false skips it', async () => {
    const names = (await workspaces()).map((w) => w.Name);
    const long = 'x'.repeat(201); // longer than a name may be (checked by the apply, as by the API)
    const doc = template({
      devicehub: { devices: [{ Name: 'cfg-dev', DriverID: 'Generator', Tags: [] }] },
      analytics: {
        workspaces: [
          sumWorkspace('good', 'test.cfg.good'),
          {
            ...sumWorkspace('bad', 'test.cfg.bad'),
            processors: [
              sumWorkspace('bad', 'test.cfg.bad').processors[0],
              { ...sumWorkspace('bad', 'test.cfg.bad', long).processors[0], key: 'p2' },
            ],
          },
        ],
        variables: {},
      },
    });
    const all = await upload(doc, { failFast: true });
    assert.equal(all.status, 400, all.text);
    assert.match(all.body.message, /section analytics: workspaces\[1\] \(bad\)/);
    assert.match(all.body.message, /nothing was applied/);
    assert.ok(!(await deviceNames()).includes('cfg-dev'), 'the devicehub part was rolled back');
    assert.deepEqual(
      (await workspaces()).map((w) => w.Name),
      names,
    );
    const some = await upload(doc, { failFast: false });
    assert.equal(some.status, 200, some.text);
    assert.deepEqual(
      some.body.result.failed.map((f: any) => f.item),
      ['analytics: workspaces[1] (bad)'],
    );
    assert.ok((await deviceNames()).includes('cfg-dev'));
    const list = await workspaces();
    assert.deepEqual(list.map((w) => w.Name).sort(), [...names, 'good'].sort());
    // "bad" was undone to its savepoint: neither the workspace nor its first processor is left.
    const good = list.find((w) => w.Name === 'good');
    assert.equal((await feed(good.Processors[0].ID, 'test.cfg.good', 3)).value, 3);
  });
});
