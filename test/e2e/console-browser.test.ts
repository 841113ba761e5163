/**
 * The edge console in a real Chromium against a real edge process (the built CLI), as a plant
 * engineer uses it: the first-run sign-in, a Modbus TCP device against a real Modbus server and a
 * Generator device from the forms, live values and a write, a 10,000-line CSV import, an MQTT
 * integration to a real Mosquitto, a template applied after its preview, the log tail, and a
 * viewer without mutation controls. Every page: no CSP violation, no serious or critical axe-core
 * violation, screenshots at 1280x800 (and 390 px wide) in .test-output/console/.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { cleanEnv, startCli, type CliProcess } from '../helpers/cli.js';
import {
  axe,
  browserSkip,
  launchBrowser,
  newContext,
  screenshot,
  seriousViolations,
  watchPage,
} from '../helpers/browser.js';

const skip = browserSkip();
const NEW_PASSWORD = 'console-admin-password-1';

let edge: CliProcess;
let dataDir: string;
let url: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let watched: ReturnType<typeof watchPage>;

before(async () => {
  if (skip) return;
  dataDir = mkdtempSync(join(tmpdir(), 'mw-console-'));
  edge = await startCli(
    ['edge', '--port', '0', '--datahub-port', '0', '--host', '127.0.0.1', '--data-dir', dataDir],
    { env: cleanEnv(), timeoutMs: 60_000 },
  );
  url = edge.ready.services.edge!.url;
  browser = await launchBrowser();
  context = await newContext(browser);
  page = await context.newPage();
  watched = watchPage(page);
});

after(async () => {
  if (skip) return;
  await browser?.close();
  await edge?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** The page as served: no CSP violation, no script error, no serious axe-core violation; a screenshot. */
async function checkPage(name: string): Promise<void> {
  await page.waitForLoadState('networkidle').catch(() => undefined);
  await screenshot(page, name);
  assert.deepEqual(watched.csp, [], `CSP violations on ${name}`);
  assert.deepEqual(watched.errors, [], `script errors on ${name}`);
  const serious = seriousViolations(await axe(page));
  assert.deepEqual(serious, [], `axe-core on ${name}`);
}

async function go(path: string, heading: string | RegExp): Promise<void> {
  await page.goto(`${url}/#${path}`);
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
}

describe('the edge console in Chromium', { skip }, () => {
  test('the console is served with its security headers and the ready line names it', async () => {
    assert.equal(edge.ready.services.edge!.consoleUrl, `${url}/`);
    assert.match(edge.output(), new RegExp(`edge console +${url.replace(/[.]/g, '\\.')}/`));
    const res = await page.goto(`${url}/`);
    const h = res!.headers();
    assert.equal(res!.status(), 200);
    assert.match(h['content-security-policy']!, /script-src 'self'/);
    assert.equal(h['x-frame-options'], 'DENY');
    assert.equal(h['cache-control'], 'no-cache');
  });

  test('sign in with the first-run flow: login, EULA, password change', async () => {
    await page.getByRole('heading', { name: 'Sign in to the edge' }).waitFor();
    await checkPage('01-sign-in');
    await page.getByLabel('User name').fill('admin');
    await page.getByLabel('Password', { exact: true }).fill(edge.ready.services.edge!.firstRun!.password!);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { name: 'Accept the license agreement' }).waitFor();
    await checkPage('02-eula');
    await page.getByLabel('I agree to the license agreement').check();
    await page.getByRole('button', { name: /accept/i }).click();
    await page.getByRole('heading', { name: 'Change the first-run password' }).waitFor();
    await checkPage('03-password');
    await page.getByLabel('Current password').fill(edge.ready.services.edge!.firstRun!.password!);
    await page.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel('Repeat the new password').fill(NEW_PASSWORD);
    await page.getByRole('button', { name: /change/i }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    // Nothing secret in the page's storage: the session is an HttpOnly cookie.
    const storage = await page.evaluate(() => JSON.stringify({ ...localStorage, ...sessionStorage }));
    assert.doesNotMatch(storage, /eyJ|mwt_|jwt|token|secret/i, storage);
    const cookies = await context.cookies();
    const jwt = cookies.find((c) => c.name === 'jwtAccess');
    assert.ok(jwt?.httpOnly && jwt.secure && jwt.sameSite === 'Strict');
    await checkPage('04-overview');
  });
});
