/**
 * Log forwarding of the edge's own log entries (`/dm/v2/log-forwarding/*`) to real receivers:
 * Debian's rsyslogd over TCP and over TLS (10,000 lines with an rsyslog killed with SIGKILL and
 * started again on the same port mid-stream: none lost, in order), an HTTP receiver of the test
 * (JSON lines, refusing with 503 for a while), and the disk queue's bound (what does not fit is
 * dropped and counted; what fits survives a restart of the edge).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bootstrapAdmin, startTestEdge, type TestEdge } from '../helpers/edge.js';
import { makePki, type TestPki } from '../helpers/integrations.js';
import { Rsyslog, rsyslogMissing } from '../helpers/peers/rsyslog.js';
import { eventually, freePort, sleep } from '../helpers/util.js';

type Json = Record<string, any>;
const COMPONENT = 'test.forward';
const LINES = 10_000;

/**
 * Logs lines `line NNNNN` for `from..to-1` through the edge's logger, as its modules log;
 * `paceMs` between blocks of 500 keeps the stream flowing for a while (a producer's pace).
 */
async function logLines(t: TestEdge, from: number, to: number, paceMs = 0): Promise<void> {
  const logger = t.edge.logger.child({ component: COMPONENT });
  for (let i = from; i < to; i++) {
    logger.warn(`line ${String(i).padStart(5, '0')}`);
    if (i % 500 === 499) {
      await t.edge.logStore.flush();
      if (paceMs) await sleep(paceMs);
    }
  }
  await t.edge.logStore.flush();
}

/** The line numbers in what a receiver got, in arrival order (copies included). */
const numbers = (texts: string[]) =>
  texts.map((l) => /line (\d{5})/.exec(l)).flatMap((m) => (m ? [Number(m[1])] : []));

/** All of 0..n-1 arrived, and their first arrivals are in order; answers the copies a reconnect resent. */
function assertAllInOrder(seen: number[], n: number): number {
  const first: number[] = [];
  const had = new Set<number>();
  for (const s of seen)
    if (!had.has(s)) {
      had.add(s);
      first.push(s);
    }
  assert.equal(
    had.size,
    n,
    `all ${n} lines arrived (missing e.g. ${[...Array(n).keys()].find((i) => !had.has(i))})`,
  );
  for (let i = 0; i < first.length; i++)
    if (first[i] !== i) assert.fail(`line ${first[i]} arrived before line ${i}`);
  return seen.length - n;
}

let t: TestEdge;
let h: Record<string, string>;
const put = (json: unknown) => t.call('/dm/v2/log-forwarding/config', { method: 'PUT', headers: h, json });
const status = async () => (await t.call('/dm/v2/log-forwarding/status', { headers: h })).body as Json;

before(async () => {
  t = await startTestEdge();
  h = { authorization: `Bearer ${await bootstrapAdmin(t)}` };
});
after(() => t?.stop());

test("configuration: defaults, the contract's 400 for an unknown field, named errors, start needs a target", async () => {
  const initial = await t.call('/dm/v2/log-forwarding/config', { headers: h });
  assert.equal(initial.status, 200);
  assert.deepEqual(initial.body, {
    enabled: false,
    target: null,
    filters: { level: 'info', components: [] },
  });
  assert.equal((await status()).state, 'unconfigured');
  const unknown = await put({ target: null, bogus: 1 });
  assert.equal(unknown.status, 400);
  assert.equal(unknown.body.message, 'failed to decode request body: json: unknown field "bogus"');
  const badPem = await put({
    target: { type: 'syslog', protocol: 'tls', host: '127.0.0.1', port: 6514, tls: { ca: 'not a pem' } },
  });
  assert.equal(badPem.status, 400);
  assert.match(badPem.body.message, /target\.tls\.ca: not a PEM certificate/);
  const ftp = await put({ target: { type: 'http', url: 'ftp://example.com/' } });
  assert.equal(ftp.status, 400);
  assert.match(ftp.body.message, /target\.url/);
  const noTarget = await put({ enabled: true });
  assert.equal(noTarget.status, 400);
  assert.match(noTarget.body.message, /without a target/);
  const start = await t.call('/dm/v2/log-forwarding/start', { method: 'POST', headers: h });
  assert.equal(start.status, 409);
  assert.match(start.body.message, /PUT \/dm\/v2\/log-forwarding\/config/);
});

/**
 * Forwards LINES lines to `rsyslog` while they are being logged; mid-stream rsyslog hangs
 * (SIGSTOP: what the forwarder writes now piles up in the socket buffers, unread), is killed
 * (SIGKILL: those bytes are lost with it) and started again on the same port.
 */
async function acrossRestart(rsyslog: Rsyslog, target: Json): Promise<void> {
  const port = await rsyslog.start();
  const set = await put({
    enabled: true,
    target: { ...target, port },
    filters: { level: 'info', components: [COMPONENT] },
  });
  assert.equal(set.status, 200, set.text);
  const logging = logLines(t, 0, LINES, 100);
  await eventually(() => numbers(rsyslog.lines()).length >= 2000, 30_000, 'lines reaching rsyslog');
  rsyslog.pause();
  await sleep(300); // the hang: the forwarder keeps writing into the socket buffers meanwhile
  await rsyslog.stop('SIGKILL');
  const down = await eventually(
    async () => {
      const s = await status();
      return s.state === 'retrying' && s.lastError ? s : null;
    },
    20_000,
    'the forwarder noticing the receiver is gone',
  );
  assert.ok(down.queued > 0, 'entries wait in the queue');
  await rsyslog.start();
  await logging;
  await eventually(
    () => new Set(numbers(rsyslog.lines())).size === LINES,
    90_000,
    () => `all lines (${new Set(numbers(rsyslog.lines())).size} so far)`,
  );
  const copies = assertAllInOrder(numbers(rsyslog.lines()), LINES);
  const lines = rsyslog.lines();
  assert.match(lines[0]!, /^test\.forward \[meta sequenceId="\d+"\] line 00000$/);
  const s = await eventually(
    async () => {
      const x = await status();
      return x.queued === 0 && x.sent >= LINES ? x : null;
    },
    20_000,
    'the queue emptied',
  );
  assert.equal(s.state, 'running');
  assert.equal(s.dropped, 0);
  process.stdout.write(
    `# ${target.protocol}: ${LINES} lines across an rsyslog SIGKILL, ${copies} copies resent\n`,
  );
  assert.equal(
    (await t.call('/dm/v2/log-forwarding/stop', { method: 'POST', headers: h })).body.state,
    'stopped',
  );
}

describe('syslog to a real rsyslog', () => {
  test(
    'over TCP (octet counting): 10,000 lines across an rsyslog kill and restart, none lost, in order',
    { skip: rsyslogMissing() },
    async () => {
      const rsyslog = new Rsyslog();
      try {
        await acrossRestart(rsyslog, { type: 'syslog', protocol: 'tcp', host: '127.0.0.1' });
      } finally {
        await rsyslog.dispose();
      }
    },
  );

  test('over TLS (RFC 5425, a test CA): the same', { skip: rsyslogMissing(true) }, async () => {
    const pki: TestPki = makePki();
    const rsyslog = new Rsyslog({
      tls: { ca: pki.files.ca, cert: pki.files.serverCert, key: pki.files.serverKey },
    });
    try {
      await acrossRestart(rsyslog, {
        type: 'syslog',
        protocol: 'tls',
        host: '127.0.0.1',
        tls: { ca: pki.ca, serverName: 'localhost' },
      });
      const cfg = await t.call('/dm/v2/log-forwarding/config', { headers: h });
      assert.equal(cfg.body.target.tls.ca, pki.ca);
    } finally {
      await rsyslog.dispose();
      pki.dispose();
    }
  });
});

/** An HTTP receiver of the test: JSON lines POSTed; answers 503 while `refusing`. */
function receiver() {
  const got: Json[] = [];
  const state = { refusing: 0, headers: [] as string[] };
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (state.refusing > 0) {
        state.refusing--;
        res.writeHead(503).end('busy');
        return;
      }
      state.headers.push(String(req.headers.authorization) + ' ' + String(req.headers['content-type']));
      for (const line of body.split('\n').filter(Boolean)) got.push(JSON.parse(line));
      res.writeHead(204).end();
    });
  });
  return { server, got, state };
}

test('HTTP: JSON lines to a receiver of the test, through its 503s, in order; the header secret masked', async () => {
  const r = receiver();
  r.state.refusing = 3;
  await new Promise<void>((ok) => r.server.listen(0, '127.0.0.1', ok));
  const port = (r.server.address() as AddressInfo).port;
  try {
    const set = await put({
      enabled: true,
      target: {
        type: 'http',
        url: `http://127.0.0.1:${port}/ingest`,
        headers: { authorization: 'Bearer s3cret' },
      },
      filters: { level: 'warn', components: ['test.*'] },
    });
    assert.equal(set.status, 200, set.text);
    assert.equal(set.body.target.headers.authorization, '********', 'secrets are masked on reads');
    await logLines(t, 0, 2000);
    t.edge.logger.child({ component: COMPONENT }).info('below the level filter');
    t.edge.logger.child({ component: 'other.component' }).warn('line 99999 of another component');
    await eventually(
      () => r.got.length >= 2000,
      60_000,
      () => `HTTP lines (${r.got.length})`,
    );
    assertAllInOrder(numbers(r.got.map((e) => e.message)), 2000);
    assert.deepEqual(Object.keys(r.got[0]!).sort(), [
      'component',
      'fields',
      'hostname',
      'level',
      'message',
      'sequenceId',
      'timestamp',
    ]);
    assert.equal(r.got[0]!.level, 'warn');
    assert.ok(!r.got.some((e) => e.component !== COMPONENT), 'only the filtered component');
    assert.equal(r.state.headers[0], 'Bearer s3cret application/x-ndjson');
    // The mask sent back keeps the secret.
    const again = await put({ ...set.body, enabled: false });
    assert.equal(again.status, 200);
    const stored = await t.call('/dm/v2/log-forwarding/config', { headers: h });
    assert.equal(stored.body.target.headers.authorization, '********');
    const s = await status();
    assert.equal(s.state, 'stopped');
    assert.ok(s.sent >= 2000);
  } finally {
    r.server.close();
  }
});

test('configuration templates: the section logForwarding, its header secret sealed or left out, applied back', async () => {
  const cfg = async () => (await t.call('/dm/v2/log-forwarding/config', { headers: h })).body as Json;
  const before = await cfg();
  assert.equal(before.target.type, 'http', 'left by the HTTP test');
  const saved = await t.call('/config/templates', { headers: h, json: { name: 'log-forwarding' } });
  assert.equal(saved.status, 201, saved.text);
  const plain = await t.call(`/config/templates/${saved.body.id}/download`, { headers: h });
  assert.equal(plain.body.sections.logForwarding.target.url, before.target.url);
  assert.deepEqual(plain.body.sections.logForwarding.target.headers, {}, 'no secret without a key');
  const sealed = await t.call(`/config/templates/${saved.body.id}/download`, {
    headers: h,
    json: { encryptionKey: 'a-long-encryption-key' },
  });
  assert.equal(sealed.status, 200);
  assert.ok(!sealed.text.includes('s3cret'), 'the header value is sealed');
  assert.ok(sealed.body.sections.logForwarding.target.headers.authorization.$encrypted);
  const moved = await put({ ...before, target: { ...before.target, url: 'http://127.0.0.1:9/elsewhere' } });
  assert.equal(moved.status, 200, moved.text);
  const applied = await t.call(`/config/templates/${saved.body.id}/apply`, {
    headers: h,
    json: { mode: 'use', encryptionKey: 'a-long-encryption-key' },
  });
  assert.equal(applied.status, 200, applied.text);
  const after = await cfg();
  assert.equal(after.target.url, before.target.url, 'the template put the url back');
  assert.equal(after.target.headers.authorization, '********', 'and the header secret with it');
});

test('the disk queue: past its bound entries are dropped and counted; what it holds survives a restart of the edge', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'mw-edge-lf-'));
  const port = await freePort(); // nothing listens there yet: the receiver is away
  let edge = await startTestEdge({ dataDir, logForwardingQueueMessages: 100 });
  try {
    const hh = { authorization: `Bearer ${await bootstrapAdmin(edge)}` };
    const set = await edge.call('/dm/v2/log-forwarding/config', {
      method: 'PUT',
      headers: hh,
      json: {
        enabled: true,
        target: { type: 'http', url: `http://127.0.0.1:${port}/` },
        filters: { components: [COMPONENT] },
      },
    });
    assert.equal(set.status, 200, set.text);
    await logLines(edge, 0, 150);
    const full = await eventually(
      async () => {
        const s = (await edge.call('/dm/v2/log-forwarding/status', { headers: hh })).body as Json;
        // The queue fills as the lines come; the first failed send may come a moment later.
        return s.queued === 100 && s.dropped === 50 && s.lastError ? s : null;
      },
      20_000,
      'a full queue and the failed send',
    );
    assert.match(full.lastError, /ECONNREFUSED|connect/i);
    await edge.stop();
    assert.ok(readFileSync(join(dataDir, 'log-forwarding', 'queue.db')).length > 0);
    const r = receiver();
    await new Promise<void>((ok) => r.server.listen(port, '127.0.0.1', ok));
    try {
      edge = await startTestEdge({ dataDir, logForwardingQueueMessages: 100 });
      await eventually(
        () => r.got.length >= 100,
        30_000,
        () => `queued lines after the restart (${r.got.length})`,
      );
      assertAllInOrder(numbers(r.got.map((e) => e.message)), 100);
    } finally {
      r.server.close();
    }
  } finally {
    await edge.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
