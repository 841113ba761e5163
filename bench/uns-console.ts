/**
 * bench/uns-console: the UNS console's budgets (issue 26), against the built UNS (`npm run build`
 * first; the CLI in dist/ serves dist/console/uns):
 *
 * 1. Initial JavaScript: the entry script of index.html and its `modulepreload`s, gzipped (level
 *    9) as the UNS sends them. Budget 250 KB, the edge console's. All JavaScript beside it.
 * 2. Topic tree: from the sign-in click to the Topic tree page showing the first 100 values of a
 *    topic with `--topics` (1,000) retained children, in Chromium headless. Budget 3 s.
 *
 * Each run starts its own `millwright uns` in a fresh data directory; `--runs 3` (default) runs
 * three in a row and prints a Markdown table for docs/performance.md.
 *
 *   npm run build && npm run bench -- uns-console [--runs 3] [--topics 1000]
 */
import { readdirSync, readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { launchBrowser, newContext } from '../test/helpers/browser.js';
import {
  PROCESS_ACCOUNT,
  UNS_ADMIN_PASSWORD,
  connectMqtt,
  publish,
  startUnsProcess,
} from '../test/helpers/uns.js';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const RUNS = arg('runs', 3);
const TOPICS = arg('topics', 1000);
const DIST = join(import.meta.dirname, '../dist/console/uns');
const KB = 1024;
const BUDGET_INITIAL_KB = 250;
const BUDGET_TREE_MS = 3000;

function bundleSizes(): { initial: number; initialRaw: number; css: number; all: number } {
  const html = readFileSync(join(DIST, 'index.html'), 'utf8');
  const initial = [
    ...html.matchAll(/<script[^>]+src="\/([^"]+\.js)"/g),
    ...html.matchAll(/<link[^>]+rel="modulepreload"[^>]+href="\/([^"]+\.js)"/g),
  ].map((m) => m[1]!);
  const assets = readdirSync(join(DIST, 'assets')).map((f) => `assets/${f}`);
  const gz = (f: string) => gzipSync(readFileSync(join(DIST, f)), { level: 9 }).length;
  const raw = (f: string) => readFileSync(join(DIST, f)).length;
  const sum = (list: string[], size: (f: string) => number) => list.reduce((n, f) => n + size(f), 0);
  return {
    initial: sum(initial, gz),
    initialRaw: sum(initial, raw),
    css: sum(
      assets.filter((f) => f.endsWith('.css')),
      gz,
    ),
    all: sum(
      assets.filter((f) => f.endsWith('.js')),
      gz,
    ),
  };
}

async function run(): Promise<number> {
  const uns = await startUnsProcess();
  const browser = await launchBrowser();
  try {
    const client = await connectMqtt(uns.mqttUrl, PROCESS_ACCOUNT);
    for (let i = 0; i < TOPICS; i++) {
      await publish(client, `bench/t${String(i).padStart(5, '0')}`, String(i), { retain: true });
    }
    client.end(true);
    const context = await newContext(browser);
    context.setDefaultTimeout(60_000);
    const page = await context.newPage();
    await page.goto(`${uns.url}/`);
    await page.getByLabel('User name').fill('admin');
    await page.getByLabel(/^Password/).fill(UNS_ADMIN_PASSWORD);
    const started = performance.now();
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Broker' }).waitFor();
    await page.goto(`${uns.url}/#/topics`);
    await page.getByRole('button', { name: 'Expand bench' }).click();
    await page.getByLabel('Value of bench/t00099').waitFor();
    return performance.now() - started;
  } finally {
    await browser.close();
    await uns.stop();
  }
}

const sizes = bundleSizes();
const load = loadavg()[0]!.toFixed(2);
const times: number[] = [];
for (let i = 0; i < RUNS; i++) times.push(await run());
console.log(
  `\nmachine: ${cpus().length} cores; load average (1 min) ${load} before, ${loadavg()[0]!.toFixed(2)} after\n`,
);
console.log('| What | Measured | Budget |');
console.log('| --- | --- | --- |');
console.log(
  `| Initial JavaScript (gzipped; raw ${(sizes.initialRaw / KB).toFixed(1)} KB) | ${(sizes.initial / KB).toFixed(1)} KB | ${BUDGET_INITIAL_KB} KB |`,
);
console.log(`| CSS (gzipped) | ${(sizes.css / KB).toFixed(1)} KB | |`);
console.log(`| All JavaScript (every page, gzipped) | ${(sizes.all / KB).toFixed(1)} KB | |`);
times.forEach((t, i) =>
  console.log(
    `| Run ${i + 1}: sign-in click → 100 of ${TOPICS} topic values shown | ${Math.round(t)} ms | ${BUDGET_TREE_MS} ms |`,
  ),
);
const over = sizes.initial / KB > BUDGET_INITIAL_KB || times.some((t) => t > BUDGET_TREE_MS);
if (over) console.log('\nOVER BUDGET');
process.exitCode = over ? 1 : 0;
