/**
 * The manager console's Templates page in a real Chromium against real processes (`millwright
 * manager` and `millwright edge`, the built CLI; the edge enrolled with an activation code): a
 * template uploaded as a file with a variable, a second one, a template composed of both; the
 * variable set for the device's scope; the preview on the device as a diff of its current
 * configuration; the apply as a task whose subtask finishes; with the edge stopped, a task
 * cancelled and resumed, finishing once the edge is back. Every view: no CSP violation, no serious
 * or critical axe-core violation, a screenshot in /tmp/h26b-shots (1280x800, and 390 px wide).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { cleanEnv, startCli, type CliProcess } from '../helpers/cli.js';
import { enrolEdgeProcess, startEdgeProcess, type EdgeProcess } from '../helpers/edge-process.js';
import { eventually } from '../helpers/util.js';
import {
  browserSkip,
  checkView,
  clippedContent,
  focusShown,
  launchBrowser,
  newContext,
  tabTo,
  watchPage,
} from '../helpers/browser.js';

const skip = browserSkip();
const SHOTS = process.env.MANAGER_TEMPLATES_SHOTS ?? '/tmp/h26b-shots';
const PASSWORD = 'manager-templates-admin-1';

let manager: CliProcess;
let edge: EdgeProcess & { credentials: { clientId: string; secret: string } };
let managerDir: string;
let edgeDir: string;
let url: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let watched: ReturnType<typeof watchPage>;

before(async () => {
  if (skip) return;
  managerDir = mkdtempSync(join(tmpdir(), 'mw-mtemplates-'));
  edgeDir = mkdtempSync(join(tmpdir(), 'mw-mtemplates-edge-'));
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
  url = (manager.ready.services.manager as unknown as { url: string }).url.replace('localhost', '127.0.0.1');
  edge = await startEdgeProcess(edgeDir);
  browser = await launchBrowser();
  context = await newContext(browser);
  context.setDefaultTimeout(30_000);
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

const check = (name: string) => checkView(page, watched, SHOTS, name);

/** A call of the manager's API from the signed-in page (its session cookie and CSRF token). */
async function api<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const r = await page.evaluate(
    async ({ method, path, body }) => {
      const csrf = /mwmCsrfToken=([^;]+)/.exec(document.cookie)?.[1] ?? '';
      const res = await fetch(path, {
        method,
        headers: {
          'x-csrf-token': decodeURIComponent(csrf),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, text: await res.text() };
    },
    { method, path, body },
  );
  assert.ok(r.status < 300, `${method} ${path}: ${r.status} ${r.text}`);
  return (r.text ? JSON.parse(r.text) : undefined) as T;
}

const doc = (sections: Record<string, unknown>, parameters?: Record<string, Record<string, string>>) =>
  JSON.stringify({
    format: 'millwright.config-template',
    version: 1,
    ...(parameters ? { parameters } : {}),
    sections,
  });

async function upload(name: string, file: string, text: string): Promise<void> {
  const form = page.getByRole('form', { name: 'Upload a template' });
  await form.getByLabel('Template name').fill(name);
  await form.getByLabel('Template file').setInputFiles({
    name: file,
    mimeType: 'application/json',
    buffer: Buffer.from(text),
  });
  await form.getByRole('button', { name: 'Upload template' }).click();
  await page.getByRole('table', { name: 'Templates' }).getByRole('cell', { name, exact: true }).waitFor();
}

const online = () =>
  eventually(
    async () =>
      (await api<{ items: { online: boolean }[] }>('GET', '/api/v1/device/list')).items[0]?.online === true,
    60_000,
    'the edge online',
  );

describe('the manager console: templates', { skip }, () => {
  test('sign in, and an edge enrolled into a project', async () => {
    await page.goto(`${url}/`);
    await page.getByRole('link', { name: 'Sign in' }).click();
    await page.getByLabel('User name').fill('admin');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Fleet' }).waitFor();
    const company = await api('POST', '/api/v1/company', { companyName: 'acme' });
    const project = await api('POST', '/api/v1/project', { companyId: company.id, name: 'plant-1' });
    const code = await api('POST', '/api/v1/activation/code', {
      projectId: project.id,
      deviceName: 'mixer-edge',
    });
    await enrolEdgeProcess(edge, url, code.code);
    await online();
  });

  test('upload with a variable, a second template, and one composed of both', async () => {
    await page.goto(`${url}/#/templates`);
    await page.getByRole('heading', { level: 1, name: 'Templates' }).waitFor();
    await upload(
      'mixers',
      'mixers.json',
      doc(
        {
          devicehub: {
            devices: [{ Name: 'mixer-1', DriverID: 'Generator', Description: 'mixer in {{area}}' }],
          },
        },
        { devicehub: { area: 'hall 1' } },
      ),
    );
    await upload('no keys', 'keys.json', doc({ datahub: { accessKeys: [] } }));
    const compose = page.getByRole('form', { name: 'Compose a template' });
    await compose.getByLabel('Name of the composed template').fill('mixers and keys');
    const parts = compose.getByRole('group', { name: 'Parts, in order' });
    await parts.getByRole('checkbox', { name: /^mixers \(v1/ }).check();
    await parts.getByRole('checkbox', { name: /^no keys \(v1/ }).check();
    await compose.getByRole('button', { name: 'Compose template' }).click();
    const row = page
      .getByRole('table', { name: 'Templates' })
      .getByRole('row')
      .filter({ hasText: 'mixers and keys' });
    await row.getByText('mixers (v1) + no keys (v1)').waitFor();
    await row.getByRole('button', { name: 'Open mixers and keys' }).click();
    const comp = page.getByRole('region', { name: 'Composition of mixers and keys' });
    await comp.getByText('Made of').waitFor();
    await comp
      .getByRole('table', { name: 'Sections of mixers and keys' })
      .getByRole('cell', { name: 'datahub' })
      .waitFor();
    await check('01-templates-composed');
    // A section in two parts is refused with the API's message.
    await compose.getByLabel('Name of the composed template').fill('clash');
    await parts.getByRole('checkbox', { name: /^mixers \(v1/ }).check();
    await parts.getByRole('checkbox', { name: /^mixers and keys/ }).check();
    await compose.getByRole('button', { name: 'Compose template' }).click();
    await compose.getByRole('alert').filter({ hasText: 'section "devicehub" is in both' }).waitFor();
  });

  test("the variable set for the device's scope, then the preview on the device as a diff", async () => {
    await page.getByRole('button', { name: 'Open mixers', exact: true }).click();
    const vars = page.getByRole('region', { name: 'Variables of mixers' });
    const values = vars.getByRole('table', { name: 'Values by scope of mixers' });
    await values.getByRole('row').filter({ hasText: 'Default' }).getByText('hall 1').waitFor();
    await vars.getByLabel('Scope', { exact: true }).selectOption('DEVICE');
    await vars.getByLabel('Device of the values').selectOption({ label: 'mixer-edge' });
    await vars.getByLabel('Value of area (devicehub)').fill('hall 7');
    await vars.getByRole('button', { name: 'Save the values' }).click();
    await values.getByRole('row').filter({ hasText: 'mixer-edge' }).getByText('hall 7').waitFor();
    const apply = page.getByRole('region', { name: 'Preview and apply mixers' });
    await apply.getByRole('checkbox', { name: 'mixer-edge' }).check();
    // The keyboard reaches the preview, with its focus shown.
    await apply.getByRole('checkbox', { name: 'mixer-edge' }).focus();
    const preview = apply.getByRole('button', { name: 'Preview on the chosen devices' });
    const shown = await tabTo(page, preview);
    assert.ok(
      shown.every((s) => s.visible),
      JSON.stringify(shown),
    );
    await page.keyboard.press('Enter');
    const result = page.getByRole('region', { name: 'Preview on mixer-edge' });
    await result
      .getByRole('table', { name: 'What applying changes on mixer-edge' })
      .getByRole('cell', { name: 'mixer-1' })
      .waitFor({ timeout: 60_000 });
    const diff = result.getByRole('figure', { name: /^devicehub on mixer-edge/ });
    await diff.locator('ins').filter({ hasText: '"Description": "mixer in hall 7"' }).waitFor();
    assert.ok((await diff.locator('ins').count()) > 0);
    await check('02-template-variables-preview');
    // The focus stays on the button that was pressed.
    assert.match((await focusShown(page)).name, /Preview on the chosen devices/);
  });

  test('applied to the device as a task: the subtask finishes', async () => {
    const apply = page.getByRole('region', { name: 'Preview and apply mixers' });
    await apply.getByRole('button', { name: 'Apply as a task' }).click();
    await page.getByRole('heading', { level: 1, name: /^Task apply template "mixers"/ }).waitFor();
    const subtasks = page.getByRole('table', { name: 'Subtasks' });
    await subtasks.getByRole('link', { name: 'mixer-edge' }).waitFor();
    await subtasks.getByText('SUCCEEDED', { exact: true }).waitFor({ timeout: 120_000 });
    await page.getByRole('group', { name: 'Task figures' }).getByText('1 of 1').waitFor();
    await check('03-task-succeeded');
  });

  test('with the edge stopped: a task cancelled, resumed, and done once the edge is back', async () => {
    await edge.stop();
    await eventually(
      async () =>
        (await api<{ items: { online: boolean }[] }>('GET', '/api/v1/device/list')).items[0]?.online ===
        false,
      60_000,
      'the edge offline',
    );
    await page.goto(`${url}/#/templates`);
    await page.getByRole('button', { name: 'Open mixers and keys' }).click();
    const apply = page.getByRole('region', { name: 'Preview and apply mixers and keys' });
    await apply.getByRole('checkbox', { name: 'mixer-edge (offline)' }).check();
    await apply.getByRole('button', { name: 'Apply as a task' }).click();
    await page.getByRole('heading', { level: 1, name: /^Task apply template "mixers and keys"/ }).waitFor();
    const progress = page.getByRole('region', { name: 'Task progress' });
    await progress.getByRole('button', { name: 'Cancel task' }).click();
    const subtasks = page.getByRole('table', { name: 'Subtasks' });
    await subtasks.getByText('CANCELLED', { exact: true }).waitFor();
    await check('04-task-cancelled');
    await progress.getByRole('button', { name: 'Resume task' }).click();
    await progress.getByRole('button', { name: 'Cancel task' }).waitFor();
    await subtasks.getByText(/^(PENDING|RETRY)$/).waitFor();
    await check('05-task-resumed');
    edge = await startEdgeProcess(edgeDir, edge.credentials);
    await subtasks.getByText('SUCCEEDED', { exact: true }).waitFor({ timeout: 120_000 });
    await check('06-task-resumed-done');
  });

  test('the templates page on a phone', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${url}/#/templates`);
    await page.getByRole('button', { name: 'Open mixers', exact: true }).click();
    await page.getByRole('table', { name: 'Values by scope of mixers' }).getByText('hall 7').waitFor();
    await check('07-templates-phone');
    assert.deepEqual(await clippedContent(page), [], 'nothing cut off at 390 px');
    await page.setViewportSize({ width: 1280, height: 800 });
  });
});
