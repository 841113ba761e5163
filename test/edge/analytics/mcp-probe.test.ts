/**
 * The rules of `TestAISuiteMCPServer` that the GraphQL test cannot reach with an edge credential:
 * a stdio Command is refused to any role but admin (an operator is a manager's bridged call) before
 * anything runs, a URL is not; at most 4 tests run at once. Against the real fixture server.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { AppError } from '../../../src/kernel/errors.js';
import type { AuthContext } from '../../../src/kernel/http/auth-types.js';
import { MCP_PROBE, testMcpServer } from '../../../src/edge/analytics/mcp-probe.js';

const FIXTURE = join(import.meta.dirname, '../../fixtures/mcp/server.mjs');
const dir = mkdtempSync(join(tmpdir(), 'mw-mcp-probe-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const as = (role: AuthContext['role']): AuthContext => ({ subject: `test:${role}`, role, scheme: 'bearer' });

test('a stdio Command needs the admin role: an operator is refused before anything runs', async () => {
  const pidfile = join(dir, 'operator.pid');
  await assert.rejects(
    testMcpServer({ Command: process.execPath, Args: [FIXTURE, '--pidfile', pidfile] }, as('operator')),
    (err: unknown) =>
      err instanceof AppError &&
      err.status === 403 &&
      /a stdio Command needs the admin role/.test(err.message),
  );
  await assert.rejects(testMcpServer({ Command: process.execPath, Args: [FIXTURE] }, null), /anonymous role/);
  assert.equal(existsSync(pidfile), false, 'the program did not run');
  const ok = await testMcpServer(
    { Command: process.execPath, Args: [FIXTURE, '--pidfile', join(dir, 'admin.pid')], TimeoutMs: 60_000 },
    as('admin'),
  );
  assert.equal(ok.Success, true, ok.Error ?? '');
  assert.equal(existsSync(join(dir, 'admin.pid')), true);
});

test(`at most ${MCP_PROBE.concurrent} tests run at once; the next is refused with a 429`, async () => {
  const hanging = Array.from({ length: MCP_PROBE.concurrent }, () =>
    testMcpServer({ Command: process.execPath, Args: [FIXTURE, '--hang'], TimeoutMs: 3000 }, as('admin')),
  );
  await assert.rejects(
    testMcpServer({ URL: 'http://127.0.0.1:9/mcp', TimeoutMs: 1000 }, as('operator')),
    (err: unknown) => err instanceof AppError && err.status === 429,
  );
  for (const r of await Promise.all(hanging))
    assert.match(r.Error ?? '', /no complete answer within 3000 ms/);
  // Once they ended, an operator may test a URL (refused here by the closed port: an answer, not a 429).
  const r = await testMcpServer({ URL: 'http://127.0.0.1:9/mcp', TimeoutMs: 5000 }, as('operator'));
  assert.equal(r.Success, false);
  assert.equal(r.Transport, 'http');
});
