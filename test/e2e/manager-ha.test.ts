/**
 * The manager's high-availability routes and lease, on the wire: the in-process manager over
 * HTTPS and three simulated edges on real links (`test/helpers/sim-edge.ts`) that ask for their
 * role as an edge does (`lease`) and record the manager's `ha` messages. The failover with real
 * edges polling a real device: ha-failover.test.ts.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { HaRoleMessage } from '../../src/kernel/link/protocol.js';
import { activationCode, makeProject, startTestManager, type TestManager } from '../helpers/manager.js';
import { SimEdge } from '../helpers/sim-edge.js';
import { eventually, sleep } from '../helpers/util.js';

let m: TestManager;
let a: SimEdge;
let b: SimEdge;
let c: SimEdge;
let other: SimEdge;
let seq = 0;

async function simEdge(projectId: string): Promise<SimEdge> {
  const e = new SimEdge();
  await e.activate(m.url, await activationCode(m, projectId));
  await e.connect();
  return e;
}

/** The manager's answer to a `lease` of `e`. */
async function ask(e: SimEdge): Promise<HaRoleMessage> {
  const s = ++seq;
  e.lease(s);
  return eventually(() => e.ha.find((x) => x.seq === s), 5000, `the answer to lease ${s}`);
}

before(async () => {
  m = await startTestManager();
  const { projectId } = await makeProject(m);
  const elsewhere = await makeProject(m, 'other-co', 'plant-2');
  [a, b, c] = [await simEdge(projectId), await simEdge(projectId), await simEdge(projectId)];
  other = await simEdge(elsewhere.projectId);
});
after(async () => {
  for (const e of [a, b, c, other]) e?.stop();
  await m?.stop();
});

const ha = (id: string, path = '', o: Parameters<TestManager['call']>[1] = {}) =>
  m.call(`/api/v1/device/${id}/ha${path}`, o);

test('an unpaired device: configured false, role none; its lease asks are answered none', async () => {
  const r = await ha(a.deviceId);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.configured, false);
  assert.equal(r.body.role, 'none');
  assert.equal((await ask(a)).role, 'none');
  assert.equal((await ha(a.deviceId, '', { method: 'DELETE' })).status, 404);
  assert.equal((await ha(a.deviceId, '/enable', { method: 'POST' })).status, 404);
  assert.equal((await ha('no-such-device')).status, 404);
});

test('configure refuses bad input with 400, naming it', async () => {
  const cases: [Record<string, unknown>, number, RegExp][] = [
    [{ secondaryDeviceId: a.deviceId }, 400, /another device/],
    [
      { secondaryDeviceId: b.deviceId, timeoutSeconds: 4, leaseSeconds: 4 },
      400,
      /shorter than timeoutSeconds/,
    ],
    [{ secondaryDeviceId: b.deviceId, timeoutSeconds: 1 }, 400, /timeoutSeconds/],
    [{ secondaryDeviceId: b.deviceId, colour: 'red' }, 400, /colour/],
    [{}, 400, /secondaryDeviceId/],
    [{ secondaryDeviceId: other.deviceId }, 400, /a pair is two devices of one project/],
    [{ secondaryDeviceId: 'no-such-device' }, 404, /no-such-device/],
  ];
  for (const [json, status, message] of cases) {
    const r = await ha(a.deviceId, '/configure', { json });
    assert.equal(r.status, status, `${JSON.stringify(json)}: ${r.text}`);
    assert.match(r.body.message, message);
  }
  assert.equal((await ha(a.deviceId)).body.configured, false);
});

test('pairing tells both edges; the lease is renewed by the active and moves to the standby after the timeout, epoch + 1', async () => {
  const r = await ha(a.deviceId, '/configure', {
    json: { secondaryDeviceId: b.deviceId, timeoutSeconds: 2, leaseSeconds: 1, interface: 'eth0' },
  });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.role, 'active');
  assert.equal(r.body.enabled, false);
  assert.equal(r.body.epoch, 1);
  assert.equal(r.body.leaseSeconds, 1);
  assert.equal(r.body.interface, 'eth0');
  assert.deepEqual(r.body.online, { primary: true, secondary: true });
  const news = (e: SimEdge) => eventually(() => e.ha.find((x) => x.seq === undefined), 5000, 'news');
  assert.deepEqual(
    { ...(await news(a)) },
    { t: 'ha', pairId: r.body.pairId, role: 'active', epoch: 1, leaseMs: 1000 },
  );
  assert.equal((await news(b)).role, 'standby');
  // Another pair for a paired device: 409.
  assert.equal((await ha(a.deviceId, '/configure', { json: { secondaryDeviceId: c.deviceId } })).status, 409);
  assert.equal((await ha(c.deviceId, '/configure', { json: { secondaryDeviceId: b.deviceId } })).status, 409);

  assert.equal((await ask(a)).role, 'active');
  // Disabled: the standby never takes over, however stale the active.
  await sleep(2500); // past the 2 s timeout without a renewal
  assert.equal((await ask(b)).role, 'standby');
  const enabled = await ha(b.deviceId, '/enable', { method: 'POST' });
  assert.equal(enabled.status, 200, enabled.text);
  assert.equal(enabled.body.role, 'standby');
  assert.equal(enabled.body.enabled, true);
  // The active renews within the timeout: still no takeover.
  assert.equal((await ask(a)).role, 'active');
  assert.equal((await ask(b)).role, 'standby');
  // Then it goes silent past the timeout: the standby's next ask takes the role over.
  await sleep(2500); // past the 2 s timeout without a renewal
  const taken = await ask(b);
  assert.deepEqual({ role: taken.role, epoch: taken.epoch }, { role: 'active', epoch: 2 });
  const told = await eventually(() => a.ha.find((x) => x.seq === undefined && x.epoch === 2), 5000, 'a told');
  assert.equal(told.role, 'standby');
  assert.deepEqual(
    { ...(await ask(a)), seq: 0 },
    { t: 'ha', seq: 0, pairId: r.body.pairId, role: 'standby', epoch: 2, leaseMs: 1000 },
  );
  const view = await ha(a.deviceId);
  assert.equal(view.body.activeDeviceId, b.deviceId);
  assert.equal(view.body.standbyDeviceId, a.deviceId);
  assert.equal(view.body.role, 'standby');
  assert.equal(view.body.epoch, 2);

  // Changing the timeouts keeps the lease where it is.
  const changed = await ha(b.deviceId, '/configure', {
    json: { secondaryDeviceId: a.deviceId, timeoutSeconds: 10 },
  });
  assert.equal(changed.status, 200, changed.text);
  assert.equal(changed.body.timeoutSeconds, 10);
  assert.equal(changed.body.leaseSeconds, 5);
  assert.equal(changed.body.activeDeviceId, b.deviceId);
  const disabled = await ha(a.deviceId, '/disable', { method: 'POST' });
  assert.equal(disabled.body.enabled, false);

  // Unpaired: both are told, and their asks are answered none.
  const before = [a.ha.length, b.ha.length];
  assert.equal((await ha(a.deviceId, '', { method: 'DELETE' })).status, 204);
  for (const [i, e] of [a, b].entries())
    await eventually(() => e.ha.slice(before[i]).some((x) => x.role === 'none'), 5000, 'told none');
  assert.equal((await ask(b)).role, 'none');
  assert.equal((await ha(b.deviceId)).body.configured, false);
});
