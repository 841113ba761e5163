/**
 * Hardening of the HTTP(S) servers (issue 10, items 6, 7, 8 and 10), each against a real
 * `millwright edge` / `millwright uns` process started with short `--http-*` timeouts, measured from
 * outside: sockets that send nothing, half a header or half a body are closed within the configured
 * timeout and the process's descriptors return to their baseline while normal requests succeed;
 * malformed multipart requests and non-finite numbers are 400s; a CSV over the limit or cut off
 * is refused whole; SIGTERM does not wait for connections that carry no request.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { connect } from 'nats';
import { http, basic } from '../helpers/edge.js';
import { cleanEnv, runCli, startCli, tempDirs, type CliProcess } from '../helpers/cli.js';
import { eventually, sleep } from '../helpers/util.js';
import { ERRORS } from '../../src/kernel/errors.js';

const dirs = tempDirs('mw-http-hardening-');
after(() => dirs.removeAll());

const fds = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;

const HEADERS_MS = 1000;
const REQUEST_MS = 2000;
const KEEP_ALIVE_MS = 1000;
/** Node checks the deadlines on an interval (a tenth of the shorter one) and the machine is shared. */
const SLACK_MS = 2500;

const SHORT_TIMEOUTS = [
  '--http-headers-timeout',
  String(HEADERS_MS),
  '--http-request-timeout',
  String(REQUEST_MS),
  '--http-keep-alive-timeout',
  String(KEEP_ALIVE_MS),
  '--http-idle-timeout',
  '3000',
];

interface Edge {
  p: CliProcess;
  url: string;
  port: number;
  auth: string;
  dir: string;
}

async function startEdge(extra: string[] = []): Promise<Edge> {
  const dir = dirs.make();
  const p = await startCli(
    ['edge', '--port', '0', '--datahub-port', '0', '--host', '127.0.0.1', '--data-dir', dir, ...extra],
    { env: cleanEnv() },
  );
  const url = p.ready.services.edge!.url;
  const created = await runCli(['edge', 'api-client', 'create', '--data-dir', dir, '--name', 'hardening']);
  assert.equal(created.code, 0, created.stderr);
  const client = JSON.parse(created.stdout);
  const tok = await http(`${url}/auth/v3/oauth/token`, {
    headers: { authorization: basic(client.client_id, client.client_secret) },
    form: { grant_type: 'client_credentials' },
  });
  assert.equal(tok.status, 200, tok.text);
  return { p, url, port: Number(new URL(url).port), auth: `Bearer ${tok.body.access_token}`, dir };
}

/**
 * A socket whose lifetime is recorded: from its TCP connection (where the server's deadlines
 * start) to its close, in ms; `closedAt` is the close in ms after `t0`. It reads whatever the
 * server sends.
 */
function watched(
  socket: net.Socket,
  t0: number,
): { closedAt: Promise<number>; lifetime: Promise<number>; data: () => string } {
  let data = '';
  let connectedAt = Date.now();
  socket.once('connect', () => (connectedAt = Date.now()));
  socket.on('data', (d) => (data += d.toString('latin1')));
  socket.on('error', () => undefined);
  const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now())));
  return {
    closedAt: closed.then((at) => at - t0),
    lifetime: closed.then((at) => at - connectedAt),
    data: () => data,
  };
}

function tlsSocket(port: number, onSecure: (s: tls.TLSSocket) => void = () => undefined): tls.TLSSocket {
  const s = tls.connect({ port, host: '127.0.0.1', rejectUnauthorized: false }, () => onSecure(s));
  return s;
}

/** Waits until the process's descriptor count is back to `baseline` (a little slack for its own). */
async function fdsBackTo(pid: number, baseline: number, ms = 5000): Promise<number> {
  const end = Date.now() + ms;
  let n = fds(pid);
  while (n > baseline + 3 && Date.now() < end) {
    await sleep(100);
    n = fds(pid);
  }
  return n;
}

/** Error-level lines (pino level 50 and above) the process printed. */
const errorLines = (p: CliProcess) =>
  p
    .output()
    .split('\n')
    .filter((l) => /"level":(5|6)\d/.test(l));

const UPLOAD = `mutation($file: Upload!) { UploadCsv(File: $file) { Success Stats { Total Created Updated Failed } } }`;

/** A GraphQL multipart body (graphql-multipart-request-spec) with one file. */
function multipartBody(boundary: string, file: Buffer | string): Buffer {
  const head =
    `--${boundary}\r\nContent-Disposition: form-data; name="operations"\r\n\r\n` +
    JSON.stringify({ query: UPLOAD, variables: { file: null } }) +
    `\r\n--${boundary}\r\nContent-Disposition: form-data; name="map"\r\n\r\n` +
    JSON.stringify({ 0: ['variables.file'] }) +
    `\r\n--${boundary}\r\nContent-Disposition: form-data; name="0"; filename="tags.csv"\r\nContent-Type: text/csv\r\n\r\n`;
  return Buffer.concat([Buffer.from(head), Buffer.from(file), Buffer.from(`\r\n--${boundary}--\r\n`)]);
}

async function post(
  e: Edge,
  path: string,
  contentType: string,
  body: Buffer | string,
): Promise<{ status: number; text: string; body: any }> {
  const { request } = await import('undici');
  const { insecureAgent } = await import('../helpers/edge.js');
  const res = await request(`${e.url}${path}`, {
    method: 'POST',
    headers: { authorization: e.auth, 'content-type': contentType },
    body,
    dispatcher: insecureAgent,
  });
  const text = await res.body.text();
  let parsed: any;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.statusCode, text, body: parsed };
}

const CSV_HEADER =
  'DeviceName,TagName,Name,ValueType,Description,IntervalMs,PublishCoV,TagFormula,MetaData,Property.address';
const csvLines = (device: string, n: number) =>
  Array.from({ length: n }, (_, i) => `${device},tag_${i},S,float64,,123456,false,,,${i}`);

async function tagCount(e: Edge, deviceId: string): Promise<number> {
  const r = await http(`${e.url}/devicehub/v2`, {
    headers: { authorization: e.auth },
    json: {
      query: 'query($in: ListRegistersRequest!) { ListRegisters(input: $in) { TotalCount } }',
      variables: { in: { DeviceID: deviceId } },
    },
  });
  assert.equal(r.status, 200, r.text);
  return r.body.data.ListRegisters.TotalCount as number;
}

describe('edge: HTTP timeouts, connection limit and malformed requests', () => {
  let e: Edge;
  before(async () => {
    e = await startEdge([
      ...SHORT_TIMEOUTS,
      '--http-max-connections',
      '600',
      '--devicehub-csv-max-bytes',
      '65536',
    ]);
  });
  after(() => e.p.stop());

  test('item 7: 200 silent sockets, 50 silent TLS connections, 100 half headers and 50 half bodies are closed within their timeouts; descriptors return to the baseline; normal requests succeed meanwhile', async () => {
    const baseline = fds(e.p.pid);
    const t0 = Date.now();
    const silent = Array.from({ length: 200 }, () => watched(net.connect(e.port, '127.0.0.1'), t0));
    const silentTls = Array.from({ length: 50 }, () => watched(tlsSocket(e.port), t0));
    const halfHeader = Array.from({ length: 100 }, () =>
      watched(
        tlsSocket(e.port, (s) => s.write('GET /health HTTP/1.1\r\nHost: x\r\nX-Half: ')),
        t0,
      ),
    );
    const halfBody = Array.from({ length: 50 }, () =>
      watched(
        tlsSocket(e.port, (s) =>
          s.write(
            `POST /auth/v3/oauth/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"a":`,
          ),
        ),
        t0,
      ),
    );
    await eventually(() => fds(e.p.pid) > baseline + 150, 10_000, 'the sockets open');
    assert.ok(fds(e.p.pid) > baseline + 150, `the sockets are open: ${fds(e.p.pid)} vs ${baseline}`);
    // Meanwhile, the service answers.
    const health = await http(`${e.url}/health`);
    assert.equal(health.status, 200, health.text);
    const logs = await http(`${e.url}/logs/query?limit=5`, { headers: { authorization: e.auth } });
    assert.equal(logs.status, 200, logs.text);

    const headerBound = HEADERS_MS + SLACK_MS;
    for (const [name, group, bound] of [
      ['silent TCP', silent, headerBound],
      ['silent TLS', silentTls, headerBound],
      ['half header', halfHeader, headerBound],
      ['half body', halfBody, REQUEST_MS + SLACK_MS],
    ] as const) {
      const times = await Promise.all(group.map((s) => s.lifetime));
      const worst = Math.max(...times);
      assert.ok(worst <= bound, `${name}: one was closed ${worst} ms after it connected (bound ${bound} ms)`);
    }
    // A half header is answered 408 before the close; a half body too.
    assert.match(halfBody[0]!.data(), /^HTTP\/1\.1 408/);
    const after = await fdsBackTo(e.p.pid, baseline);
    assert.ok(after <= baseline + 3, `descriptors: ${after}, baseline ${baseline}`);
    assert.equal((await http(`${e.url}/health`)).status, 200);
  });

  test('item 7: an idle keep-alive connection is closed after --http-keep-alive-timeout', async () => {
    const t0 = Date.now();
    let sentAt = 0;
    const s = watched(
      tlsSocket(e.port, (sock) => {
        sentAt = Date.now() - t0;
        sock.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
      }),
      t0,
    );
    const closedAt = await s.closedAt;
    assert.match(s.data(), /^HTTP\/1\.1 200/);
    assert.ok(
      closedAt - sentAt <= KEEP_ALIVE_MS + SLACK_MS,
      `closed ${closedAt - sentAt} ms after the request`,
    );
    assert.ok(closedAt - sentAt >= KEEP_ALIVE_MS - 200, `closed too early: ${closedAt - sentAt} ms`);
  });

  test('item 7: connections beyond --http-max-connections are closed at once; the service still answers after', async () => {
    const baseline = fds(e.p.pid);
    const t0 = Date.now();
    const sockets = Array.from({ length: 700 }, () => watched(net.connect(e.port, '127.0.0.1'), t0));
    // An accepted connection lives at least the headers timeout from its TCP connection; one
    // closed sooner was refused at the limit.
    const lifetimes = await Promise.all(sockets.map((s) => s.lifetime));
    const early = lifetimes.filter((t) => t < HEADERS_MS - 100);
    assert.ok(early.length >= 90, `${early.length} of 700 closed at once (limit 600)`);
    assert.ok(Date.now() - t0 <= HEADERS_MS + SLACK_MS + 600, `all closed after ${Date.now() - t0} ms`);
    assert.ok((await fdsBackTo(e.p.pid, baseline)) <= baseline + 3);
    assert.equal((await http(`${e.url}/health`)).status, 200);
  });

  test('items 7 and 8: 200 multipart requests without a boundary, and bodies that are not multipart, are answered 400 at once; descriptors return', async () => {
    const baseline = fds(e.p.pid);
    const t0 = Date.now();
    const replies: string[] = [];
    for (let batch = 0; batch < 2; batch++) {
      replies.push(
        ...(await Promise.all(
          Array.from({ length: 100 }, () => {
            const s = tlsSocket(e.port, (sock) =>
              sock.write(
                `POST /devicehub/v2 HTTP/1.1\r\nHost: x\r\nAuthorization: ${e.auth}\r\nContent-Type: multipart/form-data\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello`,
              ),
            );
            const w = watched(s, t0);
            return w.closedAt.then(() => w.data());
          }),
        )),
      );
    }
    for (const r of replies) assert.match(r, /^HTTP\/1\.1 400/, r.slice(0, 300));
    assert.match(replies[0]!, /has no boundary/);
    assert.ok(Date.now() - t0 < 15_000, `took ${Date.now() - t0} ms`);
    assert.ok((await fdsBackTo(e.p.pid, baseline)) <= baseline + 3);

    for (const [body, message] of [
      ['hello', /malformed multipart request/],
      [
        '--xyz\r\nContent-Disposition: form-data; name="operations"\r\n\r\n{"query":"{',
        /malformed multipart/,
      ],
      [
        '--xyz\r\nContent-Disposition: form-data; name="operations"\r\n\r\nnot json\r\n--xyz--\r\n',
        /Invalid JSON in the 'operations'/,
      ],
      [
        '--xyz\r\nContent-Disposition: form-data; name="operations"\r\n\r\n{"query":"{ __typename }"}\r\n--xyz--\r\n',
        /Missing multipart field 'map'/,
      ],
    ] as const) {
      const r = await post(e, '/devicehub/v2', 'multipart/form-data; boundary=xyz', body);
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.status} ${r.text}`);
      assert.match(r.body.errors[0].message, message);
    }
    assert.deepEqual(errorLines(e.p), []);
  });

  test('item 8: limit=1e309, Infinity and -Infinity at /logs/query, and 1e309 in a JSON body, are 400s', async () => {
    for (const limit of ['1e309', 'Infinity', '-Infinity', '1e400']) {
      const r = await http(`${e.url}/logs/query?limit=${limit}`, { headers: { authorization: e.auth } });
      assert.equal(r.status, 400, `${limit}: ${r.text}`);
      assert.match(r.body.message, /limit must be an integer from 1 to \d+, got "/);
    }
    const r = await post(
      e,
      '/auth/v3/api-clients',
      'application/json',
      '{"name":"x","role":"admin","n":1e309}',
    );
    assert.equal(r.status, 400, r.text);
    assert.deepEqual(errorLines(e.p), []);
  });

  test('item 6: a CSV over --devicehub-csv-max-bytes is refused whole; a cut upload stores nothing', async () => {
    const created = await http(`${e.url}/devicehub/v2`, {
      headers: { authorization: e.auth },
      json: {
        query: 'mutation($in: CreateDeviceRequest!) { CreateDevice(input: $in) { ID } }',
        variables: { in: { Name: 'csvdev', DriverID: 'Generator', Properties: [] } },
      },
    });
    assert.equal(created.status, 200, created.text);
    const deviceId = created.body.data.CreateDevice.ID as string;
    // 65,536 bytes allowed; this file has 1,500 lines and 69,000-odd bytes: the limit falls inside a line.
    const big = [CSV_HEADER, ...csvLines('csvdev', 1500)].join('\n');
    assert.ok(big.length > 65_536 && big.length < 80_000, String(big.length));
    const refused = await post(
      e,
      '/devicehub/v2',
      'multipart/form-data; boundary=b0undary',
      multipartBody('b0undary', big),
    );
    assert.equal(refused.body?.data?.UploadCsv ?? null, null, refused.text.slice(0, 500));
    assert.match(
      refused.body.errors[0].message,
      /the CSV file is larger than the limit of 65536 bytes; nothing was stored/,
    );
    assert.equal(refused.body.errors[0].extensions.code, ERRORS.payloadTooLarge.code);
    assert.equal(await tagCount(e, deviceId), 0);

    // Exactly at the limit: accepted whole.
    let exact = [CSV_HEADER, ...csvLines('csvdev', 1400)].join('\n');
    exact += '\n'.repeat(65_536 - Buffer.byteLength(exact)); // blank lines are skipped
    assert.equal(Buffer.byteLength(exact), 65_536);
    const ok = await post(
      e,
      '/devicehub/v2',
      'multipart/form-data; boundary=b0undary',
      multipartBody('b0undary', exact),
    );
    assert.equal(ok.status, 200, ok.text.slice(0, 500));
    assert.deepEqual(
      ok.body.data.UploadCsv.Stats,
      { Total: 1400, Created: 1400, Updated: 0, Failed: 0 },
      ok.text.slice(0, 500),
    );
    assert.equal(await tagCount(e, deviceId), 1400);

    // A client that goes away in the middle of the file: nothing of it is stored.
    const body = multipartBody(
      'b0undary',
      [CSV_HEADER, ...csvLines('csvdev', 1000).map((l) => l.replace('tag_', 'cut_'))].join('\n'),
    );
    const half = body.subarray(0, Math.floor(body.length / 2));
    await new Promise<void>((resolve) => {
      const s = tlsSocket(e.port, (sock) => {
        sock.write(
          `POST /devicehub/v2 HTTP/1.1\r\nHost: x\r\nAuthorization: ${e.auth}\r\nContent-Type: multipart/form-data; boundary=b0undary\r\nContent-Length: ${body.length}\r\n\r\n`,
        );
        sock.write(half, () => setTimeout(() => sock.destroy(), 200));
      });
      s.on('error', () => undefined);
      s.on('close', () => resolve());
    });
    // Time is the test: the aborted upload leaves nothing.
    await sleep(500);
    assert.equal(await tagCount(e, deviceId), 1400);
    assert.deepEqual(errorLines(e.p), [], 'an aborted upload is not logged as an error');
  });
});

describe('UNS: HTTP timeouts', () => {
  let uns: CliProcess;
  let port: number;
  before(async () => {
    uns = await startCli(
      [
        'uns',
        '--host',
        '127.0.0.1',
        '--port',
        '0',
        '--mqtt-port',
        '0',
        '--mqtts-port',
        '0',
        '--data-dir',
        dirs.make(),
        '--admin-password',
        'hardening-password',
        ...SHORT_TIMEOUTS,
      ],
      { env: cleanEnv() },
    );
    port = Number(new URL(uns.ready.services.uns!.url).port);
  });
  after(() => uns.stop());

  test('item 7: 200 silent sockets and 100 half headers are closed within the headers timeout; descriptors return', async () => {
    const baseline = fds(uns.pid);
    const t0 = Date.now();
    const sockets = [
      ...Array.from({ length: 200 }, () => watched(net.connect(port, '127.0.0.1'), t0)),
      ...Array.from({ length: 100 }, () =>
        watched(
          tlsSocket(port, (s) => s.write('GET /health HTTP/1.1\r\nHo')),
          t0,
        ),
      ),
    ];
    // Time is the test: the slow sockets stay open meanwhile.
    await sleep(300);
    assert.equal((await http(`${uns.ready.services.uns!.url}/health`)).status, 200);
    const worst = Math.max(...(await Promise.all(sockets.map((s) => s.lifetime))));
    assert.ok(worst <= HEADERS_MS + SLACK_MS, `the last one closed after ${worst} ms`);
    assert.ok((await fdsBackTo(uns.pid, baseline)) <= baseline + 3);
  });
});

describe('manager: HTTP timeouts on both listeners (API and admin console)', () => {
  test('item 7: silent sockets and half headers on --port and --admin-port are closed within the headers timeout', async () => {
    const mgr = await startCli(
      [
        'manager',
        '--host',
        '127.0.0.1',
        '--port',
        '0',
        '--admin-port',
        '0',
        '--data-dir',
        dirs.make(),
        ...SHORT_TIMEOUTS,
      ],
      { env: cleanEnv() },
    );
    try {
      const ready = mgr.ready.services.manager!;
      const baseline = fds(mgr.pid);
      const t0 = Date.now();
      const sockets = [ready.url, ready.adminUrl!].flatMap((u) => {
        const port = Number(new URL(u).port);
        return [
          ...Array.from({ length: 50 }, () => watched(net.connect(port, '127.0.0.1'), t0)),
          ...Array.from({ length: 50 }, () =>
            watched(
              tlsSocket(port, (s) => s.write('GET /health HTTP/1.1\r\nHo')),
              t0,
            ),
          ),
        ];
      });
      // Time is the test: the slow sockets stay open meanwhile.
      await sleep(300);
      assert.equal((await http(`${ready.adminUrl}/health`)).status, 200);
      const worst = Math.max(...(await Promise.all(sockets.map((s) => s.lifetime))));
      assert.ok(worst <= HEADERS_MS + SLACK_MS, `the last one closed after ${worst} ms`);
      assert.ok((await fdsBackTo(mgr.pid, baseline)) <= baseline + 3);
    } finally {
      await mgr.stop();
    }
  });
});

describe('item 10: SIGTERM', () => {
  test('the edge exits at once although silent sockets, half headers and a NATS subscriber are connected', async () => {
    const e = await startEdge();
    const t0 = Date.now();
    const held = [
      ...Array.from({ length: 20 }, () => watched(net.connect(e.port, '127.0.0.1'), t0)),
      ...Array.from({ length: 20 }, () =>
        watched(
          tlsSocket(e.port, (s) => s.write('GET /health HTTP/1.1\r\nHo')),
          t0,
        ),
      ),
    ];
    const nc = await connect({
      servers: e.p.ready.services.edge!.natsUrl!.replace('localhost', '127.0.0.1'),
      reconnect: false,
    });
    nc.subscribe('>');
    await nc.flush();
    // The subscription settles before the stop.
    await sleep(300);
    let natsClosedAt = 0;
    void nc.closed().then(() => (natsClosedAt = Date.now()));
    const began = Date.now();
    const code = await e.p.stop();
    const exitedAt = Date.now();
    assert.equal(code, 0);
    assert.ok(exitedAt - began < 1500, `exited ${exitedAt - began} ms after SIGTERM`);
    assert.ok(
      natsClosedAt > 0 && exitedAt - natsClosedAt < 1000,
      `exited ${exitedAt - natsClosedAt} ms after the gateway closed`,
    );
    await Promise.all(held.map((s) => s.closedAt));
  });
});
