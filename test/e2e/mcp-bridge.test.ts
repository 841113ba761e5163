/**
 * The edge's `/mcp` through the manager's bridge (issue 31, item 4 with the roles of issue 33): an
 * assistant that holds a manager API token reaches an enrolled edge's MCP server at
 * `/api/v1/edge/{projectId}/{deviceId}/mcp` with the SDK's own client, no network path to the
 * edge. The edge runs each call as the caller's role over the project: an operator's `write_tag`
 * is done (read back from the device); a viewer's MCP session is refused by the bridge (a POST needs
 * operator), so a viewer cannot reach the write at all.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { bootstrapAdmin, startTestEdge, type TestEdge } from '../helpers/edge.js';
import { activationCode, makeProject, startTestManager, type TestManager } from '../helpers/manager.js';
import { callTool, insecureFetch } from '../helpers/mcp.js';
import { eventually } from '../helpers/util.js';

let m: TestManager;
let edge: TestEdge;
let projectId: string;
let deviceId: string;
let operatorToken: string;
let viewerToken: string;
const open: Client[] = [];

const bridged = (path: string) => `/api/v1/edge/${projectId}/${deviceId}${path}`;

async function userToken(username: string, role: 'operator' | 'viewer'): Promise<string> {
  const u = await m.admin('/admin/v1/users', { json: { username, password: 'long-password' } });
  assert.equal(u.status, 201, u.text);
  const g = await m.admin('/admin/v1/user/project/roles', { json: { username, role, projectId } });
  assert.equal(g.status, 201, g.text);
  const t = await m.admin('/admin/v1/api-tokens', { json: { name: `${username}-assistant`, username } });
  assert.equal(t.status, 201, t.text);
  return t.body.token as string;
}

/** The SDK's client on the bridged `/mcp`, with a manager API token (`X-AuthToken`). */
async function bridgedClient(token: string, name: string): Promise<Client> {
  const client = new Client({ name, version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${m.url}${bridged('/mcp')}`), {
    requestInit: { headers: { 'x-authtoken': token } },
    fetch: insecureFetch,
  });
  await client.connect(transport);
  open.push(client);
  return client;
}

before(async () => {
  m = await startTestManager();
  edge = await startTestEdge({ logLevel: 'info' });
  const cookie = { cookie: `jwtAccess=${await bootstrapAdmin(edge)}` };
  ({ projectId } = await makeProject(m, 'mcp-co', 'mcp-plant'));
  const code = await activationCode(m, projectId);
  const proposed = await edge.call('/dm/cloud/url?locale=en-US', { headers: cookie, json: { url: m.url } });
  assert.equal(proposed.status, 200, proposed.text);
  const confirmed = await edge.call(`/dm/cloud/url/${proposed.body.tx}/confirm?locale=en-US`, {
    method: 'PUT',
    headers: cookie,
  });
  assert.equal(confirmed.status, 200, confirmed.text);
  const activated = await edge.call('/dm/cloud?locale=en-US', { headers: cookie, json: { code } });
  assert.equal(activated.status, 200, activated.text);
  deviceId = activated.body.deviceId;
  await eventually(
    async () => (await m.call(bridged('/devicehub/version'))).status === 200,
    20_000,
    'the edge answers through the bridge',
  );
  // A Generator device with a memory tag, made through the bridge as the manager's admin.
  const gql = (query: string, variables?: Record<string, unknown>) =>
    m.call(bridged('/devicehub/v2'), { json: { query, variables } });
  const dev = await gql('mutation { CreateDevice(input: { Name: "press", DriverID: "Generator" }) { ID } }');
  assert.equal(dev.status, 200, dev.text);
  assert.equal(dev.body.errors, undefined, dev.text);
  const tag = await gql(
    'mutation C($input: CreateRegisterRequest!) { CreateRegister(input: $input) { ID } }',
    {
      input: {
        DeviceID: 'press',
        Name: 'M',
        TagName: 'setpoint',
        ValueType: 'int16',
        IntervalMs: 100,
        Properties: [{ Name: 'address', Value: '0' }],
      },
    },
  );
  assert.equal(tag.body.errors, undefined, tag.text);
  operatorToken = await userToken('otto', 'operator');
  viewerToken = await userToken('vera', 'viewer');
});

after(async () => {
  for (const c of open) await c.close().catch(() => undefined);
  await edge?.stop();
  await m?.stop();
});

test('an operator lists the tools, reads a value and writes a tag through the bridge (read back)', async () => {
  const operator = await bridgedClient(operatorToken, 'operator-assistant');
  const { tools } = await operator.listTools();
  assert.ok(
    tools.some((t) => t.name === 'write_tag'),
    tools.map((t) => t.name).join(),
  );
  assert.equal(operator.getServerVersion()?.name, 'millwright-edge');
  await eventually(async () => {
    const r = await callTool(operator, 'read_values', { tags: ['press.setpoint'] });
    return r.value?.[0]?.state === 'OK' ? true : undefined;
  }, 20_000);
  const w = await callTool(operator, 'write_tag', { tag: 'press.setpoint', value: 1234 });
  assert.equal(w.error, undefined, w.error);
  await eventually(
    async () => {
      const r = await callTool(operator, 'read_values', { tags: ['press.setpoint'] });
      return r.value?.[0]?.value === 1234 ? true : undefined;
    },
    20_000,
    'the written value read back',
  );
});

test("a viewer's MCP session is refused by the bridge (a POST needs operator)", async () => {
  await assert.rejects(bridgedClient(viewerToken, 'viewer-assistant'), (err: Error) => {
    assert.match(String(err.message), /403|forbidden|operator/i);
    return true;
  });
});
