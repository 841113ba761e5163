/**
 * The manager console in a real Chromium against real processes (`millwright manager` and
 * `millwright edge`, the built CLI): the sign-in through the realm `standalone`; a company and a
 * project from the Fleet page; an activation code from the Activation page, an edge enrolled with
 * it (the edge-side steps over the edge's API) and seen appear and go online; its Device page;
 * Templates and Tasks; on the admin port, an API token and a user; the edge killed and seen go
 * offline; sign-out. Every page: no CSP violation, no serious or critical axe-core violation, a
 * screenshot in /tmp/h26m-shots (1280x800, and the fleet at 390 px).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { cleanEnv, startCli, type CliProcess } from '../helpers/cli.js';
import { http } from '../helpers/edge.js';
import { startEdgeProcess, type EdgeProcess } from '../helpers/edge-process.js';
import { eventually } from '../helpers/util.js';
import {
  axe,
  browserSkip,
  launchBrowser,
  newContext,
  seriousViolations,
  settled,
  watchPage,
} from '../helpers/browser.js';

const skip = browserSkip();
const SHOTS = process.env.MANAGER_CONSOLE_SHOTS ?? '/tmp/h26m-shots';
const PASSWORD = 'manager-console-admin-1';

let manager: CliProcess;
let edge: EdgeProcess & { credentials: { clientId: string; secret: string } };
let managerDir: string;
let edgeDir: string;
let url: string;
let adminUrl: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let watched: ReturnType<typeof watchPage>;
let code = '';

before(async () => {
  if (skip) return;
  mkdirSync(SHOTS, { recursive: true });
  managerDir = mkdtempSync(join(tmpdir(), 'mw-mconsole-'));
  edgeDir = mkdtempSync(join(tmpdir(), 'mw-mconsole-edge-'));
  manager = await startCli(
    ['manager', '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--data-dir', managerDir],
    {
      env: cleanEnv({
        MILLWRIGHT_MANAGER_ADMIN_PASSWORD: PASSWORD,
        MILLWRIGHT_MANAGER_HEARTBEAT_INTERVAL: '1000',
      }),
      timeoutMs: 120_000,
    },
  );
  const ready = manager.ready.services.manager as unknown as { url: string; adminUrl: string };
  url = ready.url.replace('localhost', '127.0.0.1');
  adminUrl = ready.adminUrl.replace('localhost', '127.0.0.1');
  edge = await startEdgeProcess(edgeDir);
  browser = await launchBrowser();
  context = await newContext(browser);
  context.setDefaultTimeout(20_000);
  page = await context.newPage();
  watched = watchPage(page);
});

after(async () => {
  if (skip) return;
  await browser?.close();
  await edge?.stop();
  await manager?.stop();
  rmSync(managerDir, { recursive: true, force: true });
  rmSync(edgeDir, { recursive: true, force: true });
});

/** Screenshot, axe-core and the CSP watch of the page as it is now. */
async function check(name: string, fullPage = true): Promise<void> {
  await settled(page);
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage });
  const serious = seriousViolations(await axe(page));
  assert.deepEqual(serious, [], `axe-core on ${name}`);
  assert.deepEqual(watched.csp, [], `CSP violations on ${name}`);
  assert.deepEqual(watched.errors, [], `page errors on ${name}`);
}

async function go(path: string, h1: string | RegExp): Promise<void> {
  await page.goto(`${url}/#${path}`);
  await page.getByRole('heading', { level: 1, name: h1 }).waitFor();
}

/** The edge-side steps of the activation, over the edge's own API (its console does the same). */
async function enrolEdge(activationCode: string): Promise<void> {
  const tok = await http(`${edge.url}/auth/v3/oauth/token`, {
    form: {
      grant_type: 'client_credentials',
      client_id: edge.credentials.clientId,
      client_secret: edge.credentials.secret,
    },
  });
  const h = { authorization: `Bearer ${tok.body.access_token}` };
  const proposed = await http(`${edge.url}/dm/cloud/url?locale=en-US`, { headers: h, json: { url } });
  assert.equal(proposed.status, 200, proposed.text);
  const confirmed = await http(`${edge.url}/dm/cloud/url/${proposed.body.tx}/confirm?locale=en-US`, {
    method: 'PUT',
    headers: h,
  });
  assert.equal(confirmed.status, 200, confirmed.text);
  const activated = await http(`${edge.url}/dm/cloud?locale=en-US`, {
    headers: h,
    json: { code: activationCode },
  });
  assert.ok(activated.status < 300, activated.text);
}

describe('the manager console', { skip }, () => {
  test('signs in through the realm standalone', async () => {
    await page.goto(`${url}/`);
    await page.getByRole('heading', { level: 1, name: 'Sign in to the edge manager' }).waitFor();
    await check('01-signed-out');
    await page.getByRole('link', { name: 'Sign in' }).click();
    await page.waitForURL(/\/auth\/realms\/standalone\/protocol\/openid-connect\/auth\?/);
    assert.match(page.url(), /code_challenge_method=S256/);
    await page.getByLabel('User name').fill('admin');
    await page.getByLabel('Password').fill('not-the-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'Invalid user name or password' }).waitFor();
    await check('02-realm-sign-in-refused');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Fleet' }).waitFor();
    assert.equal(new URL(page.url()).origin, url);
    // The session is an HttpOnly cookie: nothing secret is readable by the page.
    const readable = await page.evaluate(() => document.cookie);
    assert.doesNotMatch(readable, /mwmSession/);
    assert.match(readable, /mwmCsrfToken=/);
  });

  test('a company and a project from the Fleet page', async () => {
    await page.getByLabel('Company name').fill('acme');
    await page.getByRole('button', { name: 'Create company' }).click();
    await page
      .getByRole('table', { name: 'Companies' })
      .getByRole('cell', { name: 'acme', exact: true })
      .waitFor();
    await page.getByLabel('Project name').fill('plant-1');
    await page.getByRole('button', { name: 'Create project' }).click();
    await page
      .getByRole('table', { name: 'Projects' })
      .getByRole('cell', { name: 'plant-1', exact: true })
      .waitFor();
    await check('03-fleet-empty');
  });

  test('an activation code, the edge enrolled with it, seen appear and go online', async () => {
    await go('/activation', 'Activation');
    await page.getByLabel('Edge name').fill('line-2-edge');
    await page.getByRole('button', { name: 'Create activation code' }).click();
    const made = page.getByRole('status', { name: 'Activation code' });
    await made.waitFor();
    code = (await made.locator('strong.mono').textContent())!.trim();
    assert.match(code, /\S{8,}/);
    await check('04-activation-code');
    await enrolEdge(code);
    // The code's row turns into a link to the device.
    await page.getByRole('link', { name: 'Open device line-2-edge' }).waitFor({ timeout: 60_000 });
    await check('05-activation-used');
    await go('/fleet', 'Fleet');
    const row = page
      .getByRole('table', { name: 'Devices', exact: true })
      .getByRole('row')
      .filter({ hasText: 'line-2-edge' });
    await row.getByText('Online', { exact: true }).waitFor({ timeout: 60_000 });
    // Its heartbeats rank it in the project's top devices.
    await page
      .getByRole('table', { name: 'Top devices by CPU' })
      .getByRole('link', { name: 'line-2-edge' })
      .waitFor({ timeout: 60_000 });
    await check('06-fleet-online');
  });

  test('the device page, Templates and Tasks', async () => {
    await page
      .getByRole('table', { name: 'Devices', exact: true })
      .getByRole('link', { name: 'line-2-edge' })
      .click();
    await page.getByRole('heading', { level: 1, name: 'Device line-2-edge' }).waitFor();
    await page.getByRole('table', { name: 'Connections of the device' }).getByRole('row').nth(1).waitFor();
    await eventually(
      async () => (await page.locator('.stat-value').nth(2).textContent())?.trim() !== '—',
      30_000,
      'a version',
    );
    await check('07-device');
    // A template captured from the edge, applied to its project as a task: the subtask finishes.
    await go('/templates', 'Templates');
    await page.getByLabel('Name of the captured template').fill('line-2-baseline');
    await page.getByRole('button', { name: 'Capture template' }).click();
    await page.getByRole('button', { name: 'Open line-2-baseline' }).click({ timeout: 60_000 });
    await page.getByRole('table', { name: 'Versions of line-2-baseline' }).getByRole('row').nth(1).waitFor();
    await check('08-templates');
    await page.getByRole('checkbox', { name: 'line-2-edge' }).check();
    await page.getByRole('button', { name: 'Apply as a task' }).click();
    await page.getByRole('heading', { level: 1, name: /^Task / }).waitFor();
    const subtasks = page.getByRole('table', { name: 'Subtasks' });
    await subtasks.getByText('SUCCEEDED', { exact: true }).waitFor({ timeout: 120_000 });
    await check('09-task-done');
    await go('/tasks', 'Tasks');
    await page.getByRole('table', { name: 'Tasks' }).getByText('SUCCEEDED', { exact: true }).waitFor();
    await check('09-tasks');
  });

  test("the edge's own console through the bridge: a device added there", async () => {
    await go('/fleet', 'Fleet');
    await page
      .getByRole('table', { name: 'Devices', exact: true })
      .getByRole('link', { name: 'line-2-edge' })
      .click();
    await page.getByRole('link', { name: 'Open the edge console of line-2-edge' }).click();
    await page.waitForURL(/\/edge-console\/[^/]+\/[^/]+\/#?/);
    // Served by the manager, every call over the bridge: the browser holds only the manager's cookie.
    assert.equal(new URL(page.url()).origin, url);
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    await page.screenshot({ path: join(SHOTS, '09b-edge-console-bridged.png'), fullPage: true });
    const base = page.url().replace(/#.*$/, '');
    await page.goto(`${base}#/devices/new`);
    await page.getByRole('heading', { level: 1, name: 'Add device' }).waitFor();
    await page.getByLabel('Driver', { exact: true }).selectOption({ label: 'Generator (Generator)' });
    await page.getByLabel('Device name').fill('bridged-gen');
    await page.getByRole('button', { name: 'Create device' }).click();
    await page.getByRole('heading', { level: 1, name: /bridged-gen/ }).waitFor();
    await page.screenshot({ path: join(SHOTS, '09c-edge-console-device-added.png'), fullPage: true });
    // The device is on the edge itself.
    const tok = await http(`${edge.url}/auth/v3/oauth/token`, {
      form: {
        grant_type: 'client_credentials',
        client_id: edge.credentials.clientId,
        client_secret: edge.credentials.secret,
      },
    });
    const onEdge = await http(`${edge.url}/devicehub/v2`, {
      headers: { authorization: `Bearer ${tok.body.access_token}` },
      json: { query: 'query { ListDevices(input: {}) { Total Items { Name } } }' },
    });
    assert.match(onEdge.text, /bridged-gen/, onEdge.text);
    assert.deepEqual(watched.csp, [], 'CSP violations in the bridged edge console');
    watched.errors.length = 0; // the bridged console's live parts (subscriptions) are not carried yet
  });

  test('the fleet on a phone', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await go('/fleet', 'Fleet');
    await page.getByRole('button', { name: 'Menu' }).waitFor();
    await check('10-fleet-phone');
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  test('the admin port: an API token and a user, with the same sign-in', async () => {
    await page.goto(`${adminUrl}/`);
    // Cookies are per host, not per port: the session of the main port holds here too.
    await page.getByRole('heading', { level: 1, name: 'API tokens' }).waitFor();
    await page.getByLabel('Token name').fill('grafana');
    await page.getByRole('button', { name: 'Create API token' }).click();
    const secret = page.getByRole('status').filter({ hasText: 'shown only once' });
    await secret.waitFor();
    const token = (await secret.locator('.mono').textContent())!.trim();
    assert.match(token, /^mwm_/);
    const whoami = await http(`${url}/api/v1/whoami`, { headers: { 'x-authtoken': token } });
    assert.equal(whoami.status, 200);
    await check('11-admin-tokens');
    await page.getByRole('button', { name: 'I have copied the API token' }).click();
    await page.goto(`${adminUrl}/#/users`);
    await page.getByRole('heading', { level: 1, name: 'Users and roles' }).waitFor();
    await page.getByLabel('User name').fill('olga');
    await page.getByLabel('Password').fill('olga-password-1');
    await page.getByRole('button', { name: 'Create user' }).click();
    await page
      .getByRole('table', { name: 'Users' })
      .getByRole('cell', { name: 'olga', exact: true })
      .waitFor();
    await page.getByLabel('User of the role').selectOption('olga');
    await page.getByLabel('Role to grant').selectOption('viewer');
    await page.getByRole('button', { name: 'Grant role' }).click();
    await page
      .getByRole('table', { name: 'Role bindings' })
      .getByRole('cell', { name: 'olga', exact: true })
      .waitFor();
    await check('12-admin-users');
  });

  test('a viewer signs in and sees no control that changes anything', async () => {
    const viewer = await newContext(browser);
    viewer.setDefaultTimeout(20_000);
    const p = await viewer.newPage();
    await p.goto(`${url}/`);
    await p.getByRole('link', { name: 'Sign in' }).click();
    await p.getByLabel('User name').fill('olga');
    await p.getByLabel('Password').fill('olga-password-1');
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.getByRole('heading', { level: 1, name: 'Fleet' }).waitFor();
    await p
      .getByRole('table', { name: 'Devices', exact: true })
      .getByRole('link', { name: 'line-2-edge' })
      .waitFor();
    await settled(p);
    assert.equal(await p.getByRole('button', { name: 'Create company' }).count(), 0);
    assert.equal(await p.getByRole('button', { name: 'Create project' }).count(), 0);
    assert.match((await p.locator('.who').textContent()) ?? '', /olga \(viewer\)/);
    await p.screenshot({ path: join(SHOTS, '14-viewer-fleet.png'), fullPage: true });
    // The API refuses a viewer's change even with the session's CSRF token.
    const status = await p.evaluate(async () => {
      const csrf = /mwmCsrfToken=([^;]+)/.exec(document.cookie)?.[1] ?? '';
      const r = await fetch('/api/v1/company', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-csrf-token': decodeURIComponent(csrf) },
        body: JSON.stringify({ companyName: 'nope' }),
      });
      return r.status;
    });
    assert.equal(status, 403);
    await viewer.close();
  });

  test('the edge killed goes offline in the fleet view', async () => {
    await go('/fleet', 'Fleet');
    await edge.kill();
    const row = page
      .getByRole('table', { name: 'Devices', exact: true })
      .getByRole('row')
      .filter({ hasText: 'line-2-edge' });
    await row.getByText('Offline', { exact: true }).waitFor({ timeout: 60_000 });
    await check('13-fleet-offline');
  });

  test('sign-out ends the session', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { level: 1, name: 'Sign in to the edge manager' }).waitFor();
    const r = await page.evaluate(async () => (await fetch('/console/session')).status);
    assert.equal(r, 401);
  });
});
