import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import Fastify, { type FastifyInstance } from 'fastify';
import { request } from 'undici';
import { unauthorized, ERRORS } from '../../src/kernel/errors.js';
import { installErrorHandler } from '../../src/kernel/http/error-handler.js';
import type { Permission } from '../../src/kernel/http/auth-types.js';
import { formatLogTime, LogStore, type LogLevelName } from '../../src/kernel/logging/log-store.js';
import { logsRoutes, type LogEntry, type LogQueryReply } from '../../src/edge/logs/index.js';

const T0 = Date.UTC(2026, 10, 25, 22, 10, 1, 123); // 2026-11-25T22:10:01.123Z
const TOKEN = 'Bearer test-token';
const RFC3339_MICROS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

let app: FastifyInstance;
let base: string;
let store: LogStore;
const seenPermissions: (Permission | undefined)[] = [];

before(async () => {
  app = Fastify();
  installErrorHandler(app);
  // Stand-in for the identity module's hook: a fixed bearer token, and the route's permission noted.
  app.decorateRequest('auth', null);
  app.addHook('onRequest', async (req) => {
    const permission = req.routeOptions.config.permission;
    seenPermissions.push(permission);
    if (permission === 'public') return;
    if (req.headers.authorization !== TOKEN) throw unauthorized();
    req.auth = { subject: 'client:test', role: 'viewer', scheme: 'bearer' };
  });
  // A fresh store per test behind one app.
  await app.register(logsRoutes, { store: { query: (params) => store.query(params) } });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  assert.ok(address && typeof address === 'object');
  base = `http://127.0.0.1:${address.port}`;
});
after(async () => {
  await app.close();
});
beforeEach(async () => {
  store = await LogStore.open({ sqlitePath: ':memory:', flushIntervalMs: 0, retentionIntervalMs: 0 });
});
afterEach(async () => {
  await store.close();
});

/** GET /logs/query with a raw query string (sent as written). */
async function query(qs = '', auth = TOKEN): Promise<{ status: number; body: any }> {
  const res = await request(`${base}/logs/query${qs ? `?${qs}` : ''}`, {
    headers: auth ? { authorization: auth } : {},
  });
  return { status: res.statusCode, body: await res.body.json() };
}

async function page(qs = ''): Promise<LogQueryReply> {
  const res = await query(qs);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body as LogQueryReply;
}

const LEVELS: LogLevelName[] = ['debug', 'info', 'warn', 'error', 'info', 'fatal', 'info'];
const COMPONENTS = ['edge', 'edge.auth', 'edge.http'];

/** n entries, one millisecond apart after `from`; answers their wire timestamps. */
async function seed(n: number, from = T0, prefix = 'entry'): Promise<string[]> {
  const times: string[] = [];
  for (let i = 0; i < n; i++) {
    const t = store.append({
      time: from + i,
      level: LEVELS[i % LEVELS.length]!,
      component: COMPONENTS[i % COMPONENTS.length]!,
      message: `${prefix} ${i}`,
      fields: { i, nested: { ok: true } },
    });
    times.push(formatLogTime(t!));
  }
  await store.flush();
  return times;
}

const stamps = (entries: LogEntry[]) => entries.map((e) => e.timestamp);

function assertChronological(entries: LogEntry[]): void {
  for (let i = 1; i < entries.length; i++) assert.ok(entries[i - 1]!.timestamp < entries[i]!.timestamp);
}

/** Pages backwards from the newest page until an empty one; answers every page. */
async function walkBack(filters: string, limit: number): Promise<LogQueryReply[]> {
  const pages: LogQueryReply[] = [];
  let reply = await page(`limit=${limit}${filters}`);
  while (reply.count > 0) {
    pages.push(reply);
    assert.equal(reply.count, reply.entries.length);
    assertChronological(reply.entries);
    assert.equal(reply.cursor, reply.entries[reply.entries.length - 1]!.timestamp, 'cursor = newest of page');
    const next = await page(`limit=${limit}${filters}&cursor=${encodeURIComponent(reply.cursor!)}`);
    if (next.count === 0) assert.equal(next.cursor, reply.cursor, 'an empty page echoes the cursor');
    reply = next;
  }
  return pages;
}

describe('GET /logs/query', () => {
  it('is a read route behind authentication', async () => {
    seenPermissions.length = 0;
    assert.equal((await query('', '')).status, 401);
    assert.equal((await query()).status, 200);
    assert.deepEqual(seenPermissions, ['read', 'read']);
  });

  it('answers the newest 100 entries by default, oldest first, in the contract shape', async () => {
    const times = await seed(150);
    const reply = await page();
    assert.equal(reply.count, 100);
    assert.deepEqual(stamps(reply.entries), times.slice(50));
    assert.equal(reply.cursor, times[149]);
    const e = reply.entries[0]!;
    assert.deepEqual(Object.keys(e).sort(), ['component', 'fields', 'level', 'message', 'timestamp']);
    assert.match(e.timestamp, RFC3339_MICROS);
    assert.equal(e.timestamp, formatLogTime((T0 + 50) * 1000));
    assert.deepEqual(e.fields, { i: 50, nested: { ok: true } });
    assert.equal(e.message, 'entry 50');
    assert.equal(e.level, LEVELS[50 % LEVELS.length]);
    assert.equal(e.component, COMPONENTS[50 % COMPONENTS.length]);
  });

  it('answers an empty store with an empty page and a null cursor', async () => {
    assert.deepEqual(await page(), { entries: [], count: 0, cursor: null });
  });

  it('bounds limit to integers from 1 to 1000', async () => {
    await seed(1200);
    assert.equal((await page('limit=1')).count, 1);
    assert.equal((await page('limit=1000')).count, 1000);
    for (const bad of ['0', '1001', '-1', '1.5', 'ten', '']) {
      const res = await query(`limit=${bad}`);
      assert.equal(res.status, 400, `limit=${bad}`);
      assert.equal(res.body.code, ERRORS.badRequest.code);
      assert.match(res.body.message, /limit/);
    }
  });

  it('pages backwards with cursor across several pages, without overlap or gap', async () => {
    const times = await seed(257);
    const pages = await walkBack('', 50);
    assert.deepEqual(
      pages.map((p) => p.count),
      [50, 50, 50, 50, 50, 7],
    );
    const walked = pages.reverse().flatMap((p) => stamps(p.entries));
    assert.deepEqual(walked, times, 'every entry exactly once, in order');
  });

  it('pages backwards through a filtered view the same way', async () => {
    await seed(300);
    const filters = '&level=warn&component=edge.auth';
    const all = (await page(`limit=1000${filters}`)).entries;
    assert.ok(all.length > 20);
    assert.ok(all.every((e) => e.component === 'edge.auth' && ['warn', 'error', 'fatal'].includes(e.level)));
    const walked = (await walkBack(filters, 7)).reverse().flatMap((p) => stamps(p.entries));
    assert.deepEqual(walked, stamps(all));
  });

  it('tails forward with start: each poll gets exactly the entries added since', async () => {
    await seed(30);
    let reply = await page('limit=10');
    let cursor = reply.cursor!;

    // Nothing new: an empty page that echoes start.
    reply = await page(`start=${encodeURIComponent(cursor)}`);
    assert.deepEqual(reply, { entries: [], count: 0, cursor });

    const added = await seed(3, T0 + 1000, 'new');
    reply = await page(`start=${encodeURIComponent(cursor)}`);
    assert.deepEqual(stamps(reply.entries), added);
    assert.deepEqual(
      reply.entries.map((e) => e.message),
      ['new 0', 'new 1', 'new 2'],
    );
    cursor = reply.cursor!;
    assert.equal(cursor, added[2]);

    // More than a page arrives: the oldest first, then the rest.
    const burst = await seed(120, T0 + 2000, 'burst');
    const seen: string[] = [];
    for (;;) {
      reply = await page(`limit=100&start=${encodeURIComponent(cursor)}`);
      if (reply.count === 0) break;
      assertChronological(reply.entries);
      seen.push(...stamps(reply.entries));
      cursor = reply.cursor!;
    }
    assert.deepEqual(seen, burst);
    assert.equal(cursor, burst[119]);

    // Entries appended in the same millisecond keep distinct, increasing times.
    store.append({ time: T0, level: 'info', component: 'edge', message: 'late clock' });
    store.append({ time: T0, level: 'info', component: 'edge', message: 'late clock 2' });
    await store.flush();
    reply = await page(`start=${encodeURIComponent(cursor)}`);
    assert.deepEqual(
      reply.entries.map((e) => e.message),
      ['late clock', 'late clock 2'],
    );
    assertChronological(reply.entries);
    assert.ok(reply.entries[0]!.timestamp > cursor);
  });

  it('filters by minimum level (any case), exact component and case-insensitive search', async () => {
    await seed(21);
    const levels = (await page('level=warn')).entries.map((e) => e.level);
    assert.ok(levels.length > 0 && levels.every((l) => ['warn', 'error', 'fatal'].includes(l)));
    assert.deepEqual((await page('level=WARN')).entries, (await page('level=warn')).entries);
    assert.equal((await page('level=fatal')).count, 3);
    assert.equal((await page('level=trace')).count, 21);

    const comp = (await page('component=edge.auth')).entries;
    assert.equal(comp.length, 7);
    assert.ok(comp.every((e) => e.component === 'edge.auth'));
    assert.equal((await page('component=edge')).count, 7, 'exact, not a prefix');

    assert.deepEqual(
      (await page('search=ENTRY%201')).entries.map((e) => e.message),
      [
        'entry 1',
        'entry 10',
        'entry 11',
        'entry 12',
        'entry 13',
        'entry 14',
        'entry 15',
        'entry 16',
        'entry 17',
        'entry 18',
        'entry 19',
      ],
    );
    assert.deepEqual(
      // entry 11 (info), 14 (debug), 17 (error) are edge.http
      (await page('search=entry%201&component=edge.http&level=info')).entries.map((e) => e.message),
      ['entry 11', 'entry 17'],
    );

    const res = await query('level=verbose');
    assert.equal(res.status, 400);
    assert.equal(
      res.body.message,
      'unknown level "verbose": expected one of trace, debug, info, warn, error, fatal',
    );
  });

  it('refuses cursor=0, a cursor or start that is not RFC 3339, and start with cursor', async () => {
    await seed(5);
    const zero = await query('cursor=0');
    assert.equal(zero.status, 400);
    assert.equal(zero.body.code, ERRORS.badRequest.code);
    assert.match(zero.body.message, /^cursor 0 is not a valid cursor/);
    for (const bad of [
      'abc',
      '1764108601',
      '2026-11-25',
      '2026-11-25T22:10:01',
      '2026-02-30T00:00:00Z',
      '',
    ]) {
      const res = await query(`cursor=${encodeURIComponent(bad)}`);
      assert.equal(res.status, 400, `cursor=${bad}`);
      assert.match(res.body.message, /^cursor ".*" is not an RFC 3339 timestamp/);
    }
    for (const bad of ['abc', '1764108601', '2026-11-25T22:10:01', 'now']) {
      const res = await query(`start=${encodeURIComponent(bad)}`);
      assert.equal(res.status, 400, `start=${bad}`);
      assert.match(res.body.message, /^start ".*" is not an RFC 3339 timestamp/);
    }
    const both = await query(
      `start=${encodeURIComponent(formatLogTime(T0 * 1000))}&cursor=${encodeURIComponent(formatLogTime(T0 * 1000))}`,
    );
    assert.equal(both.status, 400);
    assert.match(both.body.message, /start and cursor cannot be combined/);
  });

  it('ignores start=0, an empty start and unknown parameters', async () => {
    await seed(120);
    const plain = await page();
    assert.deepEqual(await page('start=0'), plain);
    assert.deepEqual(await page('start='), plain);
    assert.deepEqual(await page('foo=bar&offset=3&sort=desc&Limit=5'), plain);
    assert.deepEqual(
      await page('start=0&cursor=' + encodeURIComponent(plain.cursor!)),
      await page('cursor=' + encodeURIComponent(plain.cursor!)),
    );
  });

  it('accepts RFC 3339 with any fraction length or offset, at microsecond precision', async () => {
    const times = await seed(10);
    // Tail from entry 3 (T0 + 3 ms), written several ways.
    const expected = times.slice(4);
    const forms = [
      '2026-11-25T22:10:01.126Z',
      '2026-11-25T22:10:01.126000Z',
      '2026-11-25T22:10:01.126000999Z',
      '2026-11-25T23:10:01.126%2B01:00',
      '2026-11-25T23:10:01.126+01:00', // an unencoded + arrives as a space
      '2026-11-25T17:40:01.126-04:30',
    ];
    for (const start of forms) {
      const reply = await page(`start=${start}`);
      assert.deepEqual(stamps(reply.entries), expected, start);
    }
    // One microsecond before entry 3 includes it.
    assert.deepEqual(stamps((await page('start=2026-11-25T22:10:01.125999Z')).entries), times.slice(3));
    // An empty page answers the time sent, normalised to UTC with microseconds.
    const late = await page('start=2026-11-26T00:00:00%2B01:00');
    assert.deepEqual(late, { entries: [], count: 0, cursor: '2026-11-25T23:00:00.000000Z' });
    // A cursor written with an offset names the same page.
    const byOffset = await page('limit=3&cursor=2026-11-25T23:10:01.132%2B01:00');
    assert.deepEqual(stamps(byOffset.entries), times.slice(4, 7));
  });
});
