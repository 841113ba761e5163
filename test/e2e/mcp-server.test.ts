/**
 * The edge as an MCP server (issue 31, item 4): `/mcp` driven by the SDK's own client over HTTPS
 * with the edge's credentials. Tools listed, a Generator tag's value read, a write refused for a
 * viewer (the value stays) and done for an admin and an operator (read back from the device), recent values from
 * the history, the log and the integrations read, the tag tree as resources; the bounds: no
 * credentials 401, another caller's session 404, one session over `--mcp-max-sessions` 429.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { EdgeClient } from '../../src/client/index.js';
import { bootstrapAdmin, clientToken, startTestEdge, type TestEdge } from '../helpers/edge.js';
import { callTool, mcpClient } from '../helpers/mcp.js';
import { eventually } from '../helpers/util.js';

const P = '/devicehub/v2';
const textOf = (c: unknown) => String((c as { text?: string }).text);
const MAX_SESSIONS = 3;

describe('the edge as an MCP server (/mcp)', { concurrency: 1, timeout: 300_000 }, () => {
  let t: TestEdge;
  let adminToken: string;
  let viewerToken: string;
  let admin: Client;
  let viewer: Client;
  const ids: Record<string, string> = {};

  before(async () => {
    t = await startTestEdge({ logLevel: 'info', mcpMaxSessions: MAX_SESSIONS, historyFlushMs: 50 });
    const session = await bootstrapAdmin(t);
    adminToken = (await clientToken(t, session)).token;
    viewerToken = (await clientToken(t, session, 'viewer')).token;
    const edge = new EdgeClient({ url: t.url, credentials: { bearer: adminToken }, insecure: true });
    try {
      await edge.graphql(
        P,
        'mutation { CreateDevice(input: { Name: "press", DriverID: "Generator" }) { ID } }',
      );
      for (const [name, register] of [
        ['setpoint', 'M'],
        ['sine', 'S'],
      ]) {
        const r = await edge.graphql(
          P,
          'mutation C($input: CreateRegisterRequest!) { CreateRegister(input: $input) { ID } }',
          {
            input: {
              DeviceID: 'press',
              Name: register,
              TagName: name,
              ValueType: 'int16',
              IntervalMs: 100,
              Properties: [{ Name: 'address', Value: '0' }],
            },
          },
        );
        ids[name!] = r.CreateRegister.ID;
      }
    } finally {
      edge.close();
    }
    admin = await mcpClient(t.url, adminToken, 'admin-assistant');
    viewer = await mcpClient(t.url, viewerToken, 'viewer-assistant');
  });
  after(async () => {
    await admin?.close();
    await viewer?.close();
    await t?.stop();
  });

  test('the tools are listed, with the server named', async () => {
    const { tools } = await viewer.listTools();
    const names = tools.map((x) => x.name).sort();
    assert.deepEqual(names, [
      'integration_states',
      'list_devices',
      'list_tags',
      'query_logs',
      'read_history',
      'read_values',
      'write_tag',
    ]);
    assert.equal(viewer.getServerVersion()?.name, 'millwright-edge');
    const write = tools.find((x) => x.name === 'write_tag')!;
    assert.deepEqual(Object.keys(write.inputSchema.properties ?? {}).sort(), ['tag', 'timeoutMs', 'value']);
  });

  test('devices and tags are listed, and a current value is read', async () => {
    const devices = await callTool(viewer, 'list_devices');
    assert.equal(devices.value.total, 1);
    assert.equal(devices.value.devices[0].name, 'press');
    const tags = await callTool(viewer, 'list_tags', { device: 'press' });
    assert.deepEqual(tags.value.tags.map((x: { path: string }) => x.path).sort(), [
      'press.setpoint',
      'press.sine',
    ]);
    const read = await eventually(async () => {
      const r = await callTool(viewer, 'read_values', { tags: ['press.sine', ids.setpoint] });
      assert.equal(r.error, undefined, r.error);
      return r.value.every(
        (v: { state: string; value: unknown }) => v.state === 'OK' && typeof v.value === 'number',
      )
        ? r.value
        : undefined;
    }, 20_000);
    assert.equal(read[0].path, 'press.sine');
    assert.equal(read[1].id, ids.setpoint);
    const missing = await callTool(viewer, 'read_values', { tags: ['press.nothing'] });
    assert.match(missing.error ?? '', /no tag "press\.nothing"/);
  });

  test('a viewer cannot write a tag: refused, and the value stays', async () => {
    const before = await callTool(viewer, 'read_values', { tags: ['press.setpoint'] });
    const r = await callTool(viewer, 'write_tag', { tag: 'press.setpoint', value: 4242 });
    assert.match(r.error ?? '', /the viewer role cannot write tags/);
    await new Promise((resolve) => setTimeout(resolve, 400));
    const after = await callTool(viewer, 'read_values', { tags: ['press.setpoint'] });
    assert.notEqual(after.value[0].value, 4242);
    assert.equal(after.value[0].value, before.value[0].value);
  });

  test('an admin writes a tag through the device, and the value is read back', async () => {
    const r = await callTool(admin, 'write_tag', { tag: 'press.setpoint', value: 1234 });
    assert.equal(r.error, undefined, r.error);
    assert.equal(r.value.Success, true);
    assert.equal(r.value.path, 'press.setpoint');
    await eventually(async () => {
      const v = await callTool(viewer, 'read_values', { tags: ['press.setpoint'] });
      return v.value[0].value === 1234;
    }, 10_000);
    // The operator role (a manager operator's bridged call; no edge credential carries it) writes
    // through the same rule: the plant's write as an operator reaches the device.
    const op = await t.edge.shell.module('mcp').plant.write('operator', 'press.setpoint', 4321);
    assert.equal(op.Success, true, op.Error ?? '');
    await eventually(async () => {
      const v = await callTool(viewer, 'read_values', { tags: ['press.setpoint'] });
      return v.value[0].value === 4321;
    }, 10_000);
    await assert.rejects(
      t.edge.shell.module('mcp').plant.write('viewer', 'press.setpoint', 1),
      /the viewer role cannot write tags/,
    );
    assert.equal(
      (await callTool(admin, 'write_tag', { tag: 'press.setpoint', value: 1234 })).value.Success,
      true,
    );
    // An int16 register refuses what it cannot hold: the device's own refusal is the tool's error.
    const bad = await callTool(admin, 'write_tag', { tag: 'press.setpoint', value: 'not a number' });
    assert.match(bad.error ?? '', /the device refused the write to press\.setpoint/);
    // The write is in the edge's log, which the assistant can query.
    await eventually(async () => {
      const logs = await callTool(viewer, 'query_logs', { component: 'edge.mcp', search: 'MCP tag write' });
      return logs.value.entries.some((e: { fields: { tag?: string } }) => e.fields.tag === 'press.setpoint');
    }, 10_000);
  });

  test("a tag's recent values come from the history", async () => {
    const h = await eventually(async () => {
      const r = await callTool(viewer, 'read_history', { tag: 'press.sine', limit: 5 });
      assert.equal(r.error, undefined, r.error);
      return r.value.values.length === 5 ? r.value : undefined;
    }, 20_000);
    assert.equal(h.tag, 'press.sine');
    assert.ok(h.total >= 5);
    const times = h.values.map((v: { ts: string }) => Date.parse(v.ts));
    assert.deepEqual(
      [...times].sort((a, b) => a - b),
      times,
      'oldest first',
    );
    assert.ok(Date.now() - times[4] < 10_000, 'the newest values');
    assert.ok(h.values.every((v: { value: unknown }) => typeof v.value === 'number'));
    const bad = await callTool(viewer, 'read_history', { tag: 'press.sine', from: 'yesterday' });
    assert.match(bad.error ?? '', /from "yesterday" is not an ISO 8601 time/);
  });

  test('the integrations are read, with their state', async () => {
    const r = await callTool(viewer, 'integration_states');
    assert.ok(Array.isArray(r.value.integrations));
    for (const i of r.value.integrations) assert.equal(typeof i.state, 'string');
  });

  test('the tag tree is a resource, each device one more', async () => {
    const { resources } = await viewer.listResources();
    const uris = resources.map((r) => r.uri).sort();
    assert.deepEqual(uris, ['millwright://devices/press', 'millwright://tags']);
    const tree = await viewer.readResource({ uri: 'millwright://tags' });
    const doc = JSON.parse(textOf(tree.contents[0]));
    assert.equal(doc.truncated, false);
    assert.deepEqual(doc.devices[0].tags.map((x: { name: string }) => x.name).sort(), ['setpoint', 'sine']);
    const device = await viewer.readResource({ uri: 'millwright://devices/press' });
    const d = JSON.parse(textOf(device.contents[0]));
    assert.equal(d.tags.find((x: { name: string }) => x.name === 'setpoint').value, 1234);
  });

  test('no credentials: 401; another caller naming a session: 404; one session too many: 429; malformed: 4xx; idle sessions closed', async () => {
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    };
    const headers = { accept: 'application/json, text/event-stream' };
    assert.equal((await t.call('/mcp', { json: init, headers })).status, 401);
    const adminSession = (admin.transport as { sessionId?: string }).sessionId!;
    assert.ok(adminSession);
    const stolen = await t.call('/mcp', {
      json: { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      headers: { ...headers, authorization: `Bearer ${viewerToken}`, 'mcp-session-id': adminSession },
    });
    assert.equal(stolen.status, 404, stolen.text);
    // Two sessions are open (admin, viewer): one more fits, the next is refused.
    const third = await mcpClient(t.url, viewerToken);
    try {
      const over = await t.call('/mcp', {
        json: init,
        headers: { ...headers, authorization: `Bearer ${viewerToken}` },
      });
      assert.equal(over.status, 429, over.text);
      assert.match(over.body.message, /at most 3 MCP sessions/);
    } finally {
      // DELETE /mcp ends the session (a viewer may end its own).
      await (third.transport as StreamableHTTPClientTransport).terminateSession();
      await third.close();
    }
    // The ended session freed its place.
    const again = await mcpClient(t.url, viewerToken);
    await again.close();
    // Sessions idle past --mcp-session-idle (10 min) are closed: their IDs are then unknown.
    const sessions = t.edge.shell.module('mcp').sessions!;
    assert.equal(sessions.size, 3);
    sessions.sweep(Date.now() + 11 * 60_000);
    assert.equal(sessions.size, 0);
    const expired = await t.call('/mcp', {
      json: { jsonrpc: '2.0', id: 3, method: 'tools/list' },
      headers: { ...headers, authorization: `Bearer ${adminToken}`, 'mcp-session-id': adminSession },
    });
    assert.equal(expired.status, 404, expired.text);
    // Malformed requests are 4xx, never 5xx.
    const auth = { ...headers, authorization: `Bearer ${viewerToken}` };
    const freshClient = await mcpClient(t.url, viewerToken);
    const fresh = (freshClient.transport as { sessionId?: string }).sessionId!;
    for (const [what, options, status] of [
      ['no session, not an initialize', { json: {}, headers: auth }, 400],
      ['a GET without a session', { method: 'GET', headers: auth }, 400],
      [
        'an initialize without the accept header',
        { json: init, headers: { authorization: auth.authorization } },
        406,
      ],
      ['not JSON-RPC', { json: { foo: 1 }, headers: { ...auth, 'mcp-session-id': fresh } }, 400],
      ['a body over --mcp-max-body', { json: { pad: 'x'.repeat(1024 * 1024) }, headers: auth }, 413],
    ] as const) {
      const r = await t.call('/mcp', options);
      assert.equal(r.status, status, `${what}: ${r.status} ${r.text}`);
    }
    // The refused initialize left no session behind.
    assert.equal(sessions.size, 1);
    await freshClient.close();
  });
});
