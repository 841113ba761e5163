/**
 * The identity module's configuration section (API clients) through its repository, in the
 * apply's transaction: a changed role revokes the tokens issued before it, a secret the template
 * leaves out is kept, a client the edge does not have needs its secret, and mode `use` removes
 * the clients the template does not have.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildEdgeApp, type EdgeShell } from '../../../src/edge/service.js';
import { edgeConfigWith } from '../../../src/edge/service.js';
import type { ApplyMode } from '../../../src/kernel/service/config-section.js';
import type { AuthSection } from '../../../src/edge/auth/config-section.js';
import type { EdgeAuth } from '../../../src/edge/auth/module.js';

let shell: EdgeShell;
let auth: EdgeAuth;
const dataDir = mkdtempSync(join(tmpdir(), 'mw-auth-section-'));

before(async () => {
  shell = await buildEdgeApp(
    edgeConfigWith({ dataDir, datahubGateway: false, opcuaEnabled: false, logLevel: 'error' }),
  );
  auth = shell.module('auth');
});
after(async () => {
  await shell.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function apply(next: AuthSection, mode: ApplyMode, failFast = true) {
  const later: Array<() => void | Promise<void>> = [];
  const failed: Array<{ item: string; message: string }> = [];
  assert.deepEqual(auth.configSection.validate(next), []);
  await shell.database.transaction((trx) =>
    auth.configSection.apply(next, {
      mode,
      trx,
      failFast,
      fail: (item, message) => failed.push({ item, message }),
      afterCommit: (fn) => later.push(fn),
      progress: () => undefined,
    }),
  );
  for (const fn of later) await fn();
  return failed;
}

const bearer = (token: string) => auth.service.authenticate(`Bearer ${token}`, undefined);

test('a changed role revokes the tokens issued before; a secret left out is kept', async () => {
  const robot = await auth.service.createClient('robot', 'viewer');
  const first = (await auth.service.issueToken(robot.client_id, robot.client_secret))!.token;
  assert.equal((await bearer(first))?.role, 'viewer');
  const own = await auth.configSection.export();
  assert.deepEqual(auth.configSection.diff(own, structuredClone(own), 'use').changed, []);
  await sleep(5);
  const { secret: _left, ...withoutSecret } = own.apiClients.find((c) => c.client_id === robot.client_id)!;
  await apply({ apiClients: [{ ...withoutSecret, role: 'admin' }] }, 'legacy');
  await assert.rejects(bearer(first), /token revoked/);
  const again = await auth.service.issueToken(robot.client_id, robot.client_secret);
  assert.ok(again, 'the secret the template left out still works');
  assert.equal((await bearer(again.token))?.role, 'admin');
  // The same template again: nothing changes, the new token stays valid.
  await sleep(5);
  await apply({ apiClients: [{ ...withoutSecret, role: 'admin' }] }, 'legacy');
  assert.equal((await bearer(again.token))?.role, 'admin');
});

test('a client the edge does not have needs its secret; use removes the clients left out', async () => {
  const own = await auth.configSection.export();
  const stranger = { client_id: 'from-elsewhere', name: 'stranger', role: 'viewer' };
  await assert.rejects(apply({ apiClients: [...own.apiClients, stranger] }, 'legacy'), (err: Error) => {
    assert.match(
      err.message,
      /^section auth: apiClients\[\d\] \(from-elsewhere\): api client "from-elsewhere" has no secret in the template/,
    );
    return true;
  });
  const failed = await apply({ apiClients: [...own.apiClients, stranger] }, 'legacy', false);
  assert.deepEqual(
    failed.map((f) => f.item),
    [`auth: apiClients[${own.apiClients.length}] (from-elsewhere)`],
  );
  const robot = own.apiClients.find((c) => c.name === 'robot')!;
  const token = await auth.service.createClient('other', 'viewer');
  const issued = (await auth.service.issueToken(token.client_id, token.client_secret))!.token;
  await apply({ apiClients: [robot] }, 'use');
  assert.deepEqual(
    (await auth.configSection.export()).apiClients.map((c) => c.name),
    ['robot'],
  );
  await assert.rejects(bearer(issued), /no longer exists/);
});
