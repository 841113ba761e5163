/**
 * The UNS console in a real Chromium against a real `millwright uns` process: sign in, create an
 * account with a rule, publish with Mosquitto's `mosquitto_pub` and see the value in the topic
 * tree, the rule tester agreeing with the broker (real `mosquitto_pub`/`mosquitto_sub` attempts
 * allowed and refused), publish a test message, see a client's session and subscriptions and
 * disconnect it. Every page: no CSP violation, no script error, no serious or critical axe-core
 * violation, nothing cut off; screenshots at 1280x800 and 390x844 in `UNS_CONSOLE_SHOTS`
 * (default .test-output/console/uns).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import {
  axe,
  browserSkip,
  clippedContent,
  launchBrowser,
  newContext,
  SCREENSHOTS,
  seriousViolations,
  settled,
  tabTo,
  watchPage,
} from '../helpers/browser.js';
import { eventually, skipUnless } from '../helpers/util.js';
import {
  PROCESS_ACCOUNT,
  UNS_ADMIN_PASSWORD,
  connectMqtt,
  gql,
  publish,
  startUnsProcess,
  subscribe,
  unsToken,
  type UnsProcess,
} from '../helpers/uns.js';

const run = promisify(execFile);
const skip = browserSkip() || skipUnless('mosquitto_pub') || skipUnless('mosquitto_sub');
const SHOTS = process.env.UNS_CONSOLE_SHOTS ?? join(SCREENSHOTS, 'uns');

let uns: UnsProcess;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let watched: ReturnType<typeof watchPage>;

before(async () => {
  if (skip) return;
  uns = await startUnsProcess();
  browser = await launchBrowser();
  context = await newContext(browser);
  context.setDefaultTimeout(20_000);
  page = await context.newPage();
  watched = watchPage(page);
});

after(async () => {
  if (skip) return;
  await browser?.close();
  await uns?.stop();
});

async function shot(p: Page, name: string): Promise<void> {
  mkdirSync(SHOTS, { recursive: true });
  await p.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** The page as served: no CSP violation or script error, axe-core clean, nothing cut off; a screenshot. */
async function checkPage(p: Page, w: ReturnType<typeof watchPage>, name: string): Promise<void> {
  await settled(p);
  await shot(p, name);
  assert.deepEqual(w.csp, [], `CSP violations on ${name}`);
  assert.deepEqual(w.errors, [], `script errors on ${name}`);
  assert.deepEqual(seriousViolations(await axe(p)), [], `axe-core on ${name}`);
  assert.deepEqual(await clippedContent(p), [], `content cut off or overlapping on ${name}`);
}

async function go(p: Page, path: string, heading: string | RegExp): Promise<void> {
  await p.goto(`${uns.url}/#${path}`);
  await p.getByRole('heading', { level: 1, name: heading }).waitFor();
}

async function signIn(p: Page): Promise<void> {
  await p.goto(`${uns.url}/`);
  await p.getByRole('heading', { name: 'Sign in to the unified namespace' }).waitFor();
  await p.getByLabel('User name').fill('admin');
  await p.getByLabel(/^Password/).fill(UNS_ADMIN_PASSWORD);
  await p.getByRole('button', { name: 'Sign in', exact: true }).click();
  await p.getByRole('heading', { level: 1, name: 'Broker' }).waitFor();
}

/** `mosquitto_pub` as the account; answers its exit code and output. */
async function mosquittoPub(
  user: string,
  password: string,
  topic: string,
  message: string,
  extra: string[] = [],
): Promise<{ code: number; out: string }> {
  const args = ['-h', '127.0.0.1', '-p', String(uns.mqttPort), '-u', user, '-P', password, '-t', topic];
  try {
    const r = await run('mosquitto_pub', [...args, '-m', message, ...extra], { timeout: 20_000 });
    return { code: 0, out: r.stdout + r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

/** `mosquitto_sub` for `seconds`: the messages it printed (`topic payload` lines) and its output. */
async function mosquittoSub(
  user: string,
  password: string,
  topic: string,
  seconds: number,
  extra: string[] = [],
): Promise<{ code: number; out: string }> {
  const args = ['-h', '127.0.0.1', '-p', String(uns.mqttPort), '-u', user, '-P', password, '-t', topic, '-v'];
  try {
    const r = await run('mosquitto_sub', [...args, '-W', String(seconds), ...extra], { timeout: 30_000 });
    return { code: 0, out: r.stdout + r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

/** Asks the console's rule tester; answers the verdict line it shows. */
async function ruleTester(
  p: Page,
  user: string,
  action: 'publish' | 'subscribe',
  topic: string,
): Promise<string> {
  const form = p.getByRole('form', { name: 'Rule tester' });
  await form.getByLabel('Account to test').fill(user);
  await form.getByLabel('Action').selectOption(action);
  await form.getByLabel('Topic or filter').fill(topic);
  const status = p.locator('.verdict');
  await form.getByRole('button', { name: 'Test the rule' }).click();
  await eventually(
    async () => ((await status.textContent()) ?? '').includes(`${user} ${action} ${topic}`),
    15_000,
  );
  return (await status.textContent()) ?? '';
}

describe('the UNS console in Chromium', { skip }, () => {
  test('served with its security headers; sign in with the UNS administrator', async () => {
    const res = await page.goto(`${uns.url}/`);
    assert.equal(res!.status(), 200);
    const h = res!.headers();
    assert.match(h['content-security-policy']!, /script-src 'self'/);
    assert.equal(h['x-frame-options'], 'DENY');
    assert.match(uns.output(), /UNS console +https:\/\/127\.0\.0\.1:\d+\//);
    await page.getByRole('heading', { name: 'Sign in to the unified namespace' }).waitFor();
    await checkPage(page, watched, '01-sign-in');
    await page.getByLabel('User name').fill('admin');
    await page.getByLabel(/^Password/).fill('wrong-password');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('alert').filter({ hasText: 'invalid user name or password' }).waitFor();
    await page.getByLabel(/^Password/).fill(UNS_ADMIN_PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Broker' }).waitFor();
    const jwt = (await context.cookies()).find((c) => c.name === 'jwtAccess');
    assert.ok(jwt?.httpOnly && jwt.secure && jwt.sameSite === 'Strict');
    const storage = await page.evaluate(() => JSON.stringify({ ...localStorage, ...sessionStorage }));
    assert.doesNotMatch(storage, /eyJ|jwt|token/i);
    await page.getByText('Connections', { exact: true }).waitFor();
    await checkPage(page, watched, '02-broker');
  });

  test('create an account with a rule; the rule tester agrees with mosquitto_pub and mosquitto_sub', async () => {
    await go(page, '/accounts', 'Accounts and rules');
    const form = page.getByRole('form', { name: 'New account' });
    await form.getByLabel('Account user name').fill('line7');
    await form.getByLabel(/^Account password/).fill('line7-password');
    await form.getByLabel('First rule: topic filter').fill('plant/line7/#');
    await form.getByLabel('First rule: permission').selectOption('Pub');
    await form.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('link', { name: 'line7', exact: true }).waitFor();
    await page.getByRole('cell', { name: 'Pub plant/line7/#' }).waitFor();
    await checkPage(page, watched, '03-accounts');

    // Allowed by the tester, and by the broker: the value reaches a subscriber (the process's
    // account may subscribe to everything) and the tree.
    assert.match(
      await ruleTester(page, 'line7', 'publish', 'plant/line7/temp'),
      /Allowed.*allowed by Pub plant\/line7\/#/,
    );
    await checkPage(page, watched, '04-rule-tester-allowed');
    const watching = mosquittoSub(PROCESS_ACCOUNT.username, PROCESS_ACCOUNT.password, 'plant/#', 6);
    await new Promise((r) => setTimeout(r, 1500));
    const ok = await mosquittoPub('line7', 'line7-password', 'plant/line7/temp', '42.5', ['-q', '1', '-r']);
    assert.equal(ok.code, 0, ok.out);
    // Refused by the tester, and by the broker: MQTT 5 answers PUBACK 0x87 and nothing is delivered.
    assert.match(
      await ruleTester(page, 'line7', 'publish', 'plant/line8/temp'),
      /Refused.*no Pub or PubSub rule matches/,
    );
    await checkPage(page, watched, '05-rule-tester-refused');
    const refused = await mosquittoPub('line7', 'line7-password', 'plant/line8/temp', '13', [
      '-q',
      '1',
      '-V',
      'mqttv5',
    ]);
    const seen = await watching;
    assert.match(seen.out, /plant\/line7\/temp 42\.5/);
    assert.doesNotMatch(
      seen.out,
      /plant\/line8\/temp/,
      `the refused publish was delivered (mosquitto_pub: ${refused.out})`,
    );
    // Subscribe: the account has no Sub rule; the tester says so and the broker's SUBACK refuses it.
    assert.match(
      await ruleTester(page, 'line7', 'subscribe', 'plant/line7/#'),
      /Refused.*no Sub or PubSub rule covers/,
    );
    const sub = await mosquittoSub('line7', 'line7-password', 'plant/line7/#', 2);
    assert.match(sub.out, /denied/i);
    assert.match(await ruleTester(page, PROCESS_ACCOUNT.username, 'subscribe', 'plant/#'), /Allowed/);
  });

  test('the value published by mosquitto_pub is in the topic tree, retained; a test message is published', async () => {
    await go(page, '/topics', 'Topic tree');
    await page.getByRole('button', { name: 'Expand plant' }).click();
    await page.getByRole('button', { name: 'Expand plant/line7' }).click();
    const value = page.getByLabel('Value of plant/line7/temp');
    await eventually(
      async () => (await value.textContent())?.trim() === '42.5',
      15_000,
      'the value in the tree',
    );
    await page.getByRole('row', { name: /temp/ }).getByText('retained').waitFor();
    assert.equal(
      await page.getByLabel('Value of plant/line8/temp').count(),
      0,
      'the refused value is not in the tree',
    );
    // Live: a new value appears without a reload.
    const again = await mosquittoPub('line7', 'line7-password', 'plant/line7/temp', '43.0');
    assert.equal(again.code, 0, again.out);
    await eventually(
      async () => (await value.textContent())?.trim() === '43.0',
      15_000,
      'the new value in the tree',
    );
    await checkPage(page, watched, '06-topic-tree');
    const form = page.getByRole('form', { name: 'Publish a test message' });
    await form.getByLabel('Topic').fill('console/hello');
    await form.getByLabel('Payload').fill('hello from the console');
    await form.getByRole('button', { name: 'Publish message' }).click();
    await page.getByRole('button', { name: 'Expand console' }).click();
    await eventually(
      async () =>
        (await page.getByLabel('Value of console/hello').textContent())?.trim() === 'hello from the console',
      15_000,
    );
    await checkPage(page, watched, '07-topic-tree-published');
    // Bounded per browser: 100 children of a topic are listed, and the page says how many there are.
    const many = await connectMqtt(uns.mqttUrl, PROCESS_ACCOUNT);
    // QoS 1: each acknowledged before the client goes.
    for (let i = 0; i < 105; i++)
      await publish(many, `many/t${String(i).padStart(3, '0')}`, String(i), { qos: 1 });
    many.end(true);
    await page.getByRole('button', { name: 'Expand many' }).click();
    await page.getByText('the first 100 of 105 children are listed').waitFor();
    assert.equal(await page.getByLabel(/^Value of many\//).count(), 100);
  });

  test('a connected client with its session and subscriptions, disconnected from the console', async () => {
    const client = await connectMqtt(uns.mqttUrl, {
      username: PROCESS_ACCOUNT.username,
      password: PROCESS_ACCOUNT.password,
      clientId: 'press-12',
      clean: false,
      reconnectPeriod: 0,
    });
    await subscribe(client, 'plant/line7/#', 1);
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
    try {
      await go(page, '/clients', 'Connected clients');
      const row = page.getByRole('row', { name: /press-12/ });
      await row.waitFor();
      await row.getByText('plant/line7/# (QoS 1)').waitFor();
      await row.getByText('persistent').waitFor();
      await checkPage(page, watched, '08-clients');
      await row.getByRole('button', { name: 'Disconnect press-12' }).click();
      const dialog = page.getByRole('dialog', { name: 'Disconnect client' });
      await dialog.waitFor();
      await shot(page, '09-disconnect-dialog');
      await dialog.getByRole('button', { name: 'Disconnect' }).click();
      await closed;
      await page.getByRole('row', { name: /press-12/ }).waitFor({ state: 'detached' });
    } finally {
      client.end(true);
    }
  });

  test('the account page: rules and clients', async () => {
    await go(page, '/accounts', 'Accounts and rules');
    await page.getByRole('link', { name: 'line7', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Account line7' }).waitFor();
    const form = page.getByRole('form', { name: 'New rule' });
    await form.getByLabel('Topic filter').fill('plant/line7/cmd');
    await form.getByLabel('Permission').selectOption('Sub');
    await form.getByRole('button', { name: 'Add rule' }).click();
    await page.getByRole('cell', { name: 'plant/line7/cmd', exact: true }).waitFor();
    await checkPage(page, watched, '10-account');
  });

  test('phone width: every page, the menu behind a button', async () => {
    const phone = await newContext(browser, { width: 390, height: 844 });
    phone.setDefaultTimeout(20_000);
    const p = await phone.newPage();
    const w = watchPage(p);
    try {
      await signIn(p);
      await p.getByRole('button', { name: 'Menu' }).waitFor();
      await checkPage(p, w, '11-phone-broker');
      for (const [path, heading, name] of [
        ['/topics', 'Topic tree', '12-phone-topics'],
        ['/accounts', 'Accounts and rules', '13-phone-accounts'],
        ['/clients', 'Connected clients', '14-phone-clients'],
      ] as const) {
        await go(p, path, heading);
        await checkPage(p, w, name);
      }
      await p.getByRole('button', { name: 'Menu' }).click();
      await p.getByRole('navigation', { name: 'Primary' }).getByRole('link', { name: 'Topic tree' }).click();
      await p.getByRole('heading', { level: 1, name: 'Topic tree' }).waitFor();
    } finally {
      await phone.close();
    }
  });

  test('keyboard: the tree opens from the keyboard with a visible focus', async () => {
    await go(page, '/topics', 'Topic tree');
    const expand = page.getByRole('button', { name: 'Expand console' });
    await expand.waitFor();
    const seen = await tabTo(page, expand);
    assert.ok(seen.at(-1)!.visible, `the focus is visible: ${JSON.stringify(seen.at(-1))}`);
    await page.keyboard.press('Enter');
    await page.getByLabel('Value of console/hello').waitFor();
  });

  test('an operator reads every page and sees no control that changes anything', async () => {
    const token = await unsToken({ url: uns.url });
    await gql(
      { url: uns.url },
      token,
      'mutation { createUser(username: "op1", password: "operator-pass-1", role: operator) { username } }',
    );
    const ctx = await newContext(browser);
    ctx.setDefaultTimeout(20_000);
    const p = await ctx.newPage();
    const w = watchPage(p);
    try {
      await p.goto(`${uns.url}/`);
      await p.getByLabel('User name').fill('op1');
      await p.getByLabel(/^Password/).fill('operator-pass-1');
      await p.getByRole('button', { name: 'Sign in', exact: true }).click();
      await p.getByRole('heading', { level: 1, name: 'Broker' }).waitFor();
      await p.getByText('user:op1 (operator)').waitFor();
      await go(p, '/topics', 'Topic tree');
      await p.getByRole('button', { name: 'Expand plant' }).waitFor();
      assert.equal(await p.getByRole('form', { name: 'Publish a test message' }).count(), 0);
      await go(p, '/accounts', 'Accounts and rules');
      await p.getByRole('link', { name: 'line7', exact: true }).waitFor();
      assert.equal(await p.getByRole('form', { name: 'New account' }).count(), 0);
      assert.equal(await p.getByRole('button', { name: /^(Delete|Disable)/ }).count(), 0);
      // The rule tester is a query: an operator may use it.
      assert.match(await ruleTester(p, 'line7', 'publish', 'plant/line7/x'), /Allowed/);
      await checkPage(p, w, '15-operator-accounts');
      await go(p, '/clients', 'Connected clients');
      assert.equal(await p.getByRole('columnheader', { name: 'Actions' }).count(), 0);
    } finally {
      await ctx.close();
    }
  });

  test('a session that ends (its cookie gone) returns to the sign-in page at the next refresh', async () => {
    await go(page, '/overview', 'Broker');
    await context.clearCookies();
    await page.getByRole('heading', { name: 'Sign in to the unified namespace' }).waitFor();
    await signIn(page);
  });

  test('sign out', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to the unified namespace' }).waitFor();
    assert.equal(
      (await context.cookies()).find((c) => c.name === 'jwtAccess'),
      undefined,
    );
  });
});
