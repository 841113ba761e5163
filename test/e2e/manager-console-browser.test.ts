/**
 * The manager console in a real Chromium against real processes started as a user does (the
 * built CLI): `millwright up` (edge, UNS and manager in one process, its edge enrolled in the
 * manager as "local edge") and a second edge, `millwright edge`. The sign-in through the realm
 * `standalone`; the first edge online in the fleet; an activation code from the Activation page,
 * the second edge enrolled with the code shown there (the edge-side steps over the edge's API)
 * and seen appear and go online; its Device page; a template captured from it and applied to the
 * project's two edges, both subtasks seen finish; its own console through the bridge, a Generator
 * device added there and its values seen move on the Live values page (a subscription relayed
 * over the link); on the admin port, an API token and a user; a viewer; the second edge killed
 * and seen go offline; sign-out. Every page: no CSP violation, no serious or critical axe-core
 * violation, a screenshot in /tmp/h26m-shots (1280x800, and the fleet at 390 px).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { cleanEnv, startCli, UP_PORTS_FREE, type CliProcess } from '../helpers/cli.js';
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

/** `millwright up`: the first edge, the UNS and the manager. */
let up: CliProcess;
/** The second edge, `millwright edge`, enrolled from the console's activation code. */
let edge: EdgeProcess & { credentials: { clientId: string; secret: string } };
let upDir: string;
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
  upDir = mkdtempSync(join(tmpdir(), 'mw-mconsole-up-'));
  edgeDir = mkdtempSync(join(tmpdir(), 'mw-mconsole-edge-'));
  up = await startCli(
    ['up', '--host', '127.0.0.1', '--port', '0', '--datahub-port', '0', '--data-dir', upDir],
    {
      env: cleanEnv({
        ...UP_PORTS_FREE,
        MILLWRIGHT_MANAGER_ADMIN_PASSWORD: PASSWORD,
        MILLWRIGHT_MANAGER_HEARTBEAT_INTERVAL: '1000',
      }),
      timeoutMs: 180_000,
    },
  );
  const ready = up.ready.services.manager as unknown as { url: string; adminUrl: string };
  url = ready.url.replace('localhost', '127.0.0.1');
  adminUrl = ready.adminUrl.replace('localhost', '127.0.0.1');
  edge = await startEdgeProcess(edgeDir, undefined, 180_000);
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
  await up?.stop();
  rmSync(upDir, { recursive: true, force: true });
  rmSync(edgeDir, { recursive: true, force: true });
});

/** A configuration template for any edge: one Generator device with one tag. */
const LINE_SIM_TEMPLATE = {
  format: 'millwright.config-template',
  version: 1,
  createdAt: '2026-11-27T00:00:00.000Z',
  sections: {
    devicehub: {
      devices: [
        {
          Name: 'line-sim',
          DriverID: 'Generator',
          Description: 'applied by the manager',
          Properties: {},
          MetaData: {},
          DHParams: [],
          WorkerParams: [],
          AliasTopics: false,
          Debug: false,
          Tags: [
            {
              TagName: 'speed',
              Name: 'S',
              ValueType: 'float64',
              Description: '',
              PublishCoV: false,
              TagFormula: '',
              IntervalMs: 1000,
              Properties: { address: '1' },
              MetaData: {},
            },
          ],
        },
      ],
    },
  },
};

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

  test("the edge of `millwright up` is online in the fleet, in company and project 'local'", async () => {
    await page
      .getByRole('table', { name: 'Projects' })
      .getByRole('cell', { name: 'local', exact: true })
      .first()
      .waitFor();
    const row = page
      .getByRole('table', { name: 'Devices', exact: true })
      .getByRole('row')
      .filter({ hasText: 'local edge' });
    await row.getByText('Online', { exact: true }).waitFor({ timeout: 60_000 });
    await check('03-fleet-up');
  });

  test('an activation code, the edge enrolled with it, seen appear and go online', async () => {
    await go('/activation', 'Activation');
    await page.getByLabel('Project', { exact: true }).selectOption({ label: 'local / local' });
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
    // A template captured from the second edge (its API clients have no secret in it: it is
    // for that edge); one uploaded from a file, a Generator device, applied to the project (both
    // edges) as a task: the two subtasks finish.
    await go('/templates', 'Templates');
    await page.getByLabel('Device to capture').selectOption({ label: 'line-2-edge' });
    await page.getByLabel('Name of the captured template').fill('line-2-baseline');
    await page.getByRole('button', { name: 'Capture template' }).click();
    await page.getByRole('button', { name: 'Open line-2-baseline' }).click({ timeout: 60_000 });
    await page.getByRole('table', { name: 'Versions of line-2-baseline' }).getByRole('row').nth(1).waitFor();
    await check('08-templates');
    await page.getByLabel('Template file').setInputFiles({
      name: 'line-sim.json',
      mimeType: 'application/json',
      buffer: Buffer.from(JSON.stringify(LINE_SIM_TEMPLATE)),
    });
    await page.getByLabel('Template name').fill('line-sim');
    await page.getByRole('button', { name: 'Upload template' }).click();
    await page.getByRole('button', { name: 'Open line-sim' }).click();
    await page.getByRole('table', { name: 'Versions of line-sim' }).getByRole('row').nth(1).waitFor();
    await check('08b-template-uploaded');
    // Both edges of the project, chosen on the template's page.
    for (const box of await page.getByRole('group', { name: 'Devices' }).getByRole('checkbox').all())
      await box.check();
    await page.getByRole('button', { name: 'Apply as a task' }).click();
    await page.getByRole('heading', { level: 1, name: /^Task / }).waitFor();
    const subtasks = page.getByRole('table', { name: 'Subtasks' });
    await subtasks.getByRole('row').nth(2).waitFor();
    await eventually(
      async () => (await subtasks.getByText('SUCCEEDED', { exact: true }).count()) === 2,
      180_000,
      'both subtasks SUCCEEDED',
    ).catch(async (err: Error) => {
      await page.screenshot({ path: join(SHOTS, '09-task-not-done.png'), fullPage: true });
      throw new Error(`${err.message}: ${await subtasks.textContent()}`);
    });
    // The header and one row per edge of the project.
    assert.equal(await subtasks.getByRole('row').count(), 3);
    await check('09-task-done');
    await go('/tasks', 'Tasks');
    await page.getByRole('table', { name: 'Tasks' }).getByText('SUCCEEDED', { exact: true }).waitFor();
    await check('09-tasks');
  });

  test("the edge's own console through the bridge: a device added there, its values live", async () => {
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
    await check('09b-edge-console-bridged');
    const base = page.url().replace(/#.*$/, '');
    await page.goto(`${base}#/devices/new`);
    await page.getByRole('heading', { level: 1, name: 'Add device' }).waitFor();
    await page.getByLabel('Driver', { exact: true }).selectOption({ label: 'Generator (Generator)' });
    await page.getByLabel('Device name').fill('bridged-gen');
    await page.getByRole('button', { name: 'Create device' }).click();
    await page.getByRole('heading', { level: 1, name: /bridged-gen/ }).waitFor();
    await page.getByRole('button', { name: 'Show the tag form' }).click();
    await page.getByLabel('Register', { exact: true }).selectOption('S');
    await page.getByLabel('Tag name').fill('sine');
    await page.getByLabel('Value type').selectOption('float64');
    await page.getByLabel('Poll interval (ms)').fill('200');
    await page.getByLabel(/^address/i).fill('0');
    await page.getByRole('button', { name: 'Create tag' }).click();
    await page.getByRole('cell', { name: 'sine', exact: true }).waitFor();
    await check('09c-edge-console-device-added');
    // Live values: the TagValues subscription's WebSocket goes through the manager too.
    await page.goto(`${base}#/live`);
    await page.getByRole('heading', { level: 1, name: 'Live values' }).waitFor();
    const sine = page.getByLabel('Value of bridged-gen.sine');
    await sine.waitFor();
    const first = await eventually(async () => {
      const t = (await sine.textContent())?.trim();
      assert.ok(t && t !== '—' && t !== '–', `a value: ${t}`);
      return t;
    }, 30_000);
    await eventually(async () => (await sine.textContent())?.trim() !== first, 30_000, 'the sine moves');
    await check('09d-edge-console-live-bridged');
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
    assert.match(onEdge.text, /line-sim/, 'the template applied by the task');
    await page.goto(`${url}/#/fleet`); // the subscription's socket closes with the page
    await page.getByRole('heading', { level: 1, name: 'Fleet' }).waitFor();
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
