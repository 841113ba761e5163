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
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import mqtt, { type MqttClient } from 'mqtt';
import { cleanEnv, startCli, type CliProcess } from '../helpers/cli.js';
import { ModbusPeer } from '../helpers/peers/modbus.js';
import { Mosquitto } from '../helpers/peers/mosquitto.js';
import { eventually, skipUnless } from '../helpers/util.js';
import {
  axe,
  browserSkip,
  clippedContent,
  focusShown,
  launchBrowser,
  newContext,
  SCREENSHOTS,
  screenshot,
  seriousViolations,
  settled,
  type AxeViolation,
  tabTo,
  watchPage,
} from '../helpers/browser.js';

const skip = browserSkip() || (skipUnless('mosquitto') && skipUnless('/usr/sbin/mosquitto'));
const NEW_PASSWORD = 'console-admin-password-1';

let edge: CliProcess;
let dataDir: string;
let url: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let watched: ReturnType<typeof watchPage>;
let plcId = '';
const modbus = new ModbusPeer(1024);
/** Every page's axe-core violations (any impact), written to .test-output/console/axe-report.json. */
const axeReport: { page: string; violations: AxeViolation[] }[] = [];
const broker = new Mosquitto();

before(async () => {
  if (skip) return;
  dataDir = mkdtempSync(join(tmpdir(), 'mw-console-'));
  await modbus.start();
  modbus.holding[10] = 1234;
  await broker.start();
  edge = await startCli(
    // The OPC UA server on a free port too (4840 may be another edge's on this machine).
    [
      'edge',
      '--port',
      '0',
      '--datahub-port',
      '0',
      '--opcua-port',
      '0',
      '--host',
      '127.0.0.1',
      '--data-dir',
      dataDir,
    ],
    // The OPC UA server runs here (cleanEnv turns it off for the other suites): its page shows
    // the device hub synced into its address space.
    { env: cleanEnv({ MILLWRIGHT_EDGE_OPCUA_ENABLED: 'true' }), timeoutMs: 120_000 }, // a loaded machine can take long to start an edge
  );
  url = edge.ready.services.edge!.url;
  browser = await launchBrowser();
  context = await newContext(browser);
  context.setDefaultTimeout(15_000);
  page = await context.newPage();
  watched = watchPage(page);
});

after(async () => {
  if (skip) return;
  mkdirSync(SCREENSHOTS, { recursive: true });
  writeFileSync(join(SCREENSHOTS, 'axe-report.json'), JSON.stringify(axeReport, null, 2));
  await browser?.close();
  await edge?.stop();
  await modbus.stop();
  await broker.dispose();
  rmSync(dataDir, { recursive: true, force: true });
});

/** The page as served: no CSP violation, no script error, no serious axe-core violation; a screenshot. */
async function checkPage(name: string): Promise<void> {
  await settled(page);
  await screenshot(page, name);
  assert.deepEqual(watched.csp, [], `CSP violations on ${name}`);
  assert.deepEqual(watched.errors, [], `script errors on ${name}`);
  const violations = await axe(page);
  axeReport.push({ page: name, violations });
  assert.deepEqual(seriousViolations(violations), [], `axe-core on ${name}`);
  assert.deepEqual(await clippedContent(page), [], `content cut off or overlapping on ${name}`);
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
    await page.getByLabel(/^Password/).fill(edge.ready.services.edge!.firstRun!.password!);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { name: 'Accept the license agreement' }).waitFor();
    await checkPage('02-eula');
    await page.getByLabel('I agree to the license agreement').check();
    await page.getByRole('button', { name: /accept/i }).click();
    await page.getByRole('heading', { name: 'Change the first-run password' }).waitFor();
    await checkPage('03-password');
    await page.getByLabel('Current password').fill(edge.ready.services.edge!.firstRun!.password!);
    await page.getByLabel(/^New password/).fill(NEW_PASSWORD);
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

  test('a Generator device and a Modbus TCP device from the forms generated from the driver catalogue', async () => {
    await go('/devices', 'Devices and tags');
    await page.getByRole('link', { name: 'Add device' }).click();
    await page.getByRole('heading', { level: 1, name: 'Add device' }).waitFor();
    await settled(page);
    await screenshot(page, '05-device-form');
    await page.getByLabel('Driver', { exact: true }).selectOption({ label: 'Generator (Generator)' });
    await page.getByLabel('Device name').fill('gen1');
    await checkPage('05-device-form-generator');
    await page.getByRole('button', { name: 'Create device' }).click();
    await page.getByRole('heading', { level: 1, name: /gen1/ }).waitFor();
    await page.getByRole('button', { name: 'Show the tag form' }).click();
    await page.getByLabel('Register', { exact: true }).selectOption('S');
    await page.getByLabel('Tag name').fill('sine');
    await page.getByLabel('Value type').selectOption('float64');
    await page.getByLabel('Poll interval (ms)').fill('200');
    await page.getByLabel(/^address/i).fill('0');
    await page.getByRole('button', { name: 'Create tag' }).click();
    await page.getByRole('cell', { name: 'sine', exact: true }).waitFor();

    await go('/devices/new', 'Add device');
    await page.getByLabel('Driver', { exact: true }).selectOption({ label: 'Modbus TCP (Modbus)' });
    await page.getByLabel('Device name').fill('plc1');
    await page.getByLabel(/^host/i).fill('127.0.0.1');
    await page.getByLabel(/^port/i).fill(String(modbus.port));
    await page.getByRole('button', { name: 'Create device' }).click();
    await page.getByRole('heading', { level: 1, name: /plc1/ }).waitFor();
    plcId = new URL(page.url()).hash.split('/')[2]!;
    await page.getByRole('button', { name: 'Show the tag form' }).click();
    await page.getByLabel('Register', { exact: true }).selectOption('HR');
    await page.getByLabel('Tag name').fill('setpoint');
    await page.getByLabel('Value type').selectOption('uint16');
    await page.getByLabel('Poll interval (ms)').fill('200');
    await page.getByLabel(/^address/i).fill('10');
    await page.getByRole('button', { name: 'Create tag' }).click();
    await page.getByRole('cell', { name: 'setpoint', exact: true }).waitFor();
    await checkPage('06-device-plc1');
  });

  test('live values change on screen: the Generator moves, the Modbus value is shown', async () => {
    await go('/live', 'Live values');
    const sine = page.getByLabel('Value of gen1.sine');
    await sine.waitFor();
    const first = await eventually(async () => {
      const t = (await sine.textContent())?.trim();
      assert.ok(t && t !== '—' && t !== '', `a value: ${t}`);
      return t;
    }, 15_000);
    await eventually(async () => (await sine.textContent())?.trim() !== first, 15_000, 'the sine moves');
    await eventually(
      async () => (await page.getByLabel('Value of plc1.setpoint').textContent())?.trim() === '1234',
      15_000,
      'the Modbus value 1234 on screen',
    );
    await checkPage('07-live');
  });

  test('a write from the Live values page reaches the Modbus server', async () => {
    await go('/live', 'Live values');
    await page.getByRole('button', { name: 'Write setpoint' }).click();
    await page.getByLabel(/New value/).fill('4321');
    await page.getByRole('button', { name: 'Write value' }).click();
    await page.getByRole('button', { name: 'Write', exact: true }).click();
    const outcome = page.getByText(/^(Written|Refused): /).or(page.locator('.error-note'));
    await outcome.first().waitFor();
    await screenshot(page, '08-live-write', false);
    try {
      assert.equal((await outcome.first().textContent())?.trim(), 'Written: 4321');
      await eventually(() => modbus.holding[10] === 4321, 10_000, 'the Modbus server receives 4321');
    } finally {
      await page.getByRole('button', { name: 'Close', exact: true }).click();
    }
  });

  test('a 10,000-line CSV import shows its progress and its failures', async () => {
    await go('/devices', 'Devices and tags');
    await page.getByRole('link', { name: 'gen1', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: /gen1/ }).waitFor();
    // Polled hourly: 9,990 tags at the default 1 s would keep the edge (and the OPC UA server it
    // syncs them into) busy for the rest of the file, which is not what this test is about.
    const lines = ['DeviceName,TagName,Name,ValueType,Description,IntervalMs,Property.address'];
    for (let i = 0; i < 10_000; i++) {
      // Every thousandth line names a register the Generator does not have: a per-line failure.
      lines.push(`gen1,csv${i},${i % 1000 === 7 ? 'NOPE' : 'M'},float64,imported,3600000,${i}`);
    }
    await page.getByLabel('CSV file').setInputFiles({
      name: 'tags.csv',
      mimeType: 'text/csv',
      buffer: Buffer.from(lines.join('\n')),
    });
    await page.getByRole('button', { name: 'Import CSV' }).click();
    await page.getByRole('progressbar').first().waitFor();
    const result = page.getByLabel('Import result');
    await result.waitFor({ timeout: 60_000 });
    await eventually(
      async () => /Failed\s*10\b/.test((await result.textContent()) ?? ''),
      10_000,
      'Failed 10',
    );
    await page.getByRole('cell', { name: 'csv7', exact: true }).waitFor();
    await checkPage('09-csv-import');
  });

  test('the log tail: a new entry appears while the page is open; the level, component and text filters', async () => {
    await go('/logs', 'Logs');
    const rows = page.locator('table tbody tr');
    await rows.first().waitFor();
    // A new entry while the page is open: an API client made from the page (edge.auth logs it).
    const name = `tail-${Date.now()}`;
    const status = await page.evaluate(async (clientName) => {
      const csrf = decodeURIComponent(document.cookie.match(/(?:^|; )csrfToken=([^;]*)/)?.[1] ?? '');
      const res = await fetch('/auth/v3/api-clients', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
        body: JSON.stringify({ name: clientName, role: 'viewer' }),
      });
      return res.status;
    }, name);
    assert.equal(status, 201);
    await page.locator('tbody').getByText(name).first().waitFor({ timeout: 15_000 });
    const column = (label: string) =>
      page.$$eval(`tbody td[data-label="${label}"]`, (cells) =>
        cells.map((c) => c.textContent?.trim() ?? ''),
      );
    // The component filter: only edge.auth's entries.
    await page.getByLabel('Component').fill('edge.auth');
    await page.getByLabel('Component').press('Tab');
    await eventually(async () => {
      const components = await column('Component');
      assert.ok(components.length > 0 && components.every((c) => c === 'edge.auth'), components.join(', '));
      return true;
    }, 15_000);
    // The text filter (it searches the messages): the API clients' creations, the new one among them.
    await page.getByLabel('Text', { exact: true }).fill('api client created');
    await page.getByLabel('Text', { exact: true }).press('Tab');
    await eventually(async () => {
      const messages = await column('Message');
      assert.ok(
        messages.length >= 1 &&
          messages.every((m) => m.includes('api client created')) &&
          messages.some((m) => m.includes(name)),
        messages.join(' | '),
      );
      return true;
    }, 15_000);
    await checkPage('10-logs-filtered');
    // The level filter: warnings and worse only, whatever the component.
    await page.getByLabel('Text', { exact: true }).fill('');
    await page.getByLabel('Text', { exact: true }).press('Tab');
    await page.getByLabel('Component').fill('');
    await page.getByLabel('Component').press('Tab');
    await page.getByLabel('Minimum level').selectOption('warn');
    await eventually(async () => {
      const levels = await column('Level');
      assert.ok(
        levels.every((l) => ['warn', 'error', 'fatal'].includes(l)),
        levels.join(', '),
      );
      return true;
    }, 15_000);
    await page.getByLabel('Minimum level').selectOption('info');
    await rows.first().waitFor();
    await checkPage('10-logs');
  });

  test('an MQTT integration made from the forms to a Mosquitto of the test: its counters move on screen', async () => {
    let peer: MqttClient | undefined;
    try {
      peer = await mqtt.connectAsync(`mqtt://127.0.0.1:${broker.port}`);
      const got: string[] = [];
      peer.on('message', (topic) => got.push(topic));
      await peer.subscribeAsync('plant/#', { qos: 1 });

      await go('/integrations', 'Integrations');
      await page.getByRole('link', { name: 'Add MQTT instance', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Add MQTT instance' }).waitFor();
      const form = page.getByRole('form', { name: 'New MQTT instance' });
      await form.getByLabel('Instance name').fill('mqtt-console');
      await form.getByLabel('Host', { exact: true }).fill('127.0.0.1');
      await form.getByLabel('Port', { exact: true }).fill(String(broker.port));
      await checkPage('18-integration-form');
      await form.getByRole('button', { name: 'Create instance' }).click();
      await page.getByRole('heading', { level: 1, name: 'Integration mqtt-console' }).waitFor();

      // Out: the Generator's values to plant/<device>/<tag>; in: the broker's factory/# to the DataHub.
      const subs = page.getByRole('form', { name: 'New subscription' });
      await subs.getByLabel('DataHub subject').fill('devicehub.raw.gen1.sine');
      await subs.getByLabel('Remote name').fill('plant/{device}/{tag}');
      await subs.getByRole('button', { name: 'Add subscription' }).click();
      await page.getByRole('cell', { name: 'devicehub.raw.gen1.sine', exact: true }).waitFor();
      await subs.getByLabel('Direction').selectOption('in');
      await subs.getByLabel('DataHub subject').fill('remote.console.{topic}');
      await subs.getByLabel('Remote name').fill('factory/#');
      await subs.getByRole('button', { name: 'Add subscription' }).click();
      await page.getByRole('cell', { name: 'factory/#', exact: true }).waitFor();

      const counters = page.getByLabel('Instance counters');
      const stat = async (label: string) => {
        const text =
          (await counters.locator('.stat', { hasText: label }).locator('.stat-value').textContent()) ?? '';
        return Number(text.replace(/[^0-9]/g, '') || 'NaN');
      };
      await eventually(
        async () => (await counters.textContent())?.includes('Connected'),
        30_000,
        'Connected',
      );
      const sent = await eventually(async () => {
        const n = await stat('Sent');
        assert.ok(n > 0, `Sent ${n}`);
        return n;
      }, 30_000);
      await eventually(async () => (await stat('Sent')) > sent, 30_000, 'the Sent counter moves on screen');
      assert.ok(
        got.some((t) => t === 'plant/gen1/sine'),
        `topics at the broker: ${got.slice(0, 5)}`,
      );
      await peer.publishAsync('factory/line1/speed', JSON.stringify({ value: 7 }), { qos: 1 });
      await eventually(
        async () => (await stat('Received')) >= 1,
        30_000,
        'the Received counter moves on screen',
      );
      await checkPage('19-integration-instance');

      await go('/integrations', 'Integrations');
      const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'mqtt-console' }) });
      await eventually(
        async () => /Connected/.test((await row.textContent()) ?? ''),
        15_000,
        'state in the list',
      );
      await checkPage('11-integrations');
    } finally {
      await peer?.endAsync();
    }
  });

  test('a configuration template applied after its preview: the diff by section, a mode, the result', async () => {
    const template = {
      format: 'millwright.config-template',
      version: 1,
      createdAt: new Date().toISOString(),
      sections: {
        devicehub: {
          devices: [
            {
              Name: 'tpl-gen',
              DriverID: 'Generator',
              Description: 'from a template',
              Tags: [
                {
                  TagName: 'ramp',
                  Name: 'R',
                  ValueType: 'float64',
                  IntervalMs: 1000,
                  Properties: { address: '1' },
                },
              ],
            },
          ],
        },
      },
    };
    await go('/configuration', 'Configuration');
    await page.getByLabel('Template name').fill('console-tpl');
    await page.getByLabel('Template file').setInputFiles({
      name: 'console-tpl.json',
      mimeType: 'application/json',
      buffer: Buffer.from(JSON.stringify(template)),
    });
    await page.getByRole('button', { name: 'Upload template' }).click();
    await page.getByRole('button', { name: 'Preview console-tpl' }).click();
    await page.getByRole('region', { name: 'Apply template console-tpl' }).waitFor();
    await page.getByLabel('Apply mode').selectOption('merge-apply');
    assert.ok(
      await page.getByRole('button', { name: 'Apply template' }).isDisabled(),
      'no apply before a preview',
    );
    await page.getByRole('button', { name: 'Show preview' }).click();
    const outcome = page
      .getByRole('heading', { level: 3, name: /^Section / })
      .or(page.getByRole('alert'))
      .first();
    await outcome.waitFor();
    assert.equal((await outcome.textContent())?.trim(), 'Section devicehub: 2 added, 0 changed, 0 removed');
    assert.match(
      (await page.getByRole('region', { name: 'Preview by section' }).textContent()) ?? '',
      /\+ .*tpl-gen/,
    );
    await checkPage('20-configuration-preview');
    await page.getByRole('button', { name: 'Apply template' }).click();
    const dialog = page.getByRole('dialog', { name: 'Apply the template' });
    assert.match((await dialog.textContent()) ?? '', /mode merge-apply/);
    await dialog.getByRole('button', { name: 'Apply', exact: true }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /^Applied \(snapshot / })
      .waitFor();
    await page
      .getByRole('table', { name: 'Snapshots' })
      .getByRole('button', { name: /^Roll back to / })
      .first()
      .waitFor();
    await checkPage('21-configuration-applied');
    await go('/devices', 'Devices and tags');
    await page.getByRole('link', { name: 'tpl-gen', exact: true }).waitFor();
  });

  test("a tag's trend with history present: the chart draws the history's points", async () => {
    // The history (issue 36) has recorded gen1.sine since it was created (polled every 200 ms), a
    // minute or so by now: the hour's window has a bucket every 3.6 s.
    const buckets = await eventually(async () => {
      const n = await page.evaluate(async () => {
        const q = new URLSearchParams({
          tag: 'gen1.sine',
          from: String(Date.now() - 3_600_000),
          to: String(Date.now()),
        });
        const r = await fetch(`/history/aggregate?${q}`);
        const body = (await r.json()) as { series: { buckets: unknown[] }[] };
        return body.series[0]?.buckets.length ?? 0;
      });
      assert.ok(n >= 8, `history buckets of gen1.sine: ${n}`);
      return n;
    }, 60_000);
    await go('/live', 'Live values');
    await page.getByRole('button', { name: 'Trend sine' }).click();
    const region = page.getByRole('region', { name: 'Trend of gen1.sine' });
    await region.waitFor();
    // The caption counts the history's buckets; the chart holds them (and live values after).
    await eventually(async () => {
      const m = /\((\d+) buckets\)/.exec((await region.textContent()) ?? '');
      assert.ok(m && Number(m[1]) >= 8, `caption: ${await region.textContent()}`);
      return true;
    }, 15_000);
    const chart = page.getByRole('img', { name: 'Trend of gen1.sine' });
    await eventually(
      async () => Number(await chart.getAttribute('data-points')) >= buckets,
      15_000,
      'points',
    );
    // Drawn: the series' colour (#1d5fbf) covers pixels of the canvas along a line.
    const drawn = await eventually(async () => {
      const n = await chart.locator('canvas').evaluate((c: HTMLCanvasElement) => {
        const d = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
        let hits = 0;
        for (let i = 0; i < d.length; i += 4)
          if (
            Math.abs(d[i]! - 0x1d) < 40 &&
            Math.abs(d[i + 1]! - 0x5f) < 40 &&
            Math.abs(d[i + 2]! - 0xbf) < 40
          )
            hits++;
        return hits;
      });
      assert.ok(n > 200, `series pixels on the canvas: ${n}`);
      return n;
    }, 15_000);
    assert.ok(drawn > 200);
    await checkPage('07b-live-trend');
    await page.getByRole('button', { name: 'Close the trend' }).click();
  });

  test('keyboard only: the navigation, a form and a dialog with Tab, Shift+Tab, Enter and Escape; the focus always visible', async () => {
    await go('/overview', 'Overview');
    await page.reload(); // the focus at the start of the document
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    const shown: { name: string; visible: boolean }[] = [];
    // The first stop is the skip link: it moves the focus to the page's content, the route unchanged.
    shown.push(...(await tabTo(page, page.getByRole('link', { name: 'Skip to content' }), { max: 1 })));
    await page.keyboard.press('Enter');
    assert.ok(await page.locator('#main').evaluate((el) => el === document.activeElement), 'main focused');
    assert.match(page.url(), /#\/overview$/);
    // Back into the navigation (before the content), then along it.
    const nav = page.getByRole('navigation', { name: 'Primary' });
    shown.push(...(await tabTo(page, nav.getByRole('link', { name: 'Settings' }), { back: true })));
    shown.push(...(await tabTo(page, nav.getByRole('link', { name: 'Devices and tags' }), { back: true })));
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Devices and tags' }).waitFor();
    // The page's data replaces its loading state: a focus taken before then can fall to <body>.
    await settled(page);
    await page.keyboard.press('Shift+Tab');
    shown.push(await focusShown(page));
    shown.push(...(await tabTo(page, nav.getByRole('link', { name: 'Settings' }))));
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Settings' }).waitFor();
    await settled(page);

    // A form: an API client named and created with the keyboard.
    const form = page.getByRole('form', { name: 'New API client' });
    shown.push(...(await tabTo(page, form.getByLabel('Client name'))));
    await page.keyboard.type('kbd-client');
    shown.push(...(await tabTo(page, form.getByRole('button', { name: 'Create API client' }))));
    shown.push(...(await tabTo(page, form.getByLabel('Client name'), { back: true })));
    await page.keyboard.press('Enter'); // submits the form
    await page.getByRole('status').filter({ hasText: 'Client secret' }).waitFor();
    const done = page.getByRole('button', { name: 'I have copied the secret' });
    shown.push(...(await tabTo(page, done, { back: true })));
    await page.keyboard.press('Enter');
    await done.waitFor({ state: 'detached' });

    // A dialog: opened with Enter, closed with Escape (nothing deleted), opened again and confirmed.
    const del = page.getByRole('button', { name: 'Delete kbd-client' });
    shown.push(...(await tabTo(page, del, { back: true })));
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Delete API client' });
    await dialog.waitFor();
    const inDialog = await page.evaluate(() => !!document.activeElement?.closest('dialog'));
    assert.ok(inDialog, 'the focus moves into the dialog');
    shown.push(await focusShown(page));
    await screenshot(page, '22-keyboard-dialog', false);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    assert.ok(await del.evaluate((el) => el === document.activeElement), 'the focus returns to the button');
    await page.keyboard.press('Enter');
    await dialog.waitFor();
    const confirm = dialog.getByRole('button', { name: 'Delete API client' });
    if (!(await confirm.evaluate((el) => el === document.activeElement)))
      shown.push(...(await tabTo(page, confirm, { back: true, max: 3 })));
    await page.keyboard.press('Enter');
    await del.waitFor({ state: 'detached' });

    const hidden = shown.filter((f) => !f.visible);
    assert.deepEqual(hidden, [], 'elements focused without a visible focus indicator');
  });

  test('every other page, each with data of its own, loads under the CSP without a serious accessibility violation', async () => {
    // Digital twins: a model and an instance, made from the page's forms.
    await go('/twins', 'Digital twins');
    const model = page.getByRole('form', { name: 'New model' });
    await model.getByLabel('Model name').fill('pump');
    await model.getByLabel('Assets').fill('pump');
    await model.getByRole('button', { name: 'Create model' }).click();
    await page.getByRole('cell', { name: 'pump', exact: true }).first().waitFor();
    const instance = page.getByRole('form', { name: 'New instance' });
    await instance.getByLabel('Model of the instance').selectOption({ index: 1 });
    await instance.getByLabel('Instance name').fill('pump-7');
    await instance.getByRole('button', { name: 'Create instance' }).click();
    await page.getByRole('cell', { name: 'pump-7', exact: true }).waitFor();
    await checkPage('12-twins');

    // OPC UA server: the device hub synced into its address space.
    await go('/opcua', 'OPC UA server');
    await page.getByRole('button', { name: 'Sync now' }).click();
    // The tree is loaded again when the sync ends: the devices' folders, plc1's opened.
    const tree = page.getByRole('region', { name: 'OPC UA address space' });
    // 10,000 tags to sync: a while on a loaded machine.
    await page
      .getByText(/Last sync\s*(Succeeded|Failed)/)
      .waitFor({ timeout: 180_000 })
      .catch(async (err: unknown) => {
        await screenshot(page, 'failed-opcua-sync');
        throw err;
      });
    await tree.getByRole('button').first().waitFor({ timeout: 30_000 });
    const plc1 = tree.getByRole('button', { name: /plc1$/ });
    // Under a root folder, opened first when the devices are not at the top.
    if (!(await plc1.isVisible())) await tree.getByRole('button').first().click();
    await plc1.click();
    await tree.getByText('setpoint', { exact: true }).waitFor();
    await checkPage('13-opcua');

    // Analytics: a workspace made from the form; two processors in it (the page has no processor
    // form: they come from the API, as a script would make them), shown as a graph.
    await go('/analytics', 'Analytics');
    await page.getByLabel('New workspace name').fill('line-1');
    await page.getByRole('button', { name: 'Create workspace' }).click();
    await page.getByRole('option', { name: 'line-1' }).waitFor({ state: 'attached' });
    const made = await page.evaluate(async () => {
      const csrf = decodeURIComponent(document.cookie.match(/(?:^|; )csrfToken=([^;]*)/)?.[1] ?? '');
      const gql = async (query: string, variables: unknown) => {
        const r = await fetch('/analytics/v3', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
          body: JSON.stringify({ query, variables }),
        });
        return (await r.json()) as { data: any; errors?: unknown };
      };
      const ws = (
        await gql('{ GetWorkspaces(input: { Limit: 200 }) { Items { ID Name } } }', {})
      ).data.GetWorkspaces.Items.find((w: { Name: string }) => w.Name === 'line-1').ID;
      const create =
        'mutation C($in: CreateProcessorInstanceRequest!) { CreateProcessorInstance(input: $in) { ID } }';
      const avg = await gql(create, {
        in: {
          WorkspaceID: ws,
          Name: 'sine-avg',
          Kind: 'window',
          Parameters: { inputs: [{ subject: 'devicehub.raw.gen1.sine' }], statistic: 'mean', windowCount: 5 },
          Position: { X: 40, Y: 60 },
        },
      });
      const scaled = await gql(create, {
        in: {
          WorkspaceID: ws,
          Name: 'sine-scaled',
          Kind: 'expression',
          Parameters: {
            inputs: [{ processor: avg.data?.CreateProcessorInstance?.ID, name: 'a' }],
            expression: 'a * 100',
          },
          Position: { X: 320, Y: 140 },
        },
      });
      return [avg, scaled];
    });
    assert.ok(
      made.every((r) => !r.errors),
      JSON.stringify(made),
    );
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Analytics' }).waitFor();
    await page
      .getByRole('img', { name: 'Graph of 2 processors' })
      .or(page.getByLabel('Graph of 2 processors'))
      .first()
      .waitFor();
    await page.getByRole('cell', { name: 'sine-scaled', exact: true }).waitFor();
    await checkPage('14-analytics');

    for (const [path, heading, name] of [
      ['/configuration', 'Configuration', '15-configuration'],
      ['/settings', 'Settings', '16-settings'],
    ] as const) {
      await go(path, heading);
      await checkPage(name);
    }
  });

  test('on a 390-pixel-wide phone every page fits the screen, the navigation behind Menu', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    // Every page's problems, asserted at the end (so that one run names them all).
    const problems: string[] = [];
    const fits = async (name: string) => {
      await settled(page);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      await screenshot(page, `phone-${name}`);
      if (overflow > 1) problems.push(`${name} is ${overflow} px wider than the phone`);
      // Nothing cut off inside the page either (a table narrower than its content, an ellipsis,
      // a box sticking out) and nothing overlapping.
      problems.push(...(await clippedContent(page)).map((p) => `${name}: ${p}`));
      // axe-core on the phone layout too (tables as cards, the menu).
      const violations = await axe(page);
      axeReport.push({ page: `phone-${name}`, violations });
      problems.push(...seriousViolations(violations).map((v) => `${name}: axe-core ${v}`));
    };
    for (const [path, heading] of [
      ['/overview', 'Overview'],
      ['/devices', 'Devices and tags'],
      ['/live', 'Live values'],
      ['/integrations', 'Integrations'],
      ['/twins', 'Digital twins'],
      ['/opcua', 'OPC UA server'],
      ['/analytics', 'Analytics'],
      ['/configuration', 'Configuration'],
      ['/logs', 'Logs'],
      ['/settings', 'Settings'],
    ] as const) {
      await go(path, heading);
      if (path === '/live')
        await eventually(
          async () => (await page.getByLabel('Value of gen1.sine').textContent())?.trim() !== '–',
          15_000,
          'a value on the phone',
        );
      await fits(path.slice(1));
    }
    await go('/devices', 'Devices and tags');
    await page.getByRole('link', { name: 'plc1', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Device plc1' }).waitFor();
    await fits('device-plc1');
    await go('/integrations', 'Integrations');
    await page.getByRole('link', { name: 'mqtt-console', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Integration mqtt-console' }).waitFor();
    await fits('integration-instance');
    // The navigation is behind the Menu button.
    const menu = page.getByRole('button', { name: 'Menu' });
    assert.equal(await menu.getAttribute('aria-expanded'), 'false');
    assert.ok(!(await page.getByRole('navigation', { name: 'Primary' }).isVisible()));
    await menu.click();
    await page.getByRole('navigation', { name: 'Primary' }).getByRole('link', { name: 'Logs' }).click();
    await page.getByRole('heading', { level: 1, name: 'Logs' }).waitFor();
    await page.setViewportSize({ width: 1280, height: 800 });
    assert.deepEqual(problems, [], 'on the phone');
  });

  test('a viewer (an API client with the viewer role) sees no control that would change anything', async () => {
    // The admin makes the viewer's API client through the API, from the signed-in page (cookie + CSRF).
    const client = await page.evaluate(async () => {
      const csrf = document.cookie.match(/(?:^|; )csrfToken=([^;]*)/)?.[1] ?? '';
      const res = await fetch('/auth/v3/api-clients', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-csrf-token': decodeURIComponent(csrf) },
        body: JSON.stringify({ name: 'console-viewer', role: 'viewer' }),
      });
      return (await res.json()) as { client_id: string; client_secret: string };
    });
    assert.ok(client.client_id && client.client_secret, JSON.stringify(client));
    const viewerContext = await newContext(browser);
    const viewer = await viewerContext.newPage();
    try {
      await viewer.goto(`${url}/`);
      // The sign-in page settles (its providers and session check) before the switch sticks: on a
      // loaded machine a click before that can be undone by the first render; click until it shows.
      for (let i = 0; i < 5; i++) {
        await viewer.getByRole('button', { name: 'Use an API client' }).click({ timeout: 10_000 });
        const shown = await viewer
          .getByLabel(/^Client ID/)
          .waitFor({ timeout: 4_000 })
          .then(() => true)
          .catch(() => false);
        if (shown) break;
      }
      await viewer.getByLabel(/^Client ID/).fill(client.client_id);
      await viewer.getByLabel(/^Client secret/).fill(client.client_secret);
      await viewer.getByRole('button', { name: 'Sign in with the API client' }).click();
      await viewer.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
      // Each page with its data on screen (what an admin would act on), and no control to act.
      for (const [path, heading, shows] of [
        ['/devices', 'Devices and tags', 'plc1'],
        ['/devices/' + plcId, 'Device plc1', 'setpoint'],
        ['/live', 'Live values', 'Value of gen1.sine'],
        ['/integrations', 'Integrations', 'mqtt-console'],
        ['/twins', 'Digital twins', 'Models'],
        ['/configuration', 'Configuration', 'console-tpl'],
        ['/settings', 'Settings', 'console-viewer'],
      ] as const) {
        await viewer.goto(`${url}/#${path}`);
        await viewer.getByRole('heading', { level: 1, name: heading }).waitFor();
        await settled(viewer);
        await viewer.getByText(shows, { exact: true }).or(viewer.getByLabel(shows)).first().waitFor();
        if (path === '/live') {
          // Live values with an API client's token: the browser cannot send it on the WebSocket
          // upgrade, so the console sends it in connection_init, which the edge checks.
          const sine = viewer.getByLabel('Value of gen1.sine');
          const first = await eventually(async () => {
            const t = (await sine.textContent())?.trim();
            assert.ok(t && t !== '–', `a live value for the API client: ${t}`);
            return t;
          }, 15_000);
          await eventually(async () => (await sine.textContent())?.trim() !== first, 15_000, 'it moves');
          await screenshot(viewer, '17b-viewer-live');
        }
        const controls = await viewer
          .getByRole('button', {
            name: /^(add|create|delete|write|import|apply|start|stop|upload|save|remove|rotate|new|roll|revoke|sync|browse|change|preview|show preview|test)\b/i,
          })
          .or(viewer.getByRole('link', { name: /^(add|edit|new)\b/i }))
          .allTextContents();
        assert.deepEqual(controls, [], `mutation controls a viewer sees on ${path}`);
      }
      await screenshot(viewer, '17-viewer-devices');
      // The API client's token is in the tab's memory only.
      const storage = await viewer.evaluate(() => JSON.stringify({ ...localStorage, ...sessionStorage }));
      assert.doesNotMatch(storage, /eyJ|secret|token/i, storage);
    } finally {
      await viewerContext.close();
    }
  });
});
