/**
 * Hardening against clients that ask for too much (issue 10, items 3, 4 and the GraphQL part of 8),
 * each against the real service as a separate process (`millwright uns`, `millwright edge`),
 * measured from outside: GraphQL alias bombs are refused fast and the UNS's resident memory stays
 * bounded; a NATS client publishing on many distinct subjects does not make the DataHub's counters
 * or metrics grow without bound; client mistakes at a GraphQL endpoint are 400s, not 500s.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { connect } from 'nats';
import { http, basic } from '../helpers/edge.js';
import { TOKEN_PATH } from '../helpers/uns.js';
import { cleanEnv, runCli, startCli, tempDirs, type CliProcess } from '../helpers/cli.js';

const dirs = tempDirs('mw-hardening-');
after(() => dirs.removeAll());

/** Resident memory of a process, bytes (Linux). */
function rss(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS for ${pid}`);
  return Number(m[1]) * 1024;
}

const MB = 1024 * 1024;

describe('UNS GraphQL: alias bombs and client mistakes', () => {
  let uns: CliProcess;
  let url: string;
  let token: string;
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
        '--graphql-max-aliases',
        '50',
      ],
      {},
    );
    url = uns.ready.services.uns!.url;
    const res = await http(`${url}${TOKEN_PATH}`, {
      form: {
        grant_type: 'password',
        client_id: 'ide-ui',
        username: 'admin',
        password: 'hardening-password',
      },
    });
    assert.equal(res.status, 200, res.text);
    token = res.body.access_token;
  });
  after(() => uns.stop());

  test('40 distinct 100,000-alias queries are refused fast and the resident memory stays bounded', async () => {
    const start = rss(uns.pid);
    const began = Date.now();
    for (let q = 0; q < 40; q++) {
      let query = '{';
      for (let i = 0; i < 100_000; i++) query += ` a${q}_${i}:__typename`;
      query += ' }';
      const res = await rawPost(url, token, JSON.stringify({ query }));
      assert.equal(res.status, 400, `query ${q}: ${res.text.slice(0, 300)}`);
      assert.match(res.body.errors[0].message, /query document of \d+ bytes exceeds the maximum of \d+/);
    }
    const grown = rss(uns.pid) - start;
    assert.ok(grown < 150 * MB, `resident memory grew by ${Math.round(grown / MB)} MB`);
    assert.ok(Date.now() - began < 20_000, `took ${Date.now() - began} ms`);
  });

  test('aliases and fields under the document size: limited, and __typename costs', async () => {
    let aliases = '{';
    for (let i = 0; i < 500; i++) aliases += ` a${i}:__typename`;
    const refused = await rawPost(url, token, JSON.stringify({ query: `${aliases} }` }));
    assert.equal(refused.status, 400, refused.text.slice(0, 300));
    assert.match(refused.body.errors[0].message, /query has 500 aliases, the maximum is 50/);
    const many = await rawPost(url, token, JSON.stringify({ query: `{${' __typename'.repeat(3000)} }` }));
    assert.equal(many.status, 400, many.text.slice(0, 300));
    assert.match(many.body.errors[0].message, /query has 3000 fields, the maximum is 500/);
    const fine = await rawPost(url, token, JSON.stringify({ query: '{ a: __typename b: __typename }' }));
    assert.equal(fine.status, 200, fine.text);
    assert.deepEqual(fine.body.data, { a: 'Query', b: 'Query' });
  });

  test('client mistakes are 400s with a clear message', async () => {
    const cases: [string, string, RegExp][] = [
      ['application/graphql', JSON.stringify({ query: '{ __typename }' }), /not a GraphQL document/],
      ['application/json', JSON.stringify({ query: 123 }), /query must be a string/],
      [
        'application/json',
        JSON.stringify({ query: '{ __typename }', variables: 'x' }),
        /variables must be an object/,
      ],
      [
        'application/json',
        JSON.stringify({ query: '{ __typename }', operationName: 7 }),
        /operationName must be a string/,
      ],
      ['application/json', '{"query":', /body|JSON/i],
      ['application/json', JSON.stringify([1, 2]), /./],
    ];
    for (const [type, body, message] of cases) {
      const res = await rawPost(url, token, body, type);
      assert.equal(res.status, 400, `${type} ${body}: ${res.status} ${res.text}`);
      assert.match(res.text, message, `${type} ${body}`);
    }
  });
});

async function rawPost(url: string, token: string, body: string, contentType = 'application/json') {
  const { request } = await import('undici');
  const { insecureAgent } = await import('../helpers/edge.js');
  const res = await request(`${url}/mqtt/gql`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': contentType },
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

describe('DataHub: counters of many distinct subjects', () => {
  let edge: CliProcess;
  let url: string;
  let natsUrl: string;
  let auth: string;
  before(async () => {
    const dir = dirs.make();
    edge = await startCli(
      ['edge', '--port', '0', '--datahub-port', '0', '--host', '127.0.0.1', '--data-dir', dir],
      { env: cleanEnv() },
    );
    url = edge.ready.services.edge!.url;
    natsUrl = edge.ready.services.edge!.natsUrl!.replace('localhost', '127.0.0.1');
    const created = await runCli(['edge', 'api-client', 'create', '--data-dir', dir, '--name', 'metrics']);
    assert.equal(created.code, 0, created.stderr);
    const client = JSON.parse(created.stdout);
    const tok = await http(`${url}/auth/v3/oauth/token`, {
      headers: { authorization: basic(client.client_id, client.client_secret) },
      form: { grant_type: 'client_credentials' },
    });
    assert.equal(tok.status, 200, tok.text);
    auth = `Bearer ${tok.body.access_token}`;
  });
  after(() => edge.stop());

  test('100,000 distinct prefixes: at most 1000 counted apart, the rest under _other; answers stay small and fast', async () => {
    const nc = await connect({ servers: natsUrl });
    const payload = new Uint8Array(8);
    for (let i = 0; i < 100_000; i++) {
      nc.publish(`p${i}.x.y`, payload);
      if (i % 5000 === 0) await nc.flush();
    }
    await nc.flush();
    await nc.close();

    let began = Date.now();
    const metrics = await http(`${url}/datahub/metrics`, { headers: { authorization: auth } });
    const metricsMs = Date.now() - began;
    assert.equal(metrics.status, 200);
    const rows = metrics.text
      .split('\n')
      .filter((l) => l.startsWith('millwright_datahub_messages_in_total{'));
    assert.ok(rows.length <= 1001, `${rows.length} prefix rows`);
    const other = rows.find((l) => l.includes('prefix="_other"'));
    assert.ok(other, 'an _other row');
    assert.ok(Number(other.split(' ')[1]) >= 99_000, other);
    assert.ok(metrics.text.length < 2 * MB, `${metrics.text.length} bytes`);
    assert.ok(metricsMs < 2000, `metrics took ${metricsMs} ms`);

    began = Date.now();
    const stats = await http(`${url}/datahub/v1/stats`, { headers: { authorization: auth } });
    assert.equal(stats.status, 200);
    assert.ok(stats.body.subjects.length <= 1001, `${stats.body.subjects.length} subjects`);
    assert.equal(stats.body.totals.msgsIn >= 100_000, true);
    assert.ok(Date.now() - began < 2000, `stats took ${Date.now() - began} ms`);
  });
});
