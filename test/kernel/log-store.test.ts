import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import {
  formatLogTime,
  levelName,
  LogStore,
  parseLevelName,
  parseLogTime,
  type LogStoreOptions,
} from '../../src/kernel/logging/log-store.js';
import { createLogger, REDACTED } from '../../src/kernel/logging/logger.js';
import { eventually } from '../helpers/util.js';

const T0 = Date.UTC(2026, 10, 25, 22, 10, 1, 123); // 2026-11-25T22:10:01.123Z

let stores: LogStore[] = [];
async function openStore(options: Partial<LogStoreOptions> = {}): Promise<LogStore> {
  const store = await LogStore.open({
    sqlitePath: ':memory:',
    flushIntervalMs: 0,
    retentionIntervalMs: 0,
    ...options,
  });
  stores.push(store);
  return store;
}
afterEach(async () => {
  for (const s of stores) await s.close();
  stores = [];
});

/** A destination that keeps the lines pino writes. */
function captureStream(): { lines: string[]; write(line: string): void } {
  const lines: string[] = [];
  return { lines, write: (line: string) => void lines.push(line) };
}

describe('log times', () => {
  it('formats microseconds as RFC 3339 UTC with six fraction digits', () => {
    assert.equal(formatLogTime(T0 * 1000 + 456), '2026-11-25T22:10:01.123456Z');
    assert.equal(formatLogTime(T0 * 1000), '2026-11-25T22:10:01.123000Z');
    assert.equal(formatLogTime(0), '1970-01-01T00:00:00.000000Z');
  });

  it('parses any fraction length and offset, keeping microseconds', () => {
    const us = T0 * 1000 + 456;
    assert.equal(parseLogTime('2026-11-25T22:10:01.123456Z'), us);
    assert.equal(
      parseLogTime('2026-11-25T22:10:01.123456789Z'),
      us,
      'digits beyond the microsecond are dropped',
    );
    assert.equal(parseLogTime('2026-11-25T22:10:01.1Z'), Date.UTC(2026, 10, 25, 22, 10, 1, 100) * 1000);
    assert.equal(parseLogTime('2026-11-25T22:10:01Z'), Date.UTC(2026, 10, 25, 22, 10, 1) * 1000);
    assert.equal(parseLogTime('2026-11-25T23:10:01.123456+01:00'), us);
    assert.equal(parseLogTime('2026-11-25T23:10:01.123456 01:00'), us, 'an unencoded + read as a space');
    assert.equal(parseLogTime('2026-11-25T20:40:01.123456-01:30'), us);
    assert.equal(parseLogTime('2026-11-25t22:10:01.123456z'), us);
    assert.equal(parseLogTime('2026-12-31T23:59:60Z'), Date.UTC(2026, 11, 31, 23, 59, 59) * 1000 + 999_999);
    for (const us2 of [0, T0 * 1000 + 1, 1_000_000_000_000_001])
      assert.equal(parseLogTime(formatLogTime(us2)), us2);
  });

  it('refuses what is not RFC 3339', () => {
    for (const bad of [
      '',
      '0',
      '1764108601',
      '2026-11-25',
      '2026-11-25T22:10:01',
      '2026-11-25 22:10:01Z',
      '2026-02-30T00:00:00Z',
      '2026-13-01T00:00:00Z',
      '2026-11-25T24:00:00Z',
      '2026-11-25T22:60:00Z',
      '2026-11-25T22:10:01.Z',
      '2026-11-25T22:10:01+0100',
      '2026-11-25T22:10:01+24:00',
      'yesterday',
    ]) {
      assert.equal(parseLogTime(bad), undefined, bad);
    }
  });

  it('names levels', () => {
    assert.equal(levelName(30), 'info');
    assert.equal(levelName(35), 'info');
    assert.equal(levelName(60), 'fatal');
    assert.equal(levelName(5), 'trace');
    assert.equal(parseLevelName('WARN'), 'warn');
    assert.equal(parseLevelName('warning'), undefined);
  });
});

describe('LogStore', () => {
  it('keeps entries in order with unique, strictly increasing times', async () => {
    const store = await openStore();
    const times = [
      store.append({ time: T0, level: 'info', message: 'a', component: 'edge' }),
      store.append({ time: T0, level: 'info', message: 'b', component: 'edge' }),
      store.append({ time: T0, level: 'info', message: 'c', component: 'edge' }),
      store.append({ time: T0 - 5000, level: 'warn', message: 'clock went back', component: 'edge' }),
      store.append({ time: T0 + 10.5, level: 50, message: 'later, with microseconds', component: 'edge' }),
      store.append({ time: new Date(T0 + 20), level: 'info', message: 'date', component: 'edge' }),
    ];
    const base = T0 * 1000;
    assert.deepEqual(times, [base, base + 1, base + 2, base + 3, base + 10_500, base + 20_000]);
    await store.flush();
    const page = await store.query({});
    assert.deepEqual(
      page.entries.map((e) => [e.timestamp, e.message, e.level]),
      [
        [base, 'a', 'info'],
        [base + 1, 'b', 'info'],
        [base + 2, 'c', 'info'],
        [base + 3, 'clock went back', 'warn'],
        [base + 10_500, 'later, with microseconds', 'error'],
        [base + 20_000, 'date', 'info'],
      ],
    );
    assert.equal(page.cursor, base + 20_000);
  });

  it('stores in <dataDir>/logs.db and keeps times increasing across a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mw-logs-'));
    try {
      const first = await LogStore.open({ dataDir: dir, flushIntervalMs: 0, retentionIntervalMs: 0 });
      first.append({
        time: T0,
        level: 'info',
        message: 'before restart',
        component: 'edge',
        fields: { n: 1 },
      });
      await first.close(); // close() flushes
      assert.ok(existsSync(join(dir, 'logs.db')));
      const second = await LogStore.open({ dataDir: dir, flushIntervalMs: 0, retentionIntervalMs: 0 });
      stores.push(second);
      const t = second.append({
        time: T0 - 60_000,
        level: 'info',
        message: 'after restart',
        component: 'edge',
      });
      assert.equal(t, T0 * 1000 + 1);
      await second.flush();
      const page = await second.query({});
      assert.deepEqual(
        page.entries.map((e) => [e.message, e.fields]),
        [
          ['before restart', { n: 1 }],
          ['after restart', {}],
        ],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('buffers writes until flush(), a full batch, the flush interval or close()', async () => {
    const store = await openStore({ batchSize: 10 });
    for (let i = 0; i < 9; i++) store.append({ level: 'info', message: `m${i}`, component: 'edge' });
    assert.equal(store.pending, 9);
    assert.equal((await store.query({})).entries.length, 0, 'nothing is visible before a flush');
    await store.flush();
    assert.equal(store.pending, 0);
    assert.equal((await store.query({})).entries.length, 9);

    // A full batch is written without waiting for flush().
    for (let i = 0; i < 10; i++) store.append({ level: 'info', message: `n${i}`, component: 'edge' });
    await eventually(async () => (await store.query({})).entries.length === 19, 2000);
    assert.equal(store.pending, 0);

    // The interval writes a partial batch.
    const timed = await openStore({ flushIntervalMs: 20 });
    timed.append({ level: 'info', message: 'soon', component: 'edge' });
    assert.equal(timed.pending, 1);
    await eventually(async () => (await timed.query({})).entries.length === 1, 2000);

    // Large bursts are split into transactions of batchSize.
    const burst = await openStore({ batchSize: 500 });
    for (let i = 0; i < 1234; i++) burst.append({ level: 'debug', message: `b${i}`, component: 'edge' });
    await burst.flush();
    const newest = await burst.query({ limit: 1000 });
    assert.equal(newest.entries.length, 1000);
    assert.equal(newest.entries[999]!.message, 'b1233');

    // After close, appends are ignored.
    await timed.close();
    assert.equal(timed.append({ level: 'info', message: 'late', component: 'edge' }), undefined);
  });

  it('drops new entries when the buffer is full, and counts them', async () => {
    const store = await openStore({ batchSize: 2, maxBuffered: 5 });
    // All appended before the first write gets a turn: the buffer fills up.
    for (let i = 0; i < 8; i++) store.append({ level: 'info', message: `m${i}`, component: 'edge' });
    assert.equal(store.pending, 5);
    assert.equal(store.dropped, 3);
    await store.flush();
    assert.deepEqual(
      (await store.query({})).entries.map((e) => e.message),
      ['m0', 'm1', 'm2', 'm3', 'm4'],
    );
  });

  it('keeps at most maxEntries, deleting the oldest', async () => {
    const store = await openStore({ maxEntries: 50, batchSize: 30 });
    for (let i = 0; i < 120; i++) store.append({ level: 'info', message: `m${i}`, component: 'edge' });
    await store.flush();
    const page = await store.query({ limit: 1000 });
    assert.equal(page.entries.length, 50);
    assert.equal(page.entries[0]!.message, 'm70');
    assert.equal(page.entries[49]!.message, 'm119');
    assert.equal(await store.enforceRetention(), 0);
  });

  it('keeps entries no older than maxAgeMs, after flushes and on demand', async () => {
    let now = T0;
    const store = await openStore({ maxAgeMs: 60_000, now: () => now });
    for (let i = 10; i >= 0; i--) {
      store.append({ time: T0 - i * 10_000, level: 'info', message: `${i * 10}s ago`, component: 'edge' });
    }
    store.append({
      time: T0 - 120_000,
      level: 'info',
      message: 'bumped after the newest',
      component: 'edge',
    });
    await store.flush();
    let messages = (await store.query({})).entries.map((e) => e.message);
    assert.deepEqual(messages, [
      '60s ago',
      '50s ago',
      '40s ago',
      '30s ago',
      '20s ago',
      '10s ago',
      '0s ago',
      'bumped after the newest',
    ]);
    now = T0 + 35_000;
    assert.equal(await store.enforceRetention(), 4);
    messages = (await store.query({})).entries.map((e) => e.message);
    assert.deepEqual(messages, ['20s ago', '10s ago', '0s ago', 'bumped after the newest']);
  });

  it('enforces retention on its timer', async () => {
    let now = T0;
    const store = await openStore({ maxAgeMs: 1000, retentionIntervalMs: 10, now: () => now });
    store.append({ time: T0, level: 'info', message: 'old soon', component: 'edge' });
    await store.flush();
    now = T0 + 5000;
    await eventually(async () => (await store.query({})).entries.length === 0, 2000);
  });

  it('filters by minimum level, exact component and case-insensitive message text', async () => {
    const store = await openStore();
    const add = (level: 'debug' | 'info' | 'warn' | 'error' | 'fatal', component: string, message: string) =>
      store.append({ level, component, message });
    add('debug', 'edge', 'Starting');
    add('info', 'edge.auth', 'User LOGGED in');
    add('warn', 'edge.http', 'slow request 100%');
    add('error', 'edge.auth', 'login failed');
    add('fatal', 'edge', 'cannot open database_x');
    add('info', 'edge', 'logged out');
    await store.flush();
    const q = async (params: Parameters<LogStore['query']>[0]) =>
      (await store.query(params)).entries.map((e) => e.message);
    assert.deepEqual(await q({ level: 'warn' }), [
      'slow request 100%',
      'login failed',
      'cannot open database_x',
    ]);
    assert.deepEqual(await q({ level: 'trace' }), await q({}));
    assert.deepEqual(await q({ component: 'edge.auth' }), ['User LOGGED in', 'login failed']);
    assert.deepEqual(await q({ component: 'edge' }), ['Starting', 'cannot open database_x', 'logged out']);
    assert.deepEqual(await q({ component: 'edge.' }), []);
    assert.deepEqual(await q({ search: 'logged' }), ['User LOGGED in', 'logged out']);
    assert.deepEqual(await q({ search: '100%' }), ['slow request 100%']);
    assert.deepEqual(await q({ search: '%' }), ['slow request 100%'], '% is literal');
    assert.deepEqual(await q({ search: 'e_x' }), ['cannot open database_x'], '_ is literal');
    assert.deepEqual(await q({ search: 'base_' }), ['cannot open database_x']);
    assert.deepEqual(await q({ search: 'a_e' }), []);
    assert.deepEqual(await q({ level: 'info', component: 'edge.auth', search: 'LOGIN' }), ['login failed']);
  });

  it('pages backwards with cursor and tails forward with start', async () => {
    const store = await openStore();
    const times: number[] = [];
    for (let i = 0; i < 25; i++)
      times.push(store.append({ level: 'info', message: `m${i}`, component: 'edge' })!);
    await store.flush();
    const first = await store.query({ limit: 10 });
    assert.deepEqual(
      first.entries.map((e) => e.message),
      times.slice(15).map((_, i) => `m${15 + i}`),
    );
    assert.equal(first.cursor, times[24]);
    const second = await store.query({ limit: 10, cursor: first.cursor! });
    assert.deepEqual(
      second.entries.map((e) => e.timestamp),
      times.slice(5, 15),
    );
    const third = await store.query({ limit: 10, cursor: second.cursor! });
    assert.deepEqual(
      third.entries.map((e) => e.timestamp),
      times.slice(0, 5),
    );
    const end = await store.query({ limit: 10, cursor: third.cursor! });
    assert.deepEqual(end, { entries: [], cursor: third.cursor });

    const tail = await store.query({ limit: 10, start: times[19]! });
    assert.deepEqual(
      tail.entries.map((e) => e.timestamp),
      times.slice(20),
    );
    const none = await store.query({ limit: 10, start: tail.cursor! });
    assert.deepEqual(none, { entries: [], cursor: times[24] });
    await assert.rejects(store.query({ limit: 0 }), RangeError);
    await assert.rejects(store.query({ start: 1, cursor: 2 }), RangeError);
  });
});

describe('createLogger', () => {
  const secrets = {
    password: 'pw-top-1',
    body: {
      password: 'pw-nested-2',
      newPassword: 'pw-new-3',
      currentPassword: 'pw-current-4',
      client_secret: 'cs-5',
      secret: 'sec-6',
      token: 'tok-7',
      access_token: 'at-8',
      jwtAccess: 'jwt-9',
      user: { password: 'pw-deep-10' },
    },
    req: {
      method: 'GET',
      headers: { authorization: 'Bearer auth-11', cookie: 'jwtAccess=cookie-12', accept: '*/*' },
    },
  };
  const secretValues = [
    'pw-top-1',
    'pw-nested-2',
    'pw-new-3',
    'pw-current-4',
    'cs-5',
    'sec-6',
    'tok-7',
    'at-8',
    'jwt-9',
    'pw-deep-10',
    'auth-11',
    'cookie-12',
  ];

  it('writes JSON lines to the destination and entries to the store, secrets redacted in both', async () => {
    const store = await openStore();
    const out = captureStream();
    const logger = createLogger({ level: 'info', component: 'edge', store, destination: out });
    logger.info(secrets, 'sign-in attempt');
    logger.child({ component: 'edge.auth' }).warn({ client_secret: 'cs-13', attempt: 2 }, 'bad secret');
    await store.flush();

    const stdout = out.lines.join('');
    const stored = JSON.stringify(await store.query({}));
    for (const value of [...secretValues, 'cs-13']) {
      assert.ok(!stdout.includes(value), `stdout leaks ${value}`);
      assert.ok(!stored.includes(value), `store leaks ${value}`);
    }
    const [line1, line2] = out.lines.map((l) => JSON.parse(l) as Record<string, any>);
    assert.equal(line1!.body.password, REDACTED);
    assert.equal(line1!.req.headers.authorization, REDACTED);
    assert.equal(line1!.req.headers.accept, '*/*', 'other headers stay');
    assert.equal(line2!.client_secret, REDACTED);

    const entries = (await store.query({})).entries;
    assert.equal(entries.length, 2);
    assert.equal(entries[0]!.fields.password, REDACTED);
    assert.equal((entries[0]!.fields.body as Record<string, any>).user.password, REDACTED);
    assert.equal((entries[0]!.fields.req as Record<string, any>).headers.cookie, REDACTED);
    assert.deepEqual(entries[1]!.fields, { client_secret: REDACTED, attempt: 2 });
  });

  it('takes component from the closest binding, message from msg, and keeps other bindings as fields', async () => {
    const store = await openStore();
    const out = captureStream();
    const logger = createLogger({ level: 'debug', component: 'edge', store, destination: out });
    const auth = logger.child({ component: 'edge.auth', module: 'identity' });
    logger.info('root');
    auth.info({ user: 'admin' }, 'login %s', 'ok');
    auth.child({ requestId: 'r1' }).debug('inherited');
    logger.child({ requestId: 'r2' }).error(new Error('boom'));
    logger.info({ component: 'edge.once' }, 'per call');
    logger.trace('below the level');
    await store.flush();

    const entries = (await store.query({})).entries;
    assert.deepEqual(
      entries.map((e) => [e.component, e.level, e.message]),
      [
        ['edge', 'info', 'root'],
        ['edge.auth', 'info', 'login ok'],
        ['edge.auth', 'debug', 'inherited'],
        ['edge', 'error', 'boom'],
        ['edge.once', 'info', 'per call'],
      ],
    );
    assert.deepEqual(entries[0]!.fields, {});
    assert.deepEqual(entries[1]!.fields, { module: 'identity', user: 'admin' });
    assert.deepEqual(entries[2]!.fields, { module: 'identity', requestId: 'r1' });
    assert.equal(entries[3]!.fields.requestId, 'r2');
    assert.equal((entries[3]!.fields.err as Record<string, unknown>).message, 'boom');
    for (const e of entries) {
      for (const own of ['level', 'time', 'msg', 'pid', 'hostname', 'component'])
        assert.ok(!(own in e.fields), own);
    }
    // The stdout line carries the component once, and pino's usual keys.
    assert.equal(out.lines.length, 5);
    for (const line of out.lines) {
      assert.equal(line.match(/"component":/g)?.length, 1, line);
      const obj = JSON.parse(line) as Record<string, unknown>;
      assert.equal(typeof obj.time, 'number');
      assert.equal(typeof obj.pid, 'number');
    }
    assert.equal((JSON.parse(out.lines[1]!) as { component: string }).component, 'edge.auth');
    // Stored time is the line's time (ms) in microseconds, bumped only to stay unique.
    const lineTime = (JSON.parse(out.lines[0]!) as { time: number }).time;
    assert.ok(entries[0]!.timestamp >= lineTime * 1000 && entries[0]!.timestamp < lineTime * 1000 + 1000);
  });

  it('works without a store', () => {
    const out = captureStream();
    const logger = createLogger({ level: 'info', component: 'uns', destination: out });
    logger.info({ token: 'tok-x' }, 'hello');
    assert.equal(out.lines.length, 1);
    const line = JSON.parse(out.lines[0]!) as Record<string, unknown>;
    assert.equal(line.component, 'uns');
    assert.equal(line.token, REDACTED);
  });

  describe('as Fastify loggerInstance', () => {
    let store: LogStore;
    const out = captureStream();
    let app: FastifyInstance;
    before(async () => {
      store = await LogStore.open({ sqlitePath: ':memory:', flushIntervalMs: 0, retentionIntervalMs: 0 });
      const logger = createLogger({ level: 'info', component: 'edge', store, destination: out });
      app = Fastify({
        loggerInstance: logger.child({ component: 'edge.http' }),
      }) as unknown as FastifyInstance;
      app.post('/login', async (request) => {
        request.log.info({ body: request.body }, 'login body');
        return { ok: true };
      });
      await app.ready();
    });
    after(async () => {
      await app.close();
      await store.close();
    });

    it('logs requests to both sinks with the request id, without secrets', async () => {
      const res = await app.inject({
        method: 'POST',
        url: '/login',
        headers: { authorization: 'Bearer hdr-secret-1' },
        payload: { username: 'admin', password: 'body-secret-2' },
      });
      assert.equal(res.statusCode, 200);
      await store.flush();
      const entries = (await store.query({ component: 'edge.http' })).entries;
      const messages = entries.map((e) => e.message);
      assert.deepEqual(messages, ['incoming request', 'login body', 'request completed']);
      assert.ok(entries.every((e) => typeof e.fields.reqId === 'string'));
      assert.equal((entries[1]!.fields.body as Record<string, unknown>).password, REDACTED);
      assert.equal((entries[1]!.fields.body as Record<string, unknown>).username, 'admin');
      const all = out.lines.join('') + JSON.stringify(entries);
      assert.ok(!all.includes('hdr-secret-1'));
      assert.ok(!all.includes('body-secret-2'));
    });
  });
});
