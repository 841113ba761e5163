/**
 * Fuzzing a real `millwright edge` process (issue 10): malformed JSON bodies, GraphQL documents,
 * multipart bodies and query strings over HTTPS, and NATS protocol lines to the DataHub gateway
 * over TCP. After every case: no 5xx, an answer in time; after every target: the process alive,
 * `/health` answering, resident memory under the bound, no error-level log line.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { http, basic } from '../helpers/edge.js';
import { cleanEnv, runCli, startCli, tempDirs, type CliProcess } from '../helpers/cli.js';
import {
  ANSWER_MS,
  checkHttp,
  checkProcess,
  errorLines,
  exchange,
  httpRequest,
  params,
  tokenSoup,
} from './support.js';

const dirs = tempDirs('mw-fuzz-edge-');
let p: CliProcess;
let port: number;
let natsPort: number;
let auth: string;

before(async () => {
  const dir = dirs.make();
  p = await startCli(
    [
      'edge',
      '--port',
      '0',
      '--datahub-port',
      '0',
      '--host',
      '127.0.0.1',
      '--data-dir',
      dir,
      '--http-headers-timeout',
      '2000',
      '--http-request-timeout',
      '4000',
    ],
    { env: cleanEnv() },
  );
  const url = p.ready.services.edge!.url;
  port = Number(new URL(url).port);
  natsPort = Number(new URL(p.ready.services.edge!.natsUrl!).port);
  const created = await runCli(['edge', 'api-client', 'create', '--data-dir', dir, '--name', 'fuzz']);
  assert.equal(created.code, 0, created.stderr);
  const client = JSON.parse(created.stdout);
  const tok = await http(`${url}/auth/v3/oauth/token`, {
    headers: { authorization: basic(client.client_id, client.client_secret) },
    form: { grant_type: 'client_credentials' },
  });
  assert.equal(tok.status, 200, tok.text);
  auth = `Bearer ${tok.body.access_token}`;
});
after(async () => {
  await p.stop();
  dirs.removeAll();
});

const alive = () => checkProcess(p.pid, port, p.output);

const JSON_ROUTES: Array<[string, string]> = [
  ['POST', '/devicehub/v2'],
  ['POST', '/auth/v3/api-clients'],
  ['POST', '/auth/v3/oauth/token'],
  ['POST', '/auth/v2/login'],
  ['PUT', '/auth/v2/password'],
  ['POST', '/datahub/v1/access-keys'],
  ['POST', '/config/session'],
];

const jsonish = fc.oneof(
  fc.json({ maxDepth: 4 }),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  tokenSoup(['{', '}', '[', ']', '"', ':', ',', '1e309', '-0', 'null', 'true', '"\\u0000"', '\\', 'NaN']),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.integer({ min: 1, max: 5000 }).map((n) => '['.repeat(n) + ']'.repeat(n)),
  fc.integer({ min: 1, max: 5000 }).map((n) => '{"a":'.repeat(n) + '1' + '}'.repeat(n)),
);

describe('edge fuzz', () => {
  test('malformed JSON bodies at every kind of JSON route', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...JSON_ROUTES),
        jsonish,
        fc.constantFrom(
          'application/json',
          'application/json; charset=utf-8',
          'text/plain',
          'application/x-www-form-urlencoded',
        ),
        async ([method, path], body, type) => {
          await checkHttp(
            port,
            httpRequest(method, path, { authorization: auth, 'content-type': type }, body),
            () => `${method} ${path} ${type} ${JSON.stringify(body).slice(0, 300)}`,
          );
        },
      ),
      params(),
    );
    await alive();
  });

  test('GraphQL documents and variables at /devicehub/v2', async () => {
    const doc = tokenSoup(
      [
        '{',
        '}',
        '(',
        ')',
        '[',
        ']',
        ':',
        '!',
        '$',
        '@',
        '...',
        'query',
        'mutation',
        'subscription',
        'fragment',
        ' on ',
        'ListDevices',
        'Device',
        'ID',
        'Name',
        '__typename',
        '__schema',
        'types',
        'fields',
        'input:',
        '"x"',
        '1e309',
        ' ',
        '\n',
        '#',
      ],
      60,
    );
    await fc.assert(
      fc.asyncProperty(
        doc,
        fc.option(fc.jsonValue({ maxDepth: 3 }), { nil: undefined }),
        fc.option(fc.string({ maxLength: 10 }), { nil: undefined }),
        fc.boolean(),
        async (query, variables, operationName, get) => {
          const request = get
            ? httpRequest(
                'GET',
                `/devicehub/v2?query=${encodeURIComponent(query)}${variables === undefined ? '' : `&variables=${encodeURIComponent(JSON.stringify(variables))}`}`,
                { authorization: auth },
              )
            : httpRequest(
                'POST',
                '/devicehub/v2',
                { authorization: auth, 'content-type': 'application/json' },
                JSON.stringify({ query, variables, operationName }),
              );
          await checkHttp(port, request, () => JSON.stringify({ query, variables, operationName, get }));
        },
      ),
      params(),
    );
    await alive();
  });

  test('multipart bodies at /devicehub/v2', async () => {
    const UPLOAD = 'mutation($f: Upload!) { UploadCsv(File: $f) { Success } }';
    const part = fc.record({
      name: fc.oneof(fc.constantFrom('operations', 'map', '0', '1'), fc.string({ maxLength: 8 })),
      filename: fc.option(fc.constantFrom('a.csv', '', 'x"y'), { nil: undefined }),
      content: fc.oneof(
        fc.constant(JSON.stringify({ query: UPLOAD, variables: { f: null } })),
        fc.constant(JSON.stringify({ 0: ['variables.f'] })),
        fc.constant('DeviceName,TagName,Name,ValueType\nnone,t,S,float64\n'),
        fc.json({ maxDepth: 2 }),
        fc.string({ unit: 'binary', maxLength: 100 }),
      ),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(part, { maxLength: 5 }),
        fc.constantFrom('b0undary', 'x', '----WebKitFormBoundary7MA4YWxkTrZu0gW'),
        fc.constantFrom('', 'boundary', 'valid', 'quoted', 'other'),
        fc.constantFrom('whole', 'no-end', 'cut', 'garbage-after'),
        async (parts, boundary, declared, shape) => {
          let body = parts
            .map(
              (x) =>
                `--${boundary}\r\nContent-Disposition: form-data; name="${x.name}"${x.filename === undefined ? '' : `; filename="${x.filename}"`}\r\n\r\n${x.content}\r\n`,
            )
            .join('');
          if (shape !== 'no-end') body += `--${boundary}--\r\n`;
          if (shape === 'cut') body = body.slice(0, Math.floor(body.length / 2));
          if (shape === 'garbage-after') body += '\u0000garbage';
          const type =
            declared === ''
              ? 'multipart/form-data'
              : declared === 'boundary'
                ? 'multipart/form-data; boundary='
                : declared === 'quoted'
                  ? `multipart/form-data; boundary="${boundary}"`
                  : declared === 'other'
                    ? 'multipart/form-data; boundary=not-the-one'
                    : `multipart/form-data; boundary=${boundary}`;
          await checkHttp(
            port,
            httpRequest('POST', '/devicehub/v2', { authorization: auth, 'content-type': type }, body),
            () => `${type}\n${JSON.stringify(body).slice(0, 600)}`,
          );
        },
      ),
      params(),
    );
    await alive();
  });

  test('query strings', async () => {
    const value = fc.oneof(
      fc.constantFrom(
        '1e309',
        'Infinity',
        '-1',
        '0',
        '1.5',
        '',
        '%',
        '%zz',
        '%00',
        '[]',
        '{}',
        'NaN',
        '9'.repeat(400),
      ),
      fc.string({ maxLength: 20 }),
      fc.integer().map(String),
    );
    const key = fc.oneof(
      fc.constantFrom(
        'limit',
        'level',
        'component',
        'search',
        'start',
        'cursor',
        'query',
        'variables',
        'a[b]',
        '__proto__',
        'constructor',
      ),
      fc.string({ maxLength: 8 }),
    );
    const pathOf = fc.constantFrom(
      '/logs/query',
      '/devicehub/v2',
      '/datahub/metrics',
      '/datahub/v1/stats',
      '/health',
      '/auth/v3/api-clients',
      '/version',
    );
    await fc.assert(
      fc.asyncProperty(
        pathOf,
        fc.array(fc.tuple(key, value), { maxLength: 6 }),
        fc.boolean(),
        async (path, pairs, raw) => {
          // Raw: the characters as they are (minus what ends the request line); else percent-encoded.
          const qs = pairs
            .map(([k, v]) =>
              raw
                ? [...`${k}=${v}`].filter((c) => c > ' ' && c < '\u007f').join('')
                : `${encodeURIComponent(k)}=${encodeURIComponent(v)}`,
            )
            .join('&');
          await checkHttp(
            port,
            httpRequest('GET', `${path}?${qs}`, { authorization: auth }),
            () => `${path}?${qs}`,
          );
        },
      ),
      params(),
    );
    await alive();
  });

  test('NATS protocol lines to the DataHub gateway', async () => {
    const subject = fc.oneof(
      fc.constantFrom('a', 'a.b', '>', '*', 'a.>', '.', 'a..b', '$SYS.x', ''),
      fc.string({ maxLength: 12 }),
    );
    const line = fc.oneof(
      fc.constant('CONNECT {"verbose":false,"pedantic":true}\r\n'),
      fc.json({ maxDepth: 2 }).map((j) => `CONNECT ${j}\r\n`),
      fc.tuple(subject, fc.nat(100)).map(([s, n]) => `PUB ${s} ${n}\r\n${'x'.repeat(n)}\r\n`),
      fc
        .tuple(subject, fc.integer({ min: -5, max: 100 }), fc.nat(200))
        .map(([s, n, m]) => `PUB ${s} ${n}\r\n${'y'.repeat(m)}\r\n`),
      fc.tuple(subject, fc.string({ maxLength: 4 })).map(([s, sid]) => `SUB ${s} ${sid}\r\n`),
      fc
        .tuple(fc.string({ maxLength: 4 }), fc.integer({ min: -1, max: 10 }))
        .map(([sid, n]) => `UNSUB ${sid} ${n}\r\n`),
      fc
        .tuple(subject, fc.nat(50), fc.nat(50))
        .map(([s, h, t]) => `HPUB ${s} ${h} ${t}\r\nNATS/1.0\r\n\r\n${'z'.repeat(t)}\r\n`),
      fc.constantFrom(
        'PING\r\n',
        'PONG\r\n',
        'INFO {}\r\n',
        'MSG a 1 0\r\n\r\n',
        'PUB a 99999999999999999999\r\n',
        'PUB\r\n',
        '\r\n',
      ),
      fc.string({ unit: 'binary', maxLength: 80 }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(line, { minLength: 1, maxLength: 8 }), async (lines) => {
        const bytes = Buffer.from(`${lines.join('')}PING\r\n`, 'utf8');
        // The gateway answers (INFO, +OK, -ERR, PONG) or closes; it never stays silent past the bound.
        const r = await exchange({ port: natsPort, tls: false }, bytes, {
          ms: 1000,
          until: (b) => /PONG\r\n|-ERR/.test(b.toString('latin1')),
        });
        const text = r.received.toString('utf8');
        assert.ok(text.startsWith('INFO '), `no INFO: ${JSON.stringify(text.slice(0, 200))}`);
      }),
      params(),
    );
    // A well-formed client still gets its PONG in time.
    const r = await exchange({ port: natsPort, tls: false }, Buffer.from('CONNECT {}\r\nPING\r\n'), {
      ms: ANSWER_MS,
      until: (b) => b.toString('latin1').includes('PONG'),
    });
    assert.match(r.received.toString(), /PONG\r\n/);
    await alive();
  });

  test('no error-level log line was written during the fuzzing', () => {
    assert.deepEqual(errorLines(p.output()), []);
  });
});
