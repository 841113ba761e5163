/**
 * The browser tests' check that nothing is cut off or overlapping (`clippedContent`,
 * test/helpers/browser.ts), on small pages made for it in Chromium: it names what it should (a
 * cell cut with an ellipsis, a box sticking out of the window, a table wider than its wrapper,
 * two texts on top of each other) and passes a clean page, a skip link, screen-reader-only text
 * and a vertically scrolling list.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { browserSkip, clippedContent, launchBrowser, newContext } from '../helpers/browser.js';

const skip = browserSkip();
let browser: Browser;
let page: Page;

before(async () => {
  if (skip) return;
  browser = await launchBrowser();
  page = await (await newContext(browser, { width: 390, height: 844 })).newPage();
});
after(async () => {
  if (!skip) await browser?.close();
});

async function problems(body: string): Promise<string[]> {
  await page.setContent(
    `<!doctype html><html><body style="margin:0;font:16px sans-serif">${body}</body></html>`,
  );
  return clippedContent(page);
}

describe('clippedContent', { skip }, () => {
  test('a clean page, a skip link, screen-reader text and a scrolling list pass', async () => {
    const out = await problems(`
      <a href="#main" style="position:absolute;left:-9999px">Skip to content</a>
      <span style="position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)">a long hidden caption for screen readers</span>
      <main id="main"><h1>Title</h1><p>Some text that wraps as it should on a narrow phone screen.</p>
      <div style="overflow-y:auto;max-height:60px">${'<div style="height:30px">row</div>'.repeat(10)}</div></main>`);
    assert.deepEqual(out, []);
  });

  test('a cell cut with an ellipsis (the Live values table of before)', async () => {
    const out = await problems(`
      <table style="table-layout:fixed;width:200px"><tr>
        <td style="white-space:nowrap;overflow:hidden;text-overflow:ellipsis;width:40px">gen1.sine</td><td>1</td>
      </tr></table>`);
    assert.equal(out.length, 1, out.join('\n'));
    assert.match(out[0]!, /td "gen1.sine" cuts its content/);
  });

  test('a box sticking out of the window, and a table wider than its wrapper', async () => {
    const out = await problems(`
      <div style="width:500px">wide block</div>
      <div style="overflow-x:auto;width:300px"><table style="width:700px"><tr><td>a wide table</td></tr></table></div>`);
    assert.ok(
      out.some((p) => /div "wide block" sticks out of the window/.test(p)),
      out.join('\n'),
    );
    assert.ok(
      out.some((p) => /div "a wide table" cuts its content/.test(p)),
      out.join('\n'),
    );
  });

  test('two texts on top of each other', async () => {
    const out = await problems(`
      <div style="position:relative;height:40px">
        <span style="position:absolute;left:0;top:0">Sent 112</span>
        <span style="position:absolute;left:20px;top:4px">Received 1</span>
      </div>`);
    assert.ok(
      out.some((p) => /span "Sent 112" overlaps span "Received 1"/.test(p)),
      out.join('\n'),
    );
  });
});
