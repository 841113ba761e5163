/**
 * Issue 26: GraphQL subscriptions through the manager's bridge. A real manager and a real edge
 * enrolled with it; a `graphql-transport-ws` client (the `ws` package) opens
 * `wss://<manager>/api/v1/edge/<project>/<device>/devicehub/v2` and follows the live values of a
 * Generator device on the edge, every message relayed over the edge's link. An upgrade without
 * credentials is refused; a viewer may subscribe; a cookie-authenticated socket needs the CSRF
 * token in connection_init; a binary message closes 1003; the edge's link ending closes the
 * socket with 4503 (`LINK_SOCKET_CLOSE_OFFLINE`).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { bootstrapAdmin, startTestEdge, type TestEdge } from '../helpers/edge.js';
import {
  enrolTestEdge,
  activationCode,
  consoleSession,
  makeProject,
  startTestManager,
  type TestManager,
} from '../helpers/manager.js';
import { runSocket } from '../helpers/gql-socket.js';
import { eventually } from '../helpers/util.js';
import { LINK_SOCKET_CLOSE_OFFLINE } from '../../src/kernel/link/protocol.js';

const PASSWORD = 'subscriptions-admin-1';
let m: TestManager;
let edge: TestEdge;
let projectId: string;
let deviceId: string;
let viewerToken: string;
const ids: Record<string, string> = {};

const bridged = (path: string) => `/api/v1/edge/${projectId}/${deviceId}${path}`;
const wss = (path: string) => `${m.url.replace(/^https/, 'wss')}${bridged(path)}`;
const TAG_VALUES =
  'subscription V($input: TagValuesRequest!) { TagValues(input: $input) { ID State Value } }';

before(async () => {
  m = await startTestManager({ adminPassword: PASSWORD });
  edge = await startTestEdge();
  const cookie = { cookie: `jwtAccess=${await bootstrapAdmin(edge)}` };
  ({ projectId } = await makeProject(m, 'subs-co', 'subs-plant'));
  const code = await activationCode(m, projectId);
  deviceId = await enrolTestEdge(edge, m, cookie, code);
  await eventually(
    async () => (await m.call(bridged('/devicehub/version'))).status === 200,
    10_000,
    'the edge answers through the bridge',
  );
  // A Generator device with a sine and a memory register, made through the bridge.
  const gql = async (query: string, variables?: unknown) => {
    const r = await m.call(bridged('/devicehub/v2'), { json: { query, variables } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.errors, undefined, r.text);
    return r.body.data;
  };
  await gql('mutation { CreateDevice(input: { Name: "g", DriverID: "Generator" }) { ID } }');
  for (const [name, register] of [
    ['mem', 'M'],
    ['sine', 'S'],
  ] as const) {
    const d = await gql(
      'mutation C($input: CreateRegisterRequest!) { CreateRegister(input: $input) { ID } }',
      {
        input: {
          DeviceID: 'g',
          Name: register,
          TagName: name,
          ValueType: 'int16',
          IntervalMs: 200,
          Properties: [{ Name: 'address', Value: '0' }],
        },
      },
    );
    ids[name] = d.CreateRegister.ID;
  }
  const u = await m.admin('/admin/v1/users', { json: { username: 'vera', password: 'long-password' } });
  assert.equal(u.status, 201, u.text);
  const g = await m.admin('/admin/v1/user/project/roles', {
    json: { username: 'vera', role: 'viewer', projectId },
  });
  assert.equal(g.status, 201, g.text);
  const t = await m.admin('/admin/v1/api-tokens', { json: { name: 'vera-cli', username: 'vera' } });
  assert.equal(t.status, 201, t.text);
  viewerToken = t.body.token;
});
after(async () => {
  await edge?.stop();
  await m?.stop();
});

/** A socket through the bridge that subscribes to TagValues; answers the socket and what it heard. */
function follow(token: string, tagIds: string[]) {
  const socket = new WebSocket(wss('/devicehub/v2'), 'graphql-transport-ws', {
    headers: { 'x-authtoken': token },
    rejectUnauthorized: false,
  });
  const heard: { type: string; id?: string; payload?: any }[] = [];
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: {} })));
  socket.on('message', (raw) => {
    const msg = JSON.parse(String(raw));
    heard.push(msg);
    if (msg.type === 'connection_ack')
      socket.send(
        JSON.stringify({
          id: 'values',
          type: 'subscribe',
          payload: { query: TAG_VALUES, variables: { input: { IDs: tagIds, IntervalMs: 250 } } },
        }),
      );
  });
  return { socket, heard, closed };
}

const values = (heard: { type: string; payload?: any }[]) =>
  heard
    .filter((h) => h.type === 'next')
    .flatMap((h) => (h.payload.data?.TagValues ?? []) as { ID: string; State: string; Value: unknown }[]);

test('a subscription through the manager receives the live values of a Generator on the edge', async () => {
  const { socket, heard } = follow(m.token, [ids.mem!, ids.sine!]);
  try {
    await eventually(() => {
      const seen = new Set(values(heard).map((v) => v.ID));
      return seen.has(ids.mem!) && seen.has(ids.sine!);
    }, 20_000);
    // A write through the bridge comes back as a change on the same subscription.
    const w = await m.call(bridged('/devicehub/v2'), {
      json: { query: `mutation { WriteTag(input: { ID: "${ids.mem}", Value: 1234 }) { Success } }` },
    });
    assert.equal(w.status, 200, w.text);
    assert.equal(w.body.data.WriteTag.Success, true, w.text);
    await eventually(() => values(heard).some((v) => v.ID === ids.mem && Number(v.Value) === 1234), 20_000);
    assert.equal(m.manager.shell.module('link').sockets, 1);
  } finally {
    socket.close();
  }
  await eventually(() => m.manager.shell.module('link').sockets === 0, 10_000, 'the socket forgotten');
});

test('a viewer of the project may subscribe', async () => {
  const { socket, heard } = follow(viewerToken, [ids.sine!]);
  try {
    await eventually(() => values(heard).some((v) => v.ID === ids.sine), 20_000);
  } finally {
    socket.close();
  }
});

test('an upgrade without credentials, or for a device of another project, is refused over HTTP', async () => {
  const none = await runSocket(wss('/devicehub/v2'), { init: {} });
  assert.equal(none.httpStatus, 401);
  const other = await runSocket(
    `${m.url.replace(/^https/, 'wss')}/api/v1/edge/${projectId}/no-such-device/devicehub/v2`,
    { headers: { 'x-authtoken': m.token }, init: {} },
  );
  assert.equal(other.httpStatus, 404);
  // No GraphQL subprotocol: 400 before the upgrade.
  const plain = await new Promise<number>((resolve) => {
    const s = new WebSocket(wss('/devicehub/v2'), {
      headers: { 'x-authtoken': m.token },
      rejectUnauthorized: false,
    });
    s.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    s.on('open', () => resolve(101));
  });
  assert.equal(plain, 400);
});

test("a session cookie's socket needs the CSRF token in connection_init", async () => {
  // An invalid session cookie is refused before the upgrade.
  const stale = await runSocket(wss('/devicehub/v2'), { headers: { cookie: 'mwmSession=nope' }, init: {} });
  assert.equal(stale.httpStatus, 401);
  const c = await consoleSession(m, PASSWORD);
  const cookie = `mwmSession=${c.mwmSession}; mwmCsrfToken=${c.mwmCsrfToken}`;
  const subscribe = { query: TAG_VALUES, variables: { input: { IDs: [ids.sine], IntervalMs: 250 } } };
  // Without the token (as another site's page would open it): closed before anything reaches the edge.
  const without = await runSocket(wss('/devicehub/v2'), { headers: { cookie }, init: {}, subscribe });
  assert.equal(without.closeCode, 4403);
  assert.match(without.closeReason ?? '', /X-CSRF-Token/);
  assert.equal(without.messages.length, 0);
  // With it, as the edge console sends it: the values arrive.
  const withToken = await runSocket(wss('/devicehub/v2'), {
    headers: { cookie },
    init: { 'X-CSRF-Token': decodeURIComponent(c.mwmCsrfToken!) },
    subscribe,
  });
  assert.equal(withToken.result?.type, 'next', JSON.stringify(withToken));
  assert.equal(withToken.result?.payload.data.TagValues[0].ID, ids.sine);
});

test('a binary message closes the socket with 1003; the link ending closes it with 4503', async () => {
  const binary = follow(m.token, [ids.sine!]);
  await eventually(() => values(binary.heard).length > 0, 20_000);
  binary.socket.send(Buffer.from([1, 2, 3]));
  assert.equal((await binary.closed).code, 1003);

  const live = follow(m.token, [ids.sine!]);
  await eventually(() => values(live.heard).length > 0, 20_000);
  // The link ends (the edge's device management stops it), the edge's own API stays up.
  await edge.edge.shell.module('dm').close();
  const end = await live.closed;
  assert.equal(end.code, LINK_SOCKET_CLOSE_OFFLINE, end.reason);
  assert.match(end.reason, /went offline/);
});
