/**
 * The asset hierarchy of a company over HTTPS (contract part 4.5): hierarchy templates and their
 * levels, nodes (create, read with a depth, roots, tree, update, move, delete with force), fleet
 * edges placed as nodes, and the CSV import and export.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { activationCode, makeProject, startTestManager, type TestManager } from '../helpers/manager.js';

let m: TestManager;
let acme: { companyId: string; projectId: string };
let other: { companyId: string; projectId: string };
const H = '/api/v1/assets/hierarchy/acme';
before(async () => {
  m = await startTestManager();
  acme = await makeProject(m, 'acme', 'plant-1');
  other = await makeProject(m, 'other', 'plant-9');
});
after(() => m.stop());

const put = (path: string, json: unknown) => m.call(path, { method: 'PUT', json });
const del = (path: string) => m.call(path, { method: 'DELETE' });

describe('hierarchy templates and levels', () => {
  test('create, update, levels (add, move, remove, bulk), duplicate, activate, delete drafts', async () => {
    const c = await m.call(`${H}/templates`, {
      json: { name: 'ISA-95', levels: [{ name: 'enterprise' }, { name: 'site' }, { name: 'line' }] },
    });
    assert.equal(c.status, 201, c.text);
    const id = c.body.id as string;
    assert.equal(c.body.status, 'DRAFT');
    assert.deepEqual(
      c.body.levels.map((l: any) => [l.name, l.position]),
      [
        ['enterprise', 0],
        ['site', 1],
        ['line', 2],
      ],
    );
    const got = await m.call(`${H}/templates/${id}`);
    assert.deepEqual([got.status, got.body.name, got.body.levels.length], [200, 'ISA-95', 3]);
    const u = await put(`${H}/templates/${id}`, { description: 'plants' });
    assert.equal(u.status, 200, u.text);
    assert.equal(u.body.description, 'plants');

    const add = await m.call(`${H}/templates/${id}/levels`, { json: { name: 'area', position: 2 } });
    assert.equal(add.status, 201, add.text);
    assert.deepEqual(
      add.body.levels.map((l: any) => l.name),
      ['enterprise', 'site', 'area', 'line'],
    );
    const dup = await m.call(`${H}/templates/${id}/levels`, { json: { name: 'site' } });
    assert.equal(dup.status, 400, 'a level name twice');
    const line = add.body.levels[3];
    const mv = await m.call(`${H}/templates/${id}/levels/${line.id}/move`, { json: { position: 0 } });
    assert.deepEqual(
      mv.body.levels.map((l: any) => l.name),
      ['line', 'enterprise', 'site', 'area'],
    );
    const rn = await put(`${H}/templates/${id}/levels/${line.id}`, { name: 'cell' });
    assert.equal(rn.body.levels[0].name, 'cell');
    const rm = await del(`${H}/templates/${id}/levels/${line.id}`);
    assert.deepEqual(
      rm.body.levels.map((l: any) => l.name),
      ['enterprise', 'site', 'area'],
    );
    const site = rm.body.levels[1];
    const bulk = await put(`${H}/templates/${id}/levels`, {
      levels: [
        { name: 'enterprise' },
        { id: site.id, name: 'site', description: 'a plant' },
        { name: 'area' },
        { name: 'line' },
        { name: 'cell' },
      ],
    });
    assert.equal(bulk.status, 200, bulk.text);
    assert.equal(bulk.body.levels[1].id, site.id, 'a level keeps its ID through a bulk update');
    assert.equal(bulk.body.levels.length, 5);
    const unknownLevel = await put(`${H}/templates/${id}/levels`, { levels: [{ id: 'nope', name: 'x' }] });
    assert.equal(unknownLevel.status, 404);

    const badCopy = await m.call(`${H}/templates/${id}/duplicate`, { json: { nome: 'x' } });
    assert.equal(badCopy.status, 400, badCopy.text);
    assert.match(badCopy.body.message, /unknown field "nome"/);
    const copy = await m.call(`${H}/templates/${id}/duplicate`, { json: {} });
    assert.equal(copy.status, 201, copy.text);
    assert.equal(copy.body.name, 'ISA-95 (copy)');
    assert.equal(copy.body.status, 'DRAFT');
    assert.deepEqual(
      copy.body.levels.map((l: any) => l.name),
      bulk.body.levels.map((l: any) => l.name),
    );

    const act = await m.call(`${H}/templates/${id}/activate`, { method: 'POST' });
    assert.equal(act.status, 200, act.text);
    assert.equal(act.body.status, 'ACTIVE');
    assert.equal(
      (await put(`${H}/templates/${id}`, { name: 'x' })).status,
      409,
      'an active template is not changed',
    );
    assert.equal((await del(`${H}/templates/${id}`)).status, 409, 'only drafts are deleted');
    const act2 = await m.call(`${H}/templates/${copy.body.id}/activate`, { method: 'POST' });
    assert.equal(act2.body.status, 'ACTIVE');
    const list = await m.call(`${H}/templates`);
    assert.deepEqual(
      list.body.items.map((t: any) => [t.name, t.status]),
      [
        ['ISA-95', 'ARCHIVED'],
        ['ISA-95 (copy)', 'ACTIVE'],
      ],
    );
    const draft = await m.call(`${H}/templates`, { json: { name: 'scratch' } });
    assert.equal((await del(`${H}/templates/${draft.body.id}`)).status, 204);
    assert.equal((await m.call(`${H}/templates/${draft.body.id}`)).status, 404);
    assert.equal((await m.call('/api/v1/assets/hierarchy/nope/templates')).status, 404);
    const strict = await m.call(`${H}/templates`, { json: { name: 'y', colour: 'red' } });
    assert.equal(strict.status, 400);
  });
});

describe('nodes', () => {
  const ids: Record<string, string> = {};
  const node = async (name: string, parent: string | null, extra: Record<string, unknown> = {}) => {
    const r = await m.call(`${H}/node`, { json: { name, parentId: parent ? ids[parent] : null, ...extra } });
    assert.equal(r.status, 201, r.text);
    ids[name] = r.body.id;
    return r.body;
  };

  test('create, read with a depth, roots, tree', async () => {
    const e = await node('Acme', null, { key: 'acme', level: 'enterprise', attributes: { region: 'EU' } });
    assert.equal(e.depth, 1);
    assert.equal(e.key, 'acme');
    assert.deepEqual(e.attributes, { region: 'EU' });
    await node('Lyon', 'Acme', { level: 'site' });
    await node('Turin', 'Acme', { level: 'site' });
    await node('Press shop', 'Lyon', { level: 'area' });
    await node('Line 1', 'Press shop', { level: 'line' });
    await node('Paint', 'Turin', { level: 'area' });
    const bad = await m.call(`${H}/node`, { json: { name: 'x', level: 'galaxy' } });
    assert.equal(bad.status, 400, 'a level not in the active template');
    assert.match(bad.body.message, /galaxy/);
    assert.equal((await m.call(`${H}/node`, { json: { name: 'dup', key: 'acme' } })).status, 409);

    const d0 = await m.call(`${H}/node/${ids.Acme}?depth=0`);
    assert.equal(d0.body.children, undefined);
    const d1 = await m.call(`${H}/node/${ids.Acme}`);
    assert.deepEqual(
      d1.body.children.map((c: any) => c.name),
      ['Lyon', 'Turin'],
    );
    assert.deepEqual(d1.body.children[0].children, []);
    const d3 = await m.call(`${H}/node/${ids.Acme}?depth=3`);
    assert.equal(d3.body.children[0].children[0].children[0].name, 'Line 1');
    const roots = await m.call(`${H}/roots`);
    assert.deepEqual(
      roots.body.items.map((r: any) => r.name),
      ['Acme'],
    );
    const tree = await m.call(`${H}/tree`);
    assert.equal(tree.body.items[0].children[1].children[0].name, 'Paint');
    assert.equal(
      (await m.call(`/api/v1/assets/hierarchy/other/node/${ids.Acme}`)).status,
      404,
      'another company',
    );
  });

  test('update, move (with the subtree), no move under itself', async () => {
    const u = await put(`${H}/node/${ids['Press shop']}`, {
      name: 'Press',
      description: 'presses',
      attributes: { a: '1' },
    });
    assert.equal(u.status, 200, u.text);
    assert.equal(u.body.name, 'Press');
    const mv = await m.call(`${H}/node/${ids['Press shop']}/move`, { json: { parentId: ids.Turin } });
    assert.equal(mv.status, 200, mv.text);
    assert.equal(mv.body.parentId, ids.Turin);
    const line = await m.call(`${H}/node/${ids['Line 1']}?depth=0`);
    assert.equal(line.body.depth, 4);
    const turin = await m.call(`${H}/node/${ids.Turin}?depth=2`);
    assert.deepEqual(
      turin.body.children.map((c: any) => c.name),
      ['Paint', 'Press'],
    );
    assert.equal(turin.body.children[1].children[0].name, 'Line 1');
    const loop = await m.call(`${H}/node/${ids.Turin}/move`, { json: { parentId: ids['Line 1'] } });
    assert.equal(loop.status, 400);
    const top = await m.call(`${H}/node/${ids.Paint}/move`, { json: { parentId: null } });
    assert.equal(top.body.depth, 1);
    assert.deepEqual(
      (await m.call(`${H}/roots`)).body.items.map((r: any) => r.name),
      ['Acme', 'Paint'],
    );
    await m.call(`${H}/node/${ids.Paint}/move`, { json: { parentId: ids.Turin } });
  });

  test('an edge of the fleet placed as a node, once; not an edge of another company', async () => {
    const here = await enrol(acme.projectId);
    const there = await enrol(other.projectId);
    const r = await m.call(`${H}/node`, {
      json: { name: 'edge-1', parentId: ids['Line 1'], deviceId: here },
    });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.deviceId, here);
    const twice = await m.call(`${H}/node`, {
      json: { name: 'edge-1b', parentId: ids.Acme, deviceId: here },
    });
    assert.equal(twice.status, 409, twice.text);
    const foreign = await m.call(`${H}/node`, {
      json: { name: 'edge-2', parentId: ids.Acme, deviceId: there },
    });
    assert.equal(foreign.status, 400, foreign.text);
    assert.equal((await m.call(`${H}/node`, { json: { name: 'x', deviceId: 'a'.repeat(25) } })).status, 404);
    const unplace = await put(`${H}/node/${r.body.id}`, { deviceId: null });
    assert.equal(unplace.body.deviceId, null);
    const again = await put(`${H}/node/${r.body.id}`, { deviceId: here });
    assert.equal(again.body.deviceId, here);
  });

  test('delete: a node with children needs force, then its subtree goes', async () => {
    const r = await del(`${H}/node/${ids.Turin}`);
    assert.equal(r.status, 409);
    assert.match(r.body.message, /force=true/);
    const f = await del(`${H}/node/${ids.Turin}?force=true`);
    assert.equal(f.status, 200, f.text);
    assert.equal(f.body.deleted, 5, 'Turin, Paint, Press, Line 1 and the edge node');
    assert.equal((await m.call(`${H}/node/${ids['Line 1']}`)).status, 404);
    const leaf = await del(`${H}/node/${ids.Lyon}`);
    assert.equal(leaf.body.deleted, 1);
  });
});

/** A real enrolment (`POST /dm/activate` with a code of the project): the new device's ID. */
async function enrol(projectId: string): Promise<string> {
  const code = await activationCode(m, projectId);
  const r = await m.call('/dm/activate', {
    token: null,
    json: { code, edgeCredential: 'mwt_test', version: '4.4.0' },
  });
  assert.equal(r.status, 200, r.text);
  return r.body.deviceId as string;
}

describe('CSV import and export', () => {
  test('a round trip into another company loses nothing; bad lines are named', async () => {
    const csv =
      'key,parentKey,name,level,description,deviceId,attributes\n' +
      'e1,,"Big, Corp",enterprise,"says ""hi""",,"{""k"":""v""}"\n' +
      's1,e1,Site one,site,"two\nlines",,{}\n' +
      'a1,s1,Area,area,,,{}\n';
    const imp = await m.call(`/api/v1/assets/hierarchy/other/import`, {
      body: csv,
      headers: { 'content-type': 'text/csv' },
    });
    assert.equal(imp.status, 200, imp.text);
    assert.equal(imp.body.imported, 3);
    const out = await m.call(`/api/v1/assets/hierarchy/other/export`);
    assert.equal(out.status, 200);
    assert.match(out.headers['content-type'] as string, /text\/csv/);
    await m.call('/api/v1/company', { json: { companyName: 'third' } });
    const again = await m.call(`/api/v1/assets/hierarchy/third/import`, {
      body: out.text,
      headers: { 'content-type': 'text/csv' },
    });
    assert.equal(again.status, 200, again.text);
    const out2 = await m.call(`/api/v1/assets/hierarchy/third/export`);
    assert.equal(out2.text, out.text);
    const tree = await m.call('/api/v1/assets/hierarchy/third/tree');
    assert.equal(tree.body.items[0].name, 'Big, Corp');
    assert.equal(tree.body.items[0].description, 'says "hi"');
    assert.deepEqual(tree.body.items[0].attributes, { k: 'v' });
    assert.equal(tree.body.items[0].children[0].description, 'two\nlines');

    const bad =
      'key,parentKey,name,level,description,deviceId,attributes\n' +
      'x1,,Fine,,,,{}\n' +
      'x2,nowhere,Orphan,,,,{}\n' +
      'e1,,Taken,,,,{}\n' +
      'x3,x1,,,,,{}\n' +
      'x4,x1,Attr,,,,[1]\n' +
      'x5,x1,Dev,,,nodevice,{}\n';
    const r = await m.call(`/api/v1/assets/hierarchy/third/import`, {
      body: bad,
      headers: { 'content-type': 'text/csv' },
    });
    assert.equal(r.status, 400, r.text);
    assert.deepEqual(
      r.body.details.errors.map((e: any) => e.line),
      [3, 4, 5, 6, 7],
    );
    assert.match(r.body.details.errors[0].message, /nowhere/);
    assert.equal((await m.call('/api/v1/assets/hierarchy/third/export')).text, out.text, 'nothing stored');
    const dry = await m.call(`/api/v1/assets/hierarchy/third/import?dryRun=true`, {
      body: 'key,parentKey,name\nz1,e1,Z\n',
      headers: { 'content-type': 'text/csv' },
    });
    assert.equal(dry.status, 200, dry.text);
    assert.deepEqual([dry.body.checked, dry.body.imported], [1, 0]);
    const cols = await m.call(`/api/v1/assets/hierarchy/third/import`, {
      body: 'key,name,colour\n',
      headers: { 'content-type': 'text/csv' },
    });
    assert.equal(cols.status, 400);
    assert.match(cols.body.message, /colour/);
  });
});
