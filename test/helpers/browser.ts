/**
 * A real browser for the console's tests and bench: playwright-core driving Debian's Chromium
 * (`/usr/bin/chromium`, installed by the project's setup and `.ci/run`), headless, in a fresh
 * temporary profile (playwright's `launch` makes one per browser and removes it at close), with
 * axe-core for the accessibility checks and screenshots written to `.test-output/console/`.
 *
 * Absent Chromium: `browserSkip()` answers the reason to skip (printed by node:test); with
 * `CI=true` it throws instead, so CI cannot pass without the browser tests.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { skipUnless } from './util.js';

export const CHROMIUM = '/usr/bin/chromium';
// The clone's root, also when this file runs from .test-build/.
const built = join(import.meta.dirname, '../..');
const root = basename(built) === '.test-build' ? dirname(built) : built;
/** Where the screenshots go (gitignored); look at them. */
export const SCREENSHOTS = join(root, '.test-output/console');

/** The reason to skip the browser tests, or false; throws on CI without Chromium. */
export function browserSkip(): string | false {
  return skipUnless(CHROMIUM);
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/**
 * A browser context (its own cookies and storage) for the edge's self-signed certificate, with
 * the page's Content-Security-Policy enforced (the tests check that the console runs under it).
 */
export async function newContext(
  browser: Browser,
  viewport: { width: number; height: number } = { width: 1280, height: 800 },
): Promise<BrowserContext> {
  return browser.newContext({ ignoreHTTPSErrors: true, viewport, locale: 'en-US' });
}

/** What went wrong in a page: console errors (CSP violations among them) and uncaught errors. */
export function watchPage(page: Page): { errors: string[]; csp: string[] } {
  const errors: string[] = [];
  const csp: string[] = [];
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    const text = m.text();
    // A refused call (401 before sign-in, a 4xx the page shows) is the page's business, not an error.
    if (text.startsWith('Failed to load resource')) return;
    if (/Content.Security.Policy/i.test(text)) csp.push(text);
    else errors.push(text);
  });
  page.on('pageerror', (err) => errors.push(String(err)));
  return { errors, csp };
}

let axeSource: string | undefined;

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[]; html: string }[];
}

/**
 * Runs axe-core in the page (WCAG 2 A and AA rules and best practices) and answers its
 * violations. The script is evaluated through the DevTools protocol, which the page's CSP does
 * not govern, so the console is checked as served (no `bypassCSP`).
 */
export async function axe(page: Page): Promise<AxeViolation[]> {
  axeSource ??= readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  const loaded = await page.evaluate(() => typeof (globalThis as { axe?: unknown }).axe === 'object');
  if (!loaded) await page.evaluate(axeSource);
  return page.evaluate(async () => {
    const a = (globalThis as unknown as { axe: { run: (ctx: unknown, opts: unknown) => Promise<any> } }).axe;
    const result = await a.run(document, { resultTypes: ['violations'] });
    return (result.violations as any[]).map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: (v.nodes as any[])
        .slice(0, 5)
        .map((n) => ({ target: n.target, html: String(n.html).slice(0, 200) })),
    }));
  });
}

/** The serious and critical violations, described for an assertion message. */
export function seriousViolations(violations: AxeViolation[]): string[] {
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

/**
 * A screenshot `.test-output/console/<name>.png`, of the full page unless `fullPage` is false (a
 * modal dialog: its backdrop covers the window, not the whole page); answers its path.
 */
export async function screenshot(page: Page, name: string, fullPage = true): Promise<string> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const path = join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path, fullPage });
  return path;
}

/**
 * The checks of every view of a console test: the page settled, a screenshot `<dir>/<name>.png`,
 * no serious or critical axe-core violation, no CSP violation and no page error so far.
 */
export async function checkView(
  page: Page,
  watched: { errors: string[]; csp: string[] },
  dir: string,
  name: string,
  fullPage = true,
): Promise<void> {
  await settled(page);
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: join(dir, `${name}.png`), fullPage });
  const serious = seriousViolations(await axe(page));
  if (serious.length > 0) throw new Error(`axe-core on ${name}: ${serious.join('; ')}`);
  if (watched.csp.length > 0) throw new Error(`CSP violations on ${name}: ${watched.csp.join('; ')}`);
  if (watched.errors.length > 0) throw new Error(`page errors on ${name}: ${watched.errors.join('; ')}`);
}

/**
 * Presses Tab (Shift+Tab with `back`) until `target` has the focus, at most `max` times; answers
 * how each element that got the focus on the way showed it (its outline), so that a test can
 * check that the focus is always visible. Throws when the target is not reached.
 */
export async function tabTo(
  page: Page,
  target: Locator,
  { back = false, max = 60 }: { back?: boolean; max?: number } = {},
): Promise<{ name: string; visible: boolean }[]> {
  const seen: { name: string; visible: boolean }[] = [];
  for (let i = 0; i < max; i++) {
    await page.keyboard.press(back ? 'Shift+Tab' : 'Tab');
    seen.push(await focusShown(page));
    if (await target.evaluate((el) => el === document.activeElement).catch(() => false)) return seen;
  }
  throw new Error(
    `${max} presses of ${back ? 'Shift+Tab' : 'Tab'} did not reach ${target}: ${JSON.stringify(seen)}`,
  );
}

/** The focused element (tag and text) and whether its focus indicator is visible (an outline or a shadow). */
export async function focusShown(page: Page): Promise<{ name: string; visible: boolean }> {
  return page.evaluate(() => {
    const el = document.activeElement as HTMLElement | null;
    if (!el || el === document.body) return { name: 'body', visible: false };
    const s = getComputedStyle(el);
    const outline = s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2;
    const box = el.getBoundingClientRect();
    const onScreen = box.width > 0 && box.height > 0;
    const name = `${el.tagName.toLowerCase()} ${(el.getAttribute('aria-label') ?? el.textContent ?? '').trim().slice(0, 40)}`;
    return { name, visible: onScreen && (outline || s.boxShadow !== 'none') };
  });
}

/**
 * Waits (at most `ms`) until the page shows no loading state ("Loading…", "Measuring…", an
 * `aria-busy` element): a hash route is a same-document navigation, so `networkidle` says nothing.
 */
export async function settled(page: Page, ms = 20_000): Promise<void> {
  await page
    .waitForFunction(
      () =>
        !document.querySelector('[aria-busy="true"]') &&
        !/(^|\n)\s*(Loading…|Measuring…|Checking…)\s*(\n|$)/.test(document.body.innerText),
      undefined,
      { timeout: ms, polling: 100 },
    )
    .catch(() => undefined);
}

/**
 * Content the page cuts off, described (empty when nothing is): an element that sticks out of
 * the window at the left or right, an element whose content is wider or taller than its box while
 * it hides or scrolls the overflow (text cut with an ellipsis, a table wider than its wrapper), and
 * two elements with text or controls that overlap. Only what is rendered and visible counts;
 * screen-reader-only text (a 1-px clipped box), form fields (their own text scrolls inside), the
 * containers made to scroll vertically (a virtualized list) and a canvas marked `data-scrolls`
 * (the analytics graph, panned by scrolling) are left out.
 */
export async function clippedContent(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const problems: string[] = [];
    const describe = (el: Element) => {
      const h = el as HTMLElement;
      const cls =
        typeof h.className === 'string' && h.className ? `.${h.className.trim().split(/\s+/).join('.')}` : '';
      const label = h.getAttribute('aria-label') ?? (h.innerText ?? '').trim().replace(/\s+/g, ' ');
      return `${el.tagName.toLowerCase()}${cls} "${label.slice(0, 40)}"`;
    };
    const width = document.documentElement.clientWidth;
    const formField = (el: Element) => /^(INPUT|SELECT|TEXTAREA|OPTION|CANVAS|SVG)$/i.test(el.tagName);
    const hiddenText = (el: Element): boolean => {
      for (let e: Element | null = el; e; e = e.parentElement) {
        const r = e.getBoundingClientRect();
        // A 1-px box, or one put left of the window (a skip link until it has the focus).
        if (r.width <= 1 || r.height <= 1 || r.right <= 0) return true;
        if (e.classList.contains('sr-only')) return true;
      }
      return false;
    };
    const visible = (el: Element) => {
      const s = getComputedStyle(el);
      const r = el.getBoundingClientRect();
      return s.visibility !== 'hidden' && s.display !== 'none' && r.width > 0 && r.height > 0;
    };
    // Scrolled out of a scrolling container (a virtualized list's rows below its window): not shown.
    const inView = (el: Element): boolean => {
      const r = el.getBoundingClientRect();
      for (let e = el.parentElement; e && e !== document.body; e = e.parentElement) {
        const s = getComputedStyle(e);
        if (s.overflowX === 'visible' && s.overflowY === 'visible') continue;
        const c = e.getBoundingClientRect();
        if (r.bottom <= c.top || r.top >= c.bottom || r.right <= c.left || r.left >= c.right) return false;
      }
      return true;
    };
    const all = [...document.querySelectorAll('body *')].filter(
      (el) => !formField(el) && visible(el) && inView(el),
    );
    for (const el of all) {
      if (hiddenText(el) || el.closest('svg, dialog:not([open])')) continue;
      const r = el.getBoundingClientRect();
      if (r.right > width + 1 || r.left < -1)
        problems.push(
          `${describe(el)} sticks out of the window (${Math.round(r.left)}..${Math.round(r.right)} of ${width})`,
        );
      const s = getComputedStyle(el);
      const h = el as HTMLElement;
      // A canvas made to be panned (`data-scrolls`, the analytics graph) scrolls on purpose.
      const pans = h.dataset.scrolls !== undefined;
      const cutsX = !pans && s.overflowX !== 'visible' && h.scrollWidth > h.clientWidth + 1;
      const cutsY =
        s.overflowY !== 'visible' &&
        s.overflowY !== 'auto' &&
        s.overflowY !== 'scroll' &&
        h.scrollHeight > h.clientHeight + 1;
      if (cutsX || cutsY)
        problems.push(
          `${describe(el)} cuts its content (${h.scrollWidth}x${h.scrollHeight} in ${h.clientWidth}x${h.clientHeight})`,
        );
    }
    // Overlaps: the boxes of leaf texts and controls, pairwise within a neighbourhood.
    const leaves = all.filter(
      (el) =>
        !hiddenText(el) &&
        (/^(BUTTON|A|LABEL|INPUT|SELECT|TEXTAREA|IMG)$/.test(el.tagName) ||
          [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent!.trim() !== '')),
    );
    const boxes = leaves.map((el) => ({ el, r: el.getBoundingClientRect() }));
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i]!;
        const b = boxes[j]!;
        if (a.el.contains(b.el) || b.el.contains(a.el)) continue;
        const x = Math.min(a.r.right, b.r.right) - Math.max(a.r.left, b.r.left);
        const y = Math.min(a.r.bottom, b.r.bottom) - Math.max(a.r.top, b.r.top);
        if (x > 2 && y > 2) problems.push(`${describe(a.el)} overlaps ${describe(b.el)}`);
      }
    }
    return problems;
  });
}
