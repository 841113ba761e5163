/**
 * Issue 33, finding 5: every list route of the edge, the manager (main and admin console APIs) and
 * the UNS refuses bad paging values with a 400 naming the parameter (one kernel check,
 * src/kernel/paging/rest.ts), while unknown parameters stay ignored (contract part 7). The list
 * routes are found in the route inventory by their declared query schema.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { assertListRoutesRefuseBadPaging } from '../helpers/list-routes.js';
import { bootstrapAdmin, startTestEdge, type TestEdge } from '../helpers/edge.js';
import { startTestManager, type TestManager } from '../helpers/manager.js';
import { startTestUns, unsToken, type TestUns } from '../helpers/uns.js';

let edge: TestEdge;
let auth: Record<string, string>;
let manager: TestManager;
let uns: TestUns;

before(async () => {
  [edge, manager, uns] = await Promise.all([startTestEdge(), startTestManager(), startTestUns()]);
  auth = { authorization: `Bearer ${await bootstrapAdmin(edge)}` };
});
after(async () => {
  await Promise.all([edge?.stop(), manager?.stop(), uns?.stop()]);
});

describe('bad paging values are 400 on every list route', () => {
  test('edge', async () => {
    const r = await assertListRoutesRefuseBadPaging(edge.edge.app, (p) => edge.call(p, { headers: auth }));
    // The routes of finding 5 are among those found.
    for (const route of ['GET /config/snapshots', 'GET /datahub/v1/connections', 'GET /logs/query']) {
      assert.ok(r.routes.includes(route), `${route} is a list route (found: ${r.routes.join(', ')})`);
    }
    assert.ok(r.calls >= 50, `${r.calls} bad calls`);
  });

  test('manager, main and admin console APIs', async () => {
    const main = await assertListRoutesRefuseBadPaging(manager.manager.app, (p) => manager.call(p));
    assert.ok(main.routes.length >= 8, `list routes: ${main.routes.join(', ')}`);
    assert.ok(main.routes.includes('GET /api/v1/device/metrics/:projectId/top'));
    const admin = await assertListRoutesRefuseBadPaging(manager.manager.adminApp, (p) => manager.admin(p));
    assert.ok(main.calls + admin.calls >= 100, `${main.calls + admin.calls} bad calls`);
  });

  test('UNS (its lists are GraphQL; any REST list route it gains is checked here)', async () => {
    const token = await unsToken(uns);
    const r = await assertListRoutesRefuseBadPaging(uns.uns.app, (p) =>
      uns.call(p, { headers: { authorization: `Bearer ${token}` } }),
    );
    assert.ok(r.routes.length >= 0);
  });
});

describe('good paging values and unknown parameters still answer', () => {
  test('the lists of finding 5 page, sort and filter; unknown parameters are ignored', async () => {
    for (const reason of ['first', 'second', 'third']) {
      const made = await edge.call('/config/snapshots', { headers: auth, json: { reason } });
      assert.equal(made.status, 201, made.text);
    }
    const page = await edge.call('/config/snapshots?limit=2&offset=0&foo=bar&foo=baz', { headers: auth });
    assert.equal(page.status, 200, page.text);
    assert.equal(page.body.items.length, 2);
    assert.equal(page.body.limit, 2);
    assert.equal(page.body.offset, 0);
    assert.ok(page.body.total >= 3);
    assert.equal(page.body.items[0].reason, 'third', 'newest first by default');
    const filtered = await edge.call('/config/snapshots?filter=reason:eq:second&sort=createdAt:asc', {
      headers: auth,
    });
    assert.equal(filtered.status, 200, filtered.text);
    assert.deepEqual(
      filtered.body.items.map((s: { reason: string }) => s.reason),
      ['second'],
    );
    const unknownField = await edge.call('/config/snapshots?sort=nope:asc', { headers: auth });
    assert.equal(unknownField.status, 400);
    assert.match(unknownField.body.message, /sort field "nope" is not sortable; sortable fields: id, reason/);

    const connections = await edge.call('/datahub/v1/connections?limit=10&sort=cid:desc&x=1', {
      headers: auth,
    });
    assert.equal(connections.status, 200, connections.text);
    assert.equal(connections.body.limit, 10);
    const badField = await edge.call('/datahub/v1/connections?filter=nope:eq:1', { headers: auth });
    assert.equal(badField.status, 400);
    assert.match(badField.body.message, /filter field "nope" is not filterable/);
    const empty = await edge.call('/datahub/v1/connections?limit=&offset=', { headers: auth });
    assert.equal(empty.status, 200, 'an empty value is the default');
    assert.equal(empty.body.limit, 50);
  });

  test('the log query keeps its contract: limit checked, offset not its parameter and so ignored', async () => {
    const ok = await edge.call('/logs/query?limit=5&offset=-5&bogus=1', { headers: auth });
    assert.equal(ok.status, 200, ok.text);
    const tooMany = await edge.call('/logs/query?limit=1001', { headers: auth });
    assert.equal(tooMany.status, 400);
    assert.match(tooMany.body.message, /limit must be an integer from 1 to 1000, got "1001"/);
    const zero = await edge.call('/logs/query?cursor=0', { headers: auth });
    assert.equal(zero.status, 400, 'contract part 7');
    const start = await edge.call('/logs/query?start=0', { headers: auth });
    assert.equal(start.status, 200, 'contract part 7');
  });

  test("the manager's top devices take limit 1 to 100", async () => {
    const over = await manager.call('/api/v1/device/metrics/x/top?limit=101');
    assert.equal(over.status, 400);
    assert.match(over.body.message, /limit must be an integer from 1 to 100, got "101"/);
  });
});
