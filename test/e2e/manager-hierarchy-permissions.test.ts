/**
 * Branch permissions of the asset hierarchy (contract part 4.5): two users, two branches. A user
 * granted one branch reads (or changes, with `edit`) that branch only, never its sibling; grants
 * are revoked on the node and deleted from the admin console (`/admin/v1/user/asset-mgmt/branches`).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { makeProject, startTestManager, type TestManager } from '../helpers/manager.js';

let m: TestManager;
const H = '/api/v1/assets/hierarchy/acme';
const ids: Record<string, string> = {};
const tokens: Record<string, string> = {};

async function user(name: string, role: string, scope: Record<string, string>) {
  assert.equal(
    (await m.admin('/admin/v1/users', { json: { username: name, password: 'long-password' } })).status,
    201,
  );
  const g = await m.admin('/admin/v1/user/project/roles', { json: { username: name, role, ...scope } });
  assert.equal(g.status, 201, g.text);
  tokens[name] = (
    await m.admin('/admin/v1/api-tokens', { json: { name: `${name}-cli`, username: name } })
  ).body.token;
}

before(async () => {
  m = await startTestManager();
  const acme = await makeProject(m, 'acme', 'plant-1');
  for (const [name, parent] of [
    ['Acme', null],
    ['Lyon', 'Acme'],
    ['Turin', 'Acme'],
    ['Press', 'Lyon'],
    ['Paint', 'Turin'],
  ] as const) {
    const r = await m.call(`${H}/node`, { json: { name, parentId: parent ? ids[parent] : null } });
    assert.equal(r.status, 201, r.text);
    ids[name] = r.body.id;
  }
  // Both hold the operator role on a project of the company, none on the company itself.
  await user('olga', 'operator', { projectId: acme.projectId });
  await user('ivan', 'operator', { projectId: acme.projectId });
  // A viewer of the whole company reads every branch and changes none.
  await user('vera', 'viewer', { companyId: acme.companyId });
});
after(() => m.stop());

const as = (who: string, path: string, options: Parameters<TestManager['call']>[1] = {}) =>
  m.call(path, { ...options, token: tokens[who]! });

describe('grants', () => {
  test('a company admin grants olga edit on Lyon and ivan read on Turin; operators of a node', async () => {
    const g1 = await m.call(`${H}/node/${ids.Lyon}/permissions`, {
      json: { username: 'olga', access: 'edit' },
    });
    assert.equal(g1.status, 201, g1.text);
    assert.equal(g1.body.access, 'edit');
    const g2 = await m.call(`${H}/node/${ids.Turin}/permissions`, {
      json: { username: 'ivan', access: 'read' },
    });
    assert.equal(g2.status, 201, g2.text);
    assert.equal(
      (await m.call(`${H}/node/${ids.Turin}/permissions`, { json: { username: 'nobody' } })).status,
      404,
    );
    const ops = await m.call(`${H}/node/${ids.Press}/permissions`);
    assert.deepEqual(
      ops.body.items.map((o: any) => [o.username, o.access, o.nodeName]),
      [['olga', 'edit', 'Lyon']],
    );
    // A branch grant does not let a user grant.
    const self = await as('olga', `${H}/node/${ids.Press}/permissions`, { json: { username: 'ivan' } });
    assert.equal(self.status, 403, self.text);
  });

  test('olga (edit on Lyon) reads and changes Lyon only', async () => {
    const roots = await as('olga', `${H}/roots`);
    assert.deepEqual(
      roots.body.items.map((n: any) => n.name),
      ['Lyon'],
    );
    const tree = await as('olga', `${H}/tree`);
    assert.deepEqual(
      tree.body.items.map((n: any) => [n.name, n.children.map((c: any) => c.name)]),
      [['Lyon', ['Press']]],
    );
    assert.equal((await as('olga', `${H}/node/${ids.Lyon}`)).status, 200);
    assert.equal((await as('olga', `${H}/node/${ids.Press}`)).status, 200);
    const child = await as('olga', `${H}/node`, { json: { name: 'Weld', parentId: ids.Lyon } });
    assert.equal(child.status, 201, child.text);
    assert.equal(
      (await as('olga', `${H}/node/${ids.Press}`, { method: 'PUT', json: { description: 'x' } })).status,
      200,
    );
    // The sibling branch and the root: not found, whatever the call.
    for (const id of [ids.Turin, ids.Paint, ids.Acme]) {
      assert.equal((await as('olga', `${H}/node/${id}`)).status, 404);
      assert.equal((await as('olga', `${H}/node/${id}`, { method: 'PUT', json: { name: 'x' } })).status, 404);
      assert.equal((await as('olga', `${H}/node/${id}?force=true`, { method: 'DELETE' })).status, 404);
      assert.equal((await as('olga', `${H}/node`, { json: { name: 'y', parentId: id } })).status, 404);
      assert.equal((await as('olga', `${H}/node/${id}/permissions`)).status, 404);
    }
    const away = await as('olga', `${H}/node/${child.body.id}/move`, { json: { parentId: ids.Turin } });
    assert.equal(away.status, 404, 'cannot move into the sibling branch');
    assert.equal((await as('olga', `${H}/node`, { json: { name: 'root' } })).status, 403);
    assert.equal((await as('olga', `${H}/export`)).status, 403);
    assert.equal((await as('olga', `${H}/node/${child.body.id}`, { method: 'DELETE' })).status, 200);
  });

  test('ivan (read on Turin) reads Turin, changes nothing, never sees Lyon', async () => {
    assert.deepEqual(
      (await as('ivan', `${H}/roots`)).body.items.map((n: any) => n.name),
      ['Turin'],
    );
    const turin = await as('ivan', `${H}/node/${ids.Turin}`);
    assert.deepEqual(
      turin.body.children.map((c: any) => c.name),
      ['Paint'],
    );
    const upd = await as('ivan', `${H}/node/${ids.Paint}`, { method: 'PUT', json: { name: 'x' } });
    assert.equal(upd.status, 403, upd.text);
    assert.match(upd.body.message, /edit access/);
    assert.equal((await as('ivan', `${H}/node`, { json: { name: 'y', parentId: ids.Turin } })).status, 403);
    assert.equal((await as('ivan', `${H}/node/${ids.Paint}`, { method: 'DELETE' })).status, 403);
    assert.equal((await as('ivan', `${H}/node/${ids.Lyon}`)).status, 404);
    assert.equal((await as('ivan', `${H}/node/${ids.Press}`)).status, 404);
  });

  test('a company viewer reads both branches and changes neither', async () => {
    assert.deepEqual(
      (await as('vera', `${H}/roots`)).body.items.map((n: any) => n.name),
      ['Acme'],
    );
    assert.equal((await as('vera', `${H}/node/${ids.Press}`)).status, 200);
    assert.equal((await as('vera', `${H}/node/${ids.Paint}`)).status, 200);
    assert.equal((await as('vera', `${H}/export`)).status, 200);
  });

  test('revoke on the node; the admin console lists, reads and deletes grants', async () => {
    const list = await m.admin('/admin/v1/user/asset-mgmt/branches');
    assert.equal(list.status, 200, list.text);
    assert.equal(list.body.total, 2);
    const ivans = await m.admin('/admin/v1/user/asset-mgmt/branches?username=ivan&companyName=acme');
    assert.equal(ivans.body.items.length, 1);
    const grantId = ivans.body.items[0].grantId as string;
    const one = await m.admin(`/admin/v1/user/asset-mgmt/branches/${grantId}`);
    assert.deepEqual([one.body.username, one.body.nodeName, one.body.access], ['ivan', 'Turin', 'read']);
    assert.equal(
      (await m.admin(`/admin/v1/user/asset-mgmt/branches/${grantId}`, { method: 'DELETE' })).status,
      204,
    );
    assert.equal((await m.admin(`/admin/v1/user/asset-mgmt/branches/${grantId}`)).status, 404);
    assert.equal(
      (await as('ivan', `${H}/node/${ids.Turin}`)).status,
      404,
      'the deleted grant no longer applies',
    );

    const rv = await m.call(`${H}/node/${ids.Lyon}/permissions/olga`, { method: 'DELETE' });
    assert.equal(rv.status, 204, rv.text);
    assert.equal((await as('olga', `${H}/node/${ids.Lyon}`)).status, 404);
    assert.deepEqual((await as('olga', `${H}/roots`)).body.items, []);
    assert.equal((await m.admin('/admin/v1/user/asset-mgmt/branches')).body.total, 0);
    // Only a global admin uses the admin console.
    assert.equal((await m.admin('/admin/v1/user/asset-mgmt/branches', { token: tokens.vera! })).status, 403);
  });

  test('deleting a branch deletes the grants on it', async () => {
    await m.call(`${H}/node/${ids.Paint}/permissions`, { json: { username: 'ivan', access: 'edit' } });
    assert.equal((await m.admin('/admin/v1/user/asset-mgmt/branches')).body.total, 1);
    assert.equal((await m.call(`${H}/node/${ids.Turin}?force=true`, { method: 'DELETE' })).status, 200);
    assert.equal((await m.admin('/admin/v1/user/asset-mgmt/branches')).body.total, 0);
  });
});
