/**
 * How the console's files are served (src/kernel/http/console.ts, as the edge console uses it; the
 * UNS and manager consoles are served by the same routes): index.html revalidated, hashed assets
 * cached for a year, gzip when accepted, ETag and 304, the security headers on every answer, a
 * 404 for an unknown asset, the "not built" page, and `--console=false` (no route at all).
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import Fastify from 'fastify';
import { consoleRoutes, IMMUTABLE, loadConsoleAssets } from '../../../src/kernel/http/console.js';
import { NOT_BUILT_PAGE } from '../../../src/edge/console/module.js';
import { startTestEdge } from '../../helpers/edge.js';

const dir = mkdtempSync(join(tmpdir(), 'mw-console-fixture-'));
after(() => rmSync(dir, { recursive: true, force: true }));
mkdirSync(join(dir, 'assets'));
writeFileSync(
  join(dir, 'index.html'),
  '<!doctype html><script type="module" src="/assets/index-AbCd1234.js"></script>',
);
const js = `console.log(${JSON.stringify('x'.repeat(5000))});`;
writeFileSync(join(dir, 'assets/index-AbCd1234.js'), js);
writeFileSync(join(dir, 'assets/plain.txt'), 'no hash here');

async function app(assets: ReturnType<typeof loadConsoleAssets>) {
  const a = Fastify();
  await a.register(consoleRoutes, { assets, notBuilt: NOT_BUILT_PAGE });
  return a;
}

test('index.html: no-cache with an ETag, the security headers, 304 on a match', async () => {
  const a = await app(loadConsoleAssets(dir));
  const res = await a.inject({ url: '/' });
  assert.equal(res.statusCode, 200);
  assert.equal(res.headers['cache-control'], 'no-cache');
  assert.match(String(res.headers['content-type']), /text\/html/);
  const csp = String(res.headers['content-security-policy']);
  for (const d of ["default-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"])
    assert.ok(csp.includes(d), d);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
  assert.equal(res.headers['x-frame-options'], 'DENY');
  assert.equal(res.headers['x-content-type-options'], 'nosniff');
  assert.equal(res.headers['referrer-policy'], 'no-referrer');
  const again = await a.inject({ url: '/', headers: { 'if-none-match': String(res.headers.etag) } });
  assert.equal(again.statusCode, 304);
  await a.close();
});

test('hashed assets are immutable for a year and gzipped when accepted; others revalidate; unknown 404', async () => {
  const a = await app(loadConsoleAssets(dir));
  const res = await a.inject({
    url: '/assets/index-AbCd1234.js',
    headers: { 'accept-encoding': 'gzip, br' },
  });
  assert.equal(res.statusCode, 200);
  assert.equal(res.headers['cache-control'], IMMUTABLE);
  assert.equal(res.headers['content-encoding'], 'gzip');
  assert.match(String(res.headers['content-type']), /text\/javascript/);
  assert.equal(gunzipSync(res.rawPayload).toString(), js);
  const identity = await a.inject({ url: '/assets/index-AbCd1234.js' });
  assert.equal(identity.headers['content-encoding'], undefined);
  assert.equal(identity.body, js);
  assert.equal((await a.inject({ url: '/assets/plain.txt' })).headers['cache-control'], 'no-cache');
  const missing = await a.inject({ url: '/assets/nope.js' });
  assert.equal(missing.statusCode, 404);
  assert.equal(missing.headers['x-frame-options'], 'DENY');
  await a.close();
});

test('not built: / explains `npm run build` (503, plain text)', async () => {
  assert.equal(loadConsoleAssets(join(dir, 'nowhere')), null);
  const a = await app(null);
  const res = await a.inject({ url: '/' });
  assert.equal(res.statusCode, 503);
  assert.match(String(res.headers['content-type']), /text\/plain/);
  assert.match(res.body, /npm run build/);
  await a.close();
});

test('--console=false: no console route; / is an unknown path (401 without credentials)', async () => {
  const t = await startTestEdge({ console: false });
  try {
    assert.equal(t.edge.shell.module('console').enabled, false);
    assert.equal((await t.call('/')).status, 401);
    assert.equal((await t.call('/assets/index.js')).status, 401);
  } finally {
    await t.stop();
  }
});
