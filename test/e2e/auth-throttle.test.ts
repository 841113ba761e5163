/**
 * Issue 33, finding 7: lockouts stop the guesser, not the user. After 40 failed attempts from
 * 127.0.0.1 for user A, user B's right credential from 127.0.0.1 works at once (MQTT CONNECT to
 * the UNS; the edge's client credentials and login), and user A's right credential is delayed,
 * then accepted (the delay is measured and printed).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { bootstrapAdmin, startTestEdge, type TestEdge } from '../helpers/edge.js';
import { connectPacket, createAccount, rawMqtt, startTestUns, unsToken } from '../helpers/uns.js';
import { ADMIN_PASSWORD } from '../helpers/edge.js';
import { LOCAL_PROVIDER_ID } from '../../src/edge/auth/service.js';
import { sleep } from '../helpers/util.js';

/** The CONNACK return code of one CONNECT (0 accepted, 4 bad credentials, 5 not authorised). */
async function mqttConnect(port: number, user: string, password: string): Promise<number> {
  const raw = await rawMqtt(port);
  try {
    raw.socket.write(connectPacket(`c-${user}-${Math.random().toString(36).slice(2)}`, user, password));
    return await raw.connack(10_000);
  } finally {
    raw.socket.destroy();
  }
}

/**
 * After the 40 failures: one more failure that is checked (not refused unchecked), so that a fresh
 * delay starts now; answers when it happened. `attempt` answers 'checked' or 'refused'.
 */
async function freshFailure(attempt: () => Promise<'checked' | 'refused'>): Promise<number> {
  const deadline = Date.now() + 40_000;
  while (Date.now() < deadline) {
    if ((await attempt()) === 'checked') return Date.now();
    await sleep(50);
  }
  throw new Error('no attempt was checked within 40 s');
}

/** Retries `ok` every 100 ms; answers how long after `since` it first succeeded, and the refusals. */
async function delayUntil(
  since: number,
  ok: () => Promise<boolean>,
): Promise<{ ms: number; refused: number }> {
  let refused = 0;
  const deadline = Date.now() + 40_000;
  while (Date.now() < deadline) {
    if (await ok()) return { ms: Date.now() - since, refused };
    refused++;
    await sleep(100);
  }
  throw new Error('the right credential was still refused after 40 s');
}

test('UNS: 40 bad MQTT passwords for A; B connects at once, A is delayed then connects', async (t) => {
  const uns = await startTestUns({ authRateLimit: 30 });
  t.after(() => uns.stop());
  const admin = await unsToken(uns);
  await createAccount(uns, admin, 'user-a', 'a-right-password', []);
  await createAccount(uns, admin, 'user-b', 'b-right-password', []);
  const codes: number[] = [];
  for (let i = 0; i < 40; i++) codes.push(await mqttConnect(uns.mqttPort, 'user-a', `wrong-${i}`));
  assert.ok(
    codes.every((c) => c === 4 || c === 5),
    codes.join(),
  );
  assert.deepEqual(codes.slice(0, 5), [4, 4, 4, 4, 4], 'the first failures are checked without delay');
  assert.ok(codes.includes(5), `later ones wait: ${codes.join()}`);

  assert.equal(await mqttConnect(uns.mqttPort, 'user-b', 'b-right-password'), 0, "B's right password");

  const since = await freshFailure(async () =>
    (await mqttConnect(uns.mqttPort, 'user-a', 'wrong-again')) === 4 ? 'checked' : 'refused',
  );
  const a = await delayUntil(
    since,
    async () => (await mqttConnect(uns.mqttPort, 'user-a', 'a-right-password')) === 0,
  );
  console.log(
    `UNS: user A's right MQTT password accepted ${a.ms} ms after the last failure (${a.refused} refusals)`,
  );
  assert.ok(a.refused >= 1 && a.ms >= 400, JSON.stringify(a));
  // Accepted, the pair is forgotten: A's next right password connects at once.
  assert.equal(await mqttConnect(uns.mqttPort, 'user-a', 'a-right-password'), 0);
});

let edge: TestEdge;
let bearer: string;
before(async () => {
  edge = await startTestEdge();
  bearer = await bootstrapAdmin(edge);
});
after(() => edge?.stop());

test("edge: 40 bad secrets for client A; client B's token and the admin's login work, A is delayed", async () => {
  const client = async (name: string) => {
    const r = await edge.call('/auth/v3/api-clients', {
      headers: { authorization: `Bearer ${bearer}` },
      json: { name },
    });
    assert.equal(r.status, 201, r.text);
    return { id: r.body.client_id as string, secret: r.body.client_secret as string };
  };
  const a = await client('client-a');
  const b = await client('client-b');
  const token = (id: string, secret: string) =>
    edge.call('/auth/v3/oauth/token', {
      form: { grant_type: 'client_credentials', client_id: id, client_secret: secret },
    });
  const statuses: number[] = [];
  for (let i = 0; i < 40; i++) statuses.push((await token(a.id, `wrong-${i}`)).status);
  assert.deepEqual(statuses.slice(0, 5), [401, 401, 401, 401, 401]);
  assert.ok(
    statuses.every((s) => s === 401 || s === 429),
    statuses.join(),
  );
  assert.ok(statuses.includes(429), statuses.join());

  const forB = await token(b.id, b.secret);
  assert.equal(forB.status, 200, forB.text);
  const login = await edge.call('/auth/v2/login', {
    json: { username: 'admin', password: 'a-new-admin-password', providerId: LOCAL_PROVIDER_ID },
  });
  assert.equal(login.status, 200, login.text);
  assert.notEqual(ADMIN_PASSWORD, 'a-new-admin-password');

  const since = await freshFailure(async () =>
    (await token(a.id, 'wrong-again')).status === 401 ? 'checked' : 'refused',
  );
  const early = await token(a.id, a.secret);
  if (early.status === 429) assert.match(early.headers['retry-after'] as string, /^\d+$/);
  const d = await delayUntil(since, async () => (await token(a.id, a.secret)).status === 200);
  console.log(
    `edge: client A's right secret accepted ${d.ms} ms after the last failure (${d.refused} refusals)`,
  );
  assert.ok(
    d.ms >= 400 && (early.status === 429 || d.refused >= 1),
    JSON.stringify({ d, early: early.status }),
  );
});
