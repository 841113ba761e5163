/**
 * `TestAISuiteMCPServer` on /analytics/v3 (issue 31, item 3): against a real MCP server built with
 * the SDK (test/fixtures/mcp/server.mjs), started by the edge over stdio and by the test over
 * streamable HTTP; the failures (a program that exits, a server that never answers, a refused
 * credential) are answers with their error, within the deadline; bad input is a 400; a viewer
 * cannot run it.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { eventually } from '../helpers/util.js';
import { bootstrapAdmin, clientToken, graphql, startTestEdge, type TestEdge } from '../helpers/edge.js';

const P = '/analytics/v3';
const FIXTURE = join(import.meta.dirname, '../fixtures/mcp/server.mjs');
const Q = `mutation T($input: TestAISuiteMCPServerRequest!) {
  TestAISuiteMCPServer(input: $input) {
    Success Error Transport ServerName ServerVersion Truncated DurationMs
    Tools { Name Title Description InputSchema }
    Resources { URI Name Description MimeType }
  }
}`;

/** Starts the fixture over HTTP; answers its base URL once it listens. */
function startHttpFixture(args: string[] = []): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [FIXTURE, '--http', ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /listening (\d+)/.exec(out);
      if (m) resolve({ url: `http://127.0.0.1:${m[1]}/mcp`, child });
    });
    child.once('exit', (code) => reject(new Error(`the fixture exited (${code})`)));
  });
}

describe('TestAISuiteMCPServer', { concurrency: 1, timeout: 300_000 }, () => {
  let t: TestEdge;
  let admin: string;
  let viewer: string;
  const children: ChildProcess[] = [];

  before(async () => {
    t = await startTestEdge();
    const session = await bootstrapAdmin(t);
    admin = `Bearer ${(await clientToken(t, session)).token}`;
    viewer = `Bearer ${(await clientToken(t, session, 'viewer')).token}`;
  });
  after(async () => {
    for (const c of children) c.kill();
    await t?.stop();
  });

  const run = async (input: Record<string, unknown>, who = admin) => {
    const r = await graphql(t, P, who, Q, { input });
    return r;
  };
  const ok = async (input: Record<string, unknown>) => {
    const r = await run(input);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.errors, undefined, r.text);
    return r.body.data.TestAISuiteMCPServer;
  };

  const checkFixture = (a: any, transport: string) => {
    assert.equal(a.Success, true, a.Error);
    assert.equal(a.Error, null);
    assert.equal(a.Transport, transport);
    assert.equal(a.ServerName, 'fixture-mcp');
    assert.deepEqual(
      a.Tools.map((x: { Name: string }) => x.Name),
      ['add', 'echo'],
    );
    const add = a.Tools[0];
    assert.equal(add.Title, 'Add');
    assert.equal(add.Description, 'Adds two numbers');
    assert.deepEqual(Object.keys(add.InputSchema.properties).sort(), ['a', 'b']);
    assert.deepEqual(a.Resources, [
      { URI: 'fixture://readme', Name: 'readme', Description: 'The fixture readme', MimeType: 'text/plain' },
    ]);
    assert.equal(a.Truncated, false);
  };

  test('a stdio server the edge starts: its tools and resources, with its environment', async () => {
    const a = await ok({
      Command: process.execPath,
      Args: [FIXTURE],
      Env: [{ Key: 'FIXTURE_VERSION', Value: '7.7.7' }],
      TimeoutMs: 60_000,
    });
    checkFixture(a, 'stdio');
    assert.equal(a.ServerVersion, '7.7.7');
  });

  test('a streamable HTTP server the test starts, with a header for its credential', async () => {
    const { url, child } = await startHttpFixture(['--token', 'sesame']);
    children.push(child);
    const a = await ok({
      URL: url,
      Headers: [{ Key: 'Authorization', Value: 'Bearer sesame' }],
      TimeoutMs: 60_000,
    });
    checkFixture(a, 'http');
    const refused = await ok({ URL: url, TimeoutMs: 60_000 });
    assert.equal(refused.Success, false);
    assert.match(refused.Error, /401/);
  });

  test('failures are answers with their error: a program that exits, one that never answers', async () => {
    const failed = await ok({ Command: process.execPath, Args: [FIXTURE, '--fail'], TimeoutMs: 60_000 });
    assert.equal(failed.Success, false);
    assert.match(failed.Error, /cannot open the plant database/);
    const missing = await ok({ Command: '/no/such/program', TimeoutMs: 60_000 });
    assert.equal(missing.Success, false);
    assert.match(missing.Error, /ENOENT/);
    const pidfile = join(t.dataDir, 'hang.pid');
    const hang = await ok({
      Command: process.execPath,
      Args: [FIXTURE, '--hang', '--pidfile', pidfile],
      TimeoutMs: 8000,
    });
    assert.equal(hang.Success, false);
    // (8 s: on a loaded machine node takes seconds to start and write its pid)
    assert.match(hang.Error, /no complete answer within 8000 ms/);
    assert.ok(hang.DurationMs >= 7900 && hang.DurationMs < 30_000, `took ${hang.DurationMs} ms`);
    // The program was killed at the deadline.
    const pid = Number(readFileSync(pidfile, 'utf8'));
    await eventually(
      () => {
        try {
          process.kill(pid, 0);
          return false;
        } catch {
          return true;
        }
      },
      10_000,
      `process ${pid} killed`,
    );
    const closed = await ok({ URL: 'http://127.0.0.1:9/mcp', TimeoutMs: 5000 });
    assert.equal(closed.Success, false);
    assert.ok(closed.Error);
  });

  test('bad input is a 400 naming the field; a viewer cannot run it', async () => {
    for (const [input, message] of [
      [{}, /either Command \(stdio\) or URL/],
      [{ Command: 'x', URL: 'http://a/' }, /either Command \(stdio\) or URL/],
      [{ URL: 'file:///etc/passwd' }, /http: or https:/],
      [{ URL: 'http://127.0.0.1/', TimeoutMs: 10 }, /TimeoutMs must be an integer from 100 to 60000/],
      [{ URL: 'http://127.0.0.1/', Args: ['x'] }, /Args and Env go with Command/],
    ] as const) {
      const r = await run(input);
      assert.equal(r.body.data, null, r.text);
      assert.match(r.body.errors[0].message, message);
      assert.equal(r.body.errors[0].extensions.code, 'bad_request', r.text);
    }
    const v = await run({ Command: process.execPath, Args: [FIXTURE] }, viewer);
    assert.match(v.text, /viewer role cannot run mutations/);
  });
});
